//! Subtasks, plans and hand-overs: nested cards, a plan's checklist, a draft that
//! waits, the router, and `/llm`.

use cairn_testkit::sse;
use serde_json::json;

use crate::model::Model;
use crate::{
    CHAT,
    answers::without_durations,
    follow, gated,
    harness::{App, Home, text_of},
    pixels,
};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn parallel_subtasks_nest_and_come_back_after_a_restart() {
    let model = Model::start().await;
    model.says_and_calls(
        "I will look in two parts.",
        &[
            (
                "s1",
                "run_subtask",
                json!({"title": "Survey the files", "instructions": "List the files."}),
            ),
            (
                "s2",
                "run_subtask",
                json!({"title": "Check the readme", "instructions": "List the files."}),
            ),
        ],
    );
    // Whichever subtask asks first gets the next reply: every order ends after four.
    for id in ["l1", "l2"] {
        model.says_and_calls("Looking around.", &[(id, "list_dir", json!({"path": "."}))]);
    }
    model.says(&["Found the files."]);
    model.says(&["Found the files."]);
    model.says(&["Both subtasks are done."]);
    let home = Home::new();
    let workspace = home.workspace();
    std::fs::write(workspace.join("README.md"), "# Project").unwrap();

    let app = model.launch(&home).await;
    app.choose_workspace(&workspace).await;
    app.send("Look at the project in two parts").await;
    app.wait_for_text(".message.assistant .md", "Both subtasks are done.")
        .await;
    app.wait_for_text(".card-label", "Survey the files").await;
    app.wait_for_text(".card-label", "Check the readme").await;
    assert_nested_cards_start_collapsed(&app).await;
    app.screenshot("nested-subtasks").await;
    let live = app.outline().await;
    assert_eq!(
        (
            live.first().map(String::as_str),
            live.last().map(String::as_str)
        ),
        (
            Some("0 text I will look in two parts."),
            Some("0 text Both subtasks are done.")
        ),
        "{live:#?}"
    );
    assert_eq!(
        live.iter()
            .filter(|line| *line == "1 text Looking around.")
            .count(),
        2,
        "each subtask's own text sits in its card: {live:#?}"
    );
    assert_eq!(
        times_each_subtask_says(&app, "Found the files.").await,
        json!([1, 1]),
        "a subtask's last words are its result: shown once"
    );
    app.click(".card .card .card-head").await;
    app.wait_for(".card .card .card-body").await;
    app.screenshot("nested-subtasks-expanded").await;
    app.quit().await;

    // The same database after a restart: the thread and its cards are back.
    let app = model.launch(&home).await;
    app.open_chat("Look at the project").await;
    app.wait_for_text(".message.assistant .md", "Both subtasks are done.")
        .await;
    app.wait_for_text(".card-label", "Survey the files").await;
    app.wait_for_text(".card-label", "Check the readme").await;
    assert_nested_cards_start_collapsed(&app).await;
    app.screenshot("after-restart").await;
    assert_eq!(
        app.outline().await,
        live,
        "the stored answer reads as it did live"
    );
    assert_eq!(
        times_each_subtask_says(&app, "Found the files.").await,
        json!([1, 1])
    );
    // A stored card opened by the reader is painted.
    app.click(".card .card .card-head").await;
    app.wait_for(".card .card .card-body").await;
    let read = pixels::readable_text(&app, ".card .card", "stored-card-opened").await;
    pixels::assert_reads(&read, &["list_dir", "README"], "an opened stored card");
    app.quit().await;

    // And another chat and back: the same.
    let app = model.launch(&home).await;
    app.click(".thread-open").await;
    app.wait_for_text(".message.assistant .md", "Both subtasks are done.")
        .await;
    app.click(".new-chat").await;
    app.wait_for(".welcome").await;
    app.click(".thread-open").await;
    app.wait_for_text(".message.assistant .md", "Both subtasks are done.")
        .await;
    assert_eq!(app.outline().await, live);
    app.quit().await;
}

/// How many times each top-level subtask card's open body shows `text`.
async fn times_each_subtask_says(app: &App, text: &str) -> serde_json::Value {
    app.driver
        .execute(
            "return [...document.querySelectorAll('.message.assistant .turn > .card > .card-body')] \
               .map(body => body.innerText.split(arguments[0]).length - 1);",
            vec![json!(text)],
        )
        .await
        .expect("the subtasks' text")
        .json()
        .clone()
}

/// The subtask cards are open; the calls inside them are closed.
async fn assert_nested_cards_start_collapsed(app: &App) {
    app.wait_for(".card .card").await;
    let nested = app.count(".card .card").await;
    assert!(nested >= 1, "calls inside subtasks show as nested cards");
    assert_eq!(
        app.count(".card .card .card-body").await,
        0,
        "nested cards start collapsed"
    );
    let heads = app
        .driver
        .find_all(thirtyfour::By::Css(".card .card .card-head"))
        .await
        .unwrap();
    for head in heads {
        assert_eq!(
            head.attr("aria-expanded").await.unwrap().as_deref(),
            Some("false")
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_router_hands_the_chat_to_another_agent_and_the_thread_shows_it() {
    let model = Model::start().await;
    model.says_and_calls(
        "This wants a review.",
        &[(
            "sw1",
            "switch_agent",
            json!({"agent": "reviewer", "reason": "a review", "follow_up": "Review the notes."}),
        )],
    );
    model.says(&["Reviewed: the notes are fine."]);
    let home = Home::new();
    std::fs::write(
        home.agents_dir().join("reviewer.md"),
        "---\ndescription: Reviews what you wrote\nbase: chat\n---\nReview carefully.\n",
    )
    .unwrap();
    let app = model.launch(&home).await;
    app.wait_for_text(".agent-chip", "chat").await;
    // The chip opens the agents: the visible ones, not the subtask-only explorer.
    app.click(".agent-chip").await;
    app.wait_for_text(".agent-choice", "reviewer").await;
    let offered = app
        .js("return [...document.querySelectorAll('.agent-choice .agent-id')].map(e => e.innerText);")
        .await;
    assert_eq!(offered, json!(["auto", "chat", "reviewer"]));
    // The one answering now is marked, for the eye and for a screen reader.
    let marked = app
        .js(
            "return [...document.querySelectorAll('.agent-choice')].map(e => \
             [e.querySelector('.agent-id').innerText, e.getAttribute('aria-checked'), \
              getComputedStyle(e.querySelector('.agent-id'), '::before').content, \
              getComputedStyle(e).backgroundColor]);",
        )
        .await;
    let marked: Vec<(String, String, String, String)> = serde_json::from_value(marked).unwrap();
    let current: Vec<&str> = marked
        .iter()
        .filter(|(_, checked, tick, _)| checked == "true" && tick.contains('✓'))
        .map(|(id, ..)| id.as_str())
        .collect();
    assert_eq!(current, ["chat"], "{marked:?}");
    let shades: std::collections::BTreeSet<&str> = marked
        .iter()
        .map(|(.., background)| background.as_str())
        .collect();
    assert_eq!(
        shades.len(),
        2,
        "the current one is shaded apart: {marked:?}"
    );
    app.screenshot("agent-menu").await;
    // Esc puts the menu away, as a click elsewhere does.
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_js("return document.querySelectorAll('.agent-menu').length === 0")
        .await;
    app.click(".agent-chip").await;
    app.click(".chat-title").await;
    app.wait_for_js("return document.querySelectorAll('.agent-menu').length === 0")
        .await;
    app.click(".agent-chip").await;
    app.wait_for_text(".agent-choice", "auto")
        .await
        .click()
        .await
        .unwrap();
    app.wait_for_text(".agent-chip", "auto").await;
    assert_eq!(
        app.count(".agent-menu").await,
        0,
        "choosing closes the menu"
    );
    app.click(".agent-chip").await;
    app.wait_for_text(".agent-choice.current[aria-checked='true']", "auto")
        .await;
    app.press(thirtyfour::Key::Escape).await;

    app.send("Look over my notes").await;
    app.wait_for_text(".message.assistant .md", "Reviewed: the notes are fine.")
        .await;
    app.wait_for_text(".handover-text", "auto → reviewer: a review")
        .await;
    app.wait_for_text(".message.synthetic", "Review the notes.")
        .await;
    app.wait_for_text(".agent-chip", "reviewer").await;
    let live = app.thread_lines().await;
    assert_eq!(
        live.iter()
            .map(|line| without_durations(line))
            .collect::<Vec<_>>(),
        [
            "user Look over my notes",
            "answer This wants a review. ▸ ✓ switch_agent to reviewer N ms",
            "divider auto → reviewer: a review",
            "cairn Cairn, for reviewer Review the notes.",
            "answer Reviewed: the notes are fine.",
        ]
        .map(String::from),
        "{live:#?}"
    );
    let divider = pixels::readable_text(&app, ".handover", "handover-divider").await;
    pixels::assert_reads(&divider, &["auto", "reviewer", "review"], "the divider");
    app.screenshot("agent-handover").await;
    let requests = model.requests_to(CHAT);
    assert!(
        requests[0].json()["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("- reviewer: Reviews what you wrote")
    );
    assert!(
        requests[1].json()["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Review carefully.")
    );
    app.quit().await;

    // After a restart the thread reads the same, and still answers as the reviewer.
    let app = model.launch(&home).await;
    app.open_chat("Look over my notes").await;
    app.wait_for_text(".message.assistant .md", "Reviewed: the notes are fine.")
        .await;
    assert_eq!(
        app.thread_lines().await,
        live,
        "the stored thread reads as it did live"
    );
    app.wait_for_text(".agent-chip", "reviewer").await;
    app.screenshot("agent-handover-restarted").await;
    // The same from the keyboard: /agents lists them, /agent ID changes the chat's.
    app.send("/agents").await;
    app.wait_for_text(".notice-line", "reviewer — Reviews what you wrote")
        .await;
    app.send("/agent chat").await;
    app.wait_for_text(".agent-chip", "chat").await;
    app.send("/agent explore").await;
    app.wait_for_text(".toast", "`explore` is an agent for subtasks only")
        .await;
    app.wait_for_text(".agent-chip", "chat").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_plan_runs_its_steps_and_its_checklist_ticks_them_off() {
    let model = Model::start().await;
    model.says_and_calls(
        "Two steps.",
        &[(
            "plan1",
            "create_plan",
            json!({"objective": "Tidy the notes", "steps": [
                {"id": "s1", "title": "Sort the notes", "instructions": "Sort them."},
                {"id": "s2", "title": "Write a summary", "instructions": "Summarise.",
                 "depends_on": ["s1"]}
            ]}),
        )],
    );
    model.says(&["Sorted 4 notes."]);
    // The second step holds until the test has seen the first ticked.
    model.push(
        CHAT,
        gated(
            sse::answer_parts(&[], &["Summary written."]),
            &[(Some("summary"), usize::MAX)],
        ),
    );
    model.says(&["The notes are tidy."]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Tidy my notes").await;
    app.wait_for_text(".card-label", "Tidy the notes").await;
    app.wait_for(".plan-step.done[data-step='s1']").await;
    app.wait_for(".plan-step.running[data-step='s2']").await;
    let checklist = app
        .js("return [...document.querySelectorAll('.plan-step')].map(e => e.className + ' ' + e.innerText.trim().replace(/\\s+/g, ' '));")
        .await;
    assert_eq!(
        checklist,
        json!([
            "plan-step done ✓ Sort the notes",
            "plan-step running ◌ Write a summary"
        ])
    );
    let read = pixels::readable_text(&app, ".plan-card", "plan-ticking").await;
    pixels::assert_reads(
        &read,
        &["Sort the notes", "Write a summary"],
        "the checklist",
    );
    model.open_gate("summary");
    app.wait_for_text(".message.assistant .md", "The notes are tidy.")
        .await;
    app.wait_for(".plan-step.done[data-step='s2']").await;
    app.screenshot("plan-done").await;
    // The summary step was told what the sorting found.
    let requests = model.requests_to(CHAT);
    let told = requests[2].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.contains("[s1] Sort the notes:\nSorted 4 notes."),
        "{told}"
    );
    let live = app.thread_lines().await;
    app.quit().await;

    // After a restart the checklist reads the same.
    let app = model.launch(&home).await;
    app.open_chat("Tidy my notes").await;
    app.wait_for(".plan-step.done[data-step='s2']").await;
    assert_eq!(app.count(".plan-step.done").await, 2);
    assert_eq!(app.thread_lines().await, live);
    app.screenshot("plan-restarted").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_draft_plan_waits_for_run_it_then_runs_as_it_was_kept() {
    let model = Model::start().await;
    model.calls(
        "plan1",
        "create_plan",
        json!({"objective": "Tidy the notes", "execution_mode": "draft_only", "steps": [
            {"id": "s1", "title": "Sort the notes", "instructions": "Sort them."}
        ]}),
    );
    model.says(&["Here is the plan. Run it?"]);
    model.calls(
        "plan2",
        "create_plan",
        json!({"plan_id": "p1", "execution_mode": "auto_execute"}),
    );
    model.says(&["Sorted."]);
    model.says(&["The notes are sorted."]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Plan a tidy-up").await;
    app.wait_for_text(".notice.plan.draft", "Plan p1 is a draft")
        .await;
    assert_eq!(
        app.count(".plan-step.waiting").await,
        1,
        "nothing ran: the step waits"
    );
    app.screenshot("plan-draft").await;
    app.click(".run-draft").await;
    app.wait_for_text(".message.assistant .md", "The notes are sorted.")
        .await;
    // The view followed the run to its end, past the plan's card.
    follow::wait_until_in_sight(&app, ".message.assistant .md").await;
    app.wait_for(".plan-step.done[data-step='s1']").await;
    // The message that ran it named the draft, so the model ran it as it was kept.
    let asked = model.requests_to(CHAT)[2].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(asked.starts_with("Run plan p1 as it is"), "{asked}");
    // The window shows what the user did, as it will after a reload; the model's
    // instruction stays the model's.
    let bubbles = "return [...document.querySelectorAll('.message.user .bubble')].map(e => e.textContent.trim())";
    app.wait_for_js(&format!("{bubbles}.includes('Run plan p1');"))
        .await;
    let shown = app.js(bubbles).await;
    assert!(!shown.to_string().contains("as it is"), "{shown}");
    // The draft's card shows its checklist, not what the model was told to do.
    let cards = app
        .js("return [...document.querySelectorAll('.card')].map(e => e.textContent).join(' ')")
        .await;
    assert!(!cards.to_string().contains("show it to them"), "{cards}");
    assert_eq!(app.count(".notice.plan.draft").await, 0, "the draft ran");
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("Plan a tidy-up").await;
    app.wait_for_text(".message.assistant .md", "The notes are sorted.")
        .await;
    assert_eq!(
        app.js(bubbles).await,
        shown,
        "a reload shows the same question"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn llm_shows_and_sets_the_model_parameters_a_chat_sends() {
    let model = Model::start().await;
    for _ in 0..2 {
        model.says(&["ok"]);
    }
    let home = Home::new();
    let app = model.launch(&home).await;
    // In a new chat, /llm sets the defaults.
    app.send("/llm temperature 0.3").await;
    app.wait_for_text(".notice-line", "temperature: 0.3 (default)")
        .await;
    // What is in force where nothing is set here: Settings' value, else the server's.
    let said = text_of(
        &app.wait_for_text(".notice-line", "top_p: the server's default")
            .await,
    )
    .await;
    assert!(!said.contains("from Settings"), "{said}");
    assert!(said.contains("model: test-model (Settings)"), "{said}");
    app.send("Hello").await;
    app.wait_for_text(".message.assistant .md", "ok").await;
    app.send("/llm temperature 0.1").await;
    app.wait_for_text(".notice-line", "Model parameters (this chat)")
        .await;
    app.wait_for_text(".notice-line", "temperature: 0.1 (this chat)")
        .await;
    app.send("/llm top_p 7").await;
    app.wait_for_text(".toast", "top_p takes a number from 0 to 1, not `7`")
        .await;
    app.send("Again").await;
    app.wait_for_js("return [...document.querySelectorAll('.message.assistant .md')].length === 2")
        .await;
    let sent: Vec<f64> = model
        .requests_to(CHAT)
        .iter()
        .map(|r| r.json()["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(sent, [0.3, 0.1]);
    app.screenshot("llm").await;
    app.quit().await;
}
