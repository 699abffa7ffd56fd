//! End to end: the real app binary under WebDriver, its engine pointed at a fake
//! OpenAI-compatible server. Run by `scripts/test` (under Xvfb and a session bus);
//! plain `cargo test` skips them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a11y;
mod accessibility;
mod changes;
#[path = "../support/fake_notifications.rs"]
mod fake_notifications;
#[path = "../support/fake_portal.rs"]
mod fake_portal;
mod follow;
mod harness;
mod pixels;
#[path = "../support/private_bus.rs"]
mod private_bus;
mod servers;
mod session;

use std::time::Duration;

use cairn_testkit::{FakeServer, Piece, Reply, sse};
use harness::{App, Home, text_of};
use serde_json::json;
use session::NotificationWatch;

const CHAT: &str = "POST /v1/chat/completions";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_message_gets_its_streamed_answer() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::text(&[
            "Hello",
            " from",
            " **Cairn**",
            ".\n\n- one\n- two",
        ]))
        .paced(80, Duration::from_millis(40)),
    );
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Say hello").await;
    app.wait_for_text(".message.assistant .md", "Hello from Cairn.")
        .await;
    // Counted once the turn is over, not as soon as the list's last item streamed in:
    // the answer is drawn anew when it is finished, and a count taken between the last
    // word and that drawing saw no list at all (CI, once).
    app.wait_for_text(".message.assistant li:last-child", "two")
        .await;
    // Bold and the list's two items, in one look at the finished answer (a timeout
    // fails the test, with a screenshot).
    app.wait_for_js(
        "return !document.querySelector('.stop') \
           && document.querySelectorAll('.message.assistant .md strong').length === 1 \
           && document.querySelectorAll('.message.assistant li').length === 2;",
    )
    .await;
    app.wait_for_text(".message.user", "Say hello").await;
    app.wait_for_text(".thread-title", "Say hello").await;
    let request = first_chat_request(&server);
    assert_eq!(request["model"], "test-model");
    assert_eq!(
        cairn_testkit::wire::users_words(request["messages"].as_array().unwrap().last().unwrap()),
        "Say hello"
    );
    app.screenshot("streamed-answer").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_web_process_starts_with_cairns_webkit_settings() {
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.wait_for(".composer-input").await;
    let vars = app.web_process_environ();
    for switch in ["JSC_useDFGJIT=0", "JSC_useOMGJIT=0"] {
        assert!(
            vars.iter().any(|var| var == switch),
            "the web process starts with {switch} (src-tauri/jit.rs)"
        );
    }
    // Without a GPU the page is painted by Skia's CPU rasterizer, with no compositing
    // (src-tauri/rendering.rs); with one, WebKit chooses.
    let has_gpu = cairn_desktop::machine_has_gpu();
    for (name, value) in cairn_desktop::WEBKIT_SWITCHES_WITHOUT_GPU {
        // Set for this run by whoever runs the tests, the app keeps their value.
        if std::env::var_os(name).is_some() {
            continue;
        }
        let switch = format!("{name}={value}");
        assert_eq!(
            vars.contains(&switch),
            !has_gpu,
            "{switch} in the web process of a machine {} a GPU",
            if has_gpu { "with" } else { "without" }
        );
    }
    app.quit().await;
}

/// Every test ends by checking that the page's main thread compiled no shader (a blur
/// there can abort the page: src-tauri/rendering.rs). That check can fail: a shadow
/// with a small blur, the kind Skia draws with a shader it compiles, is seen.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_blurred_shadow_on_the_page_is_caught_by_the_shader_check() {
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.wait_for(".composer-input").await;
    // Whether the page is composited is the web process's to say (with a GPU, or a
    // user's own setting, it is).
    let composited = !app
        .web_process_environ()
        .iter()
        .any(|var| var == "WEBKIT_DISABLE_COMPOSITING_MODE=1");
    if composited {
        eprintln!("skipped: with compositing the page's layers are painted off its main thread");
        app.quit().await;
        return;
    }
    assert_eq!(
        app.take_shader_log(),
        "",
        "the page as it ships draws nothing blurred"
    );
    app.js(
        "document.querySelector('.composer-input').style.boxShadow = '0 1px 2px rgb(0 0 0 / 30%)';",
    )
    .await;
    let start = std::time::Instant::now();
    let mut compiled = String::new();
    while compiled.is_empty() && start.elapsed() < harness::PATIENCE {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        compiled = app.take_shader_log();
    }
    assert!(
        !compiled.is_empty(),
        "a blurred shadow made Skia compile a shader on the page's main thread"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn parallel_subtasks_nest_and_come_back_after_a_restart() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::say_and_call(
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
        )),
    );
    // Whichever subtask asks first gets the next reply: every order ends after four.
    for id in ["l1", "l2"] {
        server.push(
            CHAT,
            Reply::sse(sse::say_and_call(
                "Looking around.",
                &[(id, "list_dir", json!({"path": "."}))],
            )),
        );
    }
    server.push(CHAT, Reply::sse(sse::text(&["Found the files."])));
    server.push(CHAT, Reply::sse(sse::text(&["Found the files."])));
    server.push(CHAT, Reply::sse(sse::text(&["Both subtasks are done."])));
    let home = Home::new();
    let workspace = home.workspace();
    std::fs::write(workspace.join("README.md"), "# Project").unwrap();

    let app = App::launch(&home, &server.url()).await;
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
    let app = App::launch(&home, &server.url()).await;
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
    let app = App::launch(&home, &server.url()).await;
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

fn write_turn(server: &FakeServer, closing: &str) {
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "kept"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&[closing])));
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn in_default_mode_a_write_waits_for_allow_or_deny() {
    let server = FakeServer::start().await;
    write_turn(&server, "Wrote the notes.");
    write_turn(&server, "Understood, nothing written.");
    write_turn(&server, "Nothing changed.");
    let home = Home::new();
    let workspace = home.workspace();
    let notes = workspace.join("notes.md");
    let app = App::launch(&home, &server.url()).await;

    app.choose_workspace(&workspace).await;
    app.send("Write the notes").await;
    let approval = app.wait_for_text(".approval", "write_file").await;
    let text = text_of(&approval).await;
    assert!(
        text.contains("New file notes.md") && text.contains("kept"),
        "the file it would make: {text}"
    );
    assert!(text.contains("write"), "the category: {text}");
    assert!(text.contains("Allow for this chat"), "{text}");
    assert!(!notes.exists(), "nothing runs before the answer");
    app.screenshot("approval-card").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Wrote the notes.")
        .await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "kept");
    assert_eq!(app.count(".approval").await, 0);
    std::fs::remove_file(&notes).unwrap();

    app.click(".new-chat").await;
    app.choose_workspace(&workspace).await;
    app.send("Write the notes again").await;
    app.wait_for_text(".approval", "write_file").await;
    app.click(".approval-buttons .danger").await;
    app.wait_for_text(".message.assistant .md", "Understood, nothing written.")
        .await;
    app.wait_for_text(".card.denied .card-denied", "Denied by you")
        .await;
    assert!(!notes.exists(), "a denied write writes nothing");
    app.screenshot("approval-denied").await;

    // Writing what the file already holds: the approval says there is no change,
    // not "Changes to" over an empty box.
    std::fs::write(&notes, "kept").unwrap();
    app.click(".new-chat").await;
    app.choose_workspace(&workspace).await;
    app.send("Write the notes once more").await;
    let approval = app.wait_for_text(".approval", "write_file").await;
    app.wait_for_text(".approval .no-change", "No change to notes.md")
        .await;
    assert_eq!(app.count(".approval .approval-diff").await, 0);
    let read = pixels::readable_text(&app, ".approval .no-change", "approval-no-change").await;
    pixels::assert_reads(&read, &["No change", "already holds"], "an unchanged write");
    assert!(!text_of(&approval).await.contains("Changes to"));
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Nothing changed.")
        .await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "kept");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_approval_shows_the_change_and_a_denied_card_says_so_in_plain_words() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "alpha\nBETA\ngamma\n"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Left the notes alone."])));
    let home = Home::new();
    let workspace = home.workspace();
    std::fs::write(workspace.join("notes.md"), "alpha\nbeta\ngamma\n").unwrap();
    let app = App::launch(&home, &server.url()).await;
    app.choose_workspace(&workspace).await;
    app.send("Shout beta").await;
    let approval = app.wait_for(".approval .approval-diff").await;
    let diff = text_of(&approval).await;
    assert!(diff.contains("-beta") && diff.contains("+BETA"), "{diff}");
    // The arguments once: the change is shown, the raw arguments stay folded.
    assert_eq!(app.count(".card-body > .card-args").await, 0);
    assert_eq!(app.count(".approval .card-args[open]").await, 0);
    let read = pixels::readable_text(&app, ".approval-diff", "approval-diff").await;
    pixels::assert_reads(&read, &["beta", "BETA", "gamma"], "the diff");
    // The added and removed lines are drawn in their colours, not only written.
    let colours = app
        .js(
            "return ['.diff-line.added', '.diff-line.removed'].map(s => \
             getComputedStyle(document.querySelector(s)).backgroundColor);",
        )
        .await;
    assert_eq!(colours, json!(["rgb(227, 243, 228)", "rgb(251, 228, 226)"]));
    // At least a second on the question, so the wait reads in seconds.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    app.click(".approval-buttons .danger").await;
    app.wait_for_text(".message.assistant .md", "Left the notes alone.")
        .await;
    let card = ".card.denied[data-card='w1']";
    app.wait_for_text(&format!("{card} .card-head"), "write_file")
        .await;
    app.wait_for_text(&format!("{card} .card-subject"), "notes.md")
        .await;
    // Seconds on the question, apart from the call's own milliseconds.
    let waited = text_of(&app.wait_for(&format!("{card} .card-waited")).await).await;
    let own = text_of(&app.wait_for(&format!("{card} .card-time")).await).await;
    assert!(
        waited.starts_with("waited ") && waited.ends_with(" s") && own.ends_with(" ms"),
        "{waited:?} then {own:?}"
    );
    app.wait_for_text(&format!("{card} .card-denied"), "Denied by you")
        .await;
    assert_eq!(
        app.count(&format!("{card} .card-result")).await,
        0,
        "what the model was told stays the model's"
    );
    let read = pixels::readable_text(&app, card, "denied-card").await;
    pixels::assert_reads(
        &read,
        &["write_file", "notes.md", "waited", "Denied by you"],
        "the card",
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.md")).unwrap(),
        "alpha\nbeta\ngamma\n"
    );
    let live = app.outline().await;
    app.quit().await;

    let app = App::launch(&home, &server.url()).await;
    app.open_chat("Shout beta").await;
    app.wait_for_text(&format!("{card} .card-waited"), &waited)
        .await;
    app.wait_for_text(&format!("{card} .card-time"), &own).await;
    app.wait_for_text(&format!("{card} .card-denied"), "Denied by you")
        .await;
    // What the tool said it acts on was kept with the answer, not guessed again.
    app.wait_for_text(&format!("{card} .card-subject"), "notes.md")
        .await;
    assert_eq!(app.outline().await, live);
    app.screenshot("denied-card-restarted").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_call_shows_while_the_model_writes_it_then_runs_in_the_same_card() {
    let server = FakeServer::start().await;
    let parts = sse::call_parts(
        "w1",
        "write_file",
        &[
            "{\"path\": \"notes.md\", \"content\": \"Line one\\nLine two\\n",
            "Line three\\n",
            "Line four\\n\"}",
        ],
    );
    // The opening and the first piece, then the rest once the test has looked.
    let mut reply = Reply::new(200, "text/event-stream");
    for (n, part) in parts.into_iter().enumerate() {
        if n == 2 {
            reply = reply.then(Piece::Gate("rest".into()));
        }
        reply = reply.then(Piece::Bytes(part));
    }
    server.push(CHAT, reply);
    server.push(CHAT, Reply::sse(sse::text(&["Wrote the notes."])));
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch(&home, &server.url()).await;
    app.choose_mode("auto").await;
    app.choose_workspace(&workspace).await;
    app.send("Write four lines").await;

    let card = ".card[data-card='w1']";
    app.wait_for_text(&format!("{card} .card-pending"), "Line two")
        .await;
    app.wait_for_text(&format!("{card} .card-subject"), "notes.md")
        .await;
    let read = pixels::readable_text(&app, card, "call-being-written").await;
    pixels::assert_reads(
        &read,
        &["write_file", "notes.md", "Line one", "Line two"],
        "the call being written",
    );
    assert!(
        !workspace.join("notes.md").exists(),
        "not run while written"
    );

    server.open_gate("rest");
    app.wait_for_text(".message.assistant .md", "Wrote the notes.")
        .await;
    assert_eq!(app.count(".card").await, 1, "the same card became the call");
    assert_eq!(app.count(".card-pending").await, 0);
    app.wait_for(&format!("{card}.done")).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.md")).unwrap(),
        "Line one\nLine two\nLine three\nLine four\n"
    );
    app.screenshot("call-written").await;
    app.quit().await;
}

/// How a test answers an approval: the way a user would.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// A click on Allow.
    ClickAllow,
    /// The `A` key: allow for this chat.
    KeyAllowForChat,
    /// A click on Deny.
    ClickDeny,
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_answered_approval_leaves_its_card_painted_and_readable() {
    let server = FakeServer::start().await;
    let answers = [
        Answer::ClickAllow,
        Answer::KeyAllowForChat,
        Answer::ClickDeny,
    ];
    let mut turns = Vec::new();
    for depth in [0, 1] {
        for answer in answers {
            let n = turns.len();
            let write = (
                format!("w{n}"),
                "write_file",
                json!({"path": format!("notes-{n}.md"), "content": "kept"}),
            );
            if depth == 1 {
                server.push(
                    CHAT,
                    Reply::sse(sse::tool_calls(&[(
                        &format!("s{n}"),
                        "run_subtask",
                        json!({"title": format!("Write part {n}"), "instructions": "Write it."}),
                    )])),
                );
            }
            server.push(
                CHAT,
                Reply::sse(sse::tool_calls(&[(&write.0, write.1, write.2.clone())])),
            );
            if depth == 1 {
                server.push(
                    CHAT,
                    Reply::sse(sse::text(&[&format!("Part {n} handled.")])),
                );
            }
            server.push(CHAT, Reply::sse(sse::text(&[&format!("Turn {n} over.")])));
            turns.push((n, depth, answer));
        }
    }
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch(&home, &server.url()).await;
    for (n, depth, answer) in turns {
        app.click(".new-chat").await;
        app.choose_workspace(&workspace).await;
        app.send(&format!("Write notes {n}")).await;
        app.wait_for_text(".approval", &format!("notes-{n}.md"))
            .await;
        match answer {
            Answer::ClickAllow => app.click(".approval-buttons .primary").await,
            Answer::KeyAllowForChat => {
                // The question has the keyboard's focus (the composer is empty).
                app.wait_for_js(
                    "return document.activeElement.matches('.approval-buttons .primary');",
                )
                .await;
                app.wait_for(".approval-buttons .primary")
                    .await
                    .send_keys("a")
                    .await
                    .expect("the A key");
            }
            Answer::ClickDeny => app.click(".approval-buttons .danger").await,
        }
        app.wait_for_text(".message.assistant .md", &format!("Turn {n} over."))
            .await;
        assert_eq!(app.count(".approval").await, 0, "the question went away");
        let name = format!("answered-{answer:?}-depth-{depth}").to_lowercase();
        app.screenshot(&name).await;
        let card = format!(".card[data-card='w{n}']");
        let read = pixels::readable_text(&app, &card, &format!("{name}-card")).await;
        pixels::assert_reads(&read, &["write_file", &format!("notes-{n}")], &name);
        if matches!(answer, Answer::ClickDeny) {
            pixels::assert_reads(&read, &["denied"], &name);
        }
        if depth == 1 {
            let subtask = format!(".card[data-card='s{n}'] > .card-head");
            let read = pixels::readable_text(&app, &subtask, &format!("{name}-subtask")).await;
            pixels::assert_reads(&read, &[&format!("Write part {n}")], &name);
        }
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_router_hands_the_chat_to_another_agent_and_the_thread_shows_it() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::say_and_call(
            "This wants a review.",
            &[(
                "sw1",
                "switch_agent",
                json!({"agent": "reviewer", "reason": "a review", "follow_up": "Review the notes."}),
            )],
        )),
    );
    server.push(
        CHAT,
        Reply::sse(sse::text(&["Reviewed: the notes are fine."])),
    );
    let home = Home::new();
    std::fs::write(
        home.agents_dir().join("reviewer.md"),
        "---\ndescription: Reviews what you wrote\nbase: chat\n---\nReview carefully.\n",
    )
    .unwrap();
    let app = App::launch(&home, &server.url()).await;
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
    let requests = server.requests_to(CHAT);
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
    let app = App::launch(&home, &server.url()).await;
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
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::say_and_call(
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
        )),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Sorted 4 notes."])));
    // The second step holds until the test has seen the first ticked.
    server.push(
        CHAT,
        gated(
            sse::answer_parts(&[], &["Summary written."]),
            &[(Some("summary"), usize::MAX)],
        ),
    );
    server.push(CHAT, Reply::sse(sse::text(&["The notes are tidy."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
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
    server.open_gate("summary");
    app.wait_for_text(".message.assistant .md", "The notes are tidy.")
        .await;
    app.wait_for(".plan-step.done[data-step='s2']").await;
    app.screenshot("plan-done").await;
    // The summary step was told what the sorting found.
    let requests = server.requests_to(CHAT);
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
    let app = App::launch(&home, &server.url()).await;
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
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "plan1",
            "create_plan",
            json!({"objective": "Tidy the notes", "execution_mode": "draft_only", "steps": [
                {"id": "s1", "title": "Sort the notes", "instructions": "Sort them."}
            ]}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Here is the plan. Run it?"])));
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "plan2",
            "create_plan",
            json!({"plan_id": "p1", "execution_mode": "auto_execute"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Sorted."])));
    server.push(CHAT, Reply::sse(sse::text(&["The notes are sorted."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
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
    let asked = server.requests_to(CHAT)[2].json()["messages"]
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

    let app = App::launch(&home, &server.url()).await;
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
    let server = FakeServer::start().await;
    for _ in 0..2 {
        server.push(CHAT, Reply::sse(sse::text(&["ok"])));
    }
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
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
    let sent: Vec<f64> = server
        .requests_to(CHAT)
        .iter()
        .map(|r| r.json()["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(sent, [0.3, 0.1]);
    app.screenshot("llm").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_answer_tells_what_it_took_on_hover_and_the_chat_menu_its_totals() {
    let server = FakeServer::start().await;
    // 10 prompt tokens and 2 completion tokens (one per piece), as every fake stream.
    server.push(CHAT, Reply::sse(sse::text(&["Hello", " there."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;

    // A price, set in Settings, for the model the chat uses.
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for(".prices-section .price-model")
        .await
        .send_keys("test-model")
        .await
        .unwrap();
    app.wait_for(".price-prompt")
        .await
        .send_keys("1000")
        .await
        .unwrap();
    app.wait_for(".price-completion")
        .await
        .send_keys("abc")
        .await
        .unwrap();
    app.click(".add-price").await;
    app.wait_for_text(".toast", "The completion price must be a number")
        .await;
    assert_eq!(app.count(".price").await, 0, "a bad price is not kept");
    // The toast sits over the bottom of the page, where the field may have scrolled.
    app.click(".toast [aria-label='Dismiss']").await;
    app.wait_for_js("return !document.querySelector('.toast')")
        .await;
    let completion = app.wait_for(".price-completion").await;
    completion.scroll_into_view().await.unwrap();
    completion.clear().await.unwrap();
    completion.send_keys("2000").await.unwrap();
    app.click(".add-price").await;
    app.wait_for_text(
        ".price[data-model='test-model']",
        "1000 in, 2000 out per million tokens",
    )
    .await;
    app.screenshot("usage-prices").await;
    app.click(".back-to-chat").await;

    app.send("Say hello").await;
    app.wait_for_text(".message.assistant .md", "Hello there.")
        .await;
    // (10 × 1000 + 2 × 2000) per million.
    let expected = ["12 tokens (10 in, 2 out)", "1 model call", "cost 0.0140"];
    let line = app.wait_for(".message.assistant .answer-usage").await;
    let visibility = "return getComputedStyle(document.querySelector('.answer-usage')).visibility";
    app.hover(".chat-title").await;
    assert_eq!(
        app.js(visibility).await,
        "hidden",
        "out of the way until looked for"
    );
    app.hover(".message.assistant .md").await;
    assert_eq!(app.js(visibility).await, "visible");
    // On the row of the answer's actions, not a line of its own that stays blank
    // under every answer while hidden.
    let same_row = app
        .js(
            "const box = css => document.querySelector(css).getBoundingClientRect(); \
             const line = box('.message.assistant .answer-usage'); \
             const copy = box('.message.assistant .copy-answer'); \
             return Math.abs(line.top + line.bottom - copy.top - copy.bottom) / 2 < copy.height / 2;",
        )
        .await;
    assert_eq!(same_row, json!(true), "the usage line shares the Copy row");
    for part in expected {
        app.wait_for_text(".message.assistant .answer-usage", part)
            .await;
    }
    let read =
        pixels::readable_text(&app, ".message.assistant .answer-usage", "usage-answer").await;
    pixels::assert_reads(&read, &expected, "the answer's usage");
    let live = text_of(&line).await;

    app.click(".head-menu button").await;
    let totals = app.wait_for_text(".usage-totals", "1 model call").await;
    let totals = text_of(&totals).await;
    for part in ["12 tokens (10 in, 2 out)", "0 tool calls", "cost 0.0140"] {
        assert!(totals.contains(part), "{part:?} in {totals:?}");
    }
    let read = pixels::readable_text(&app, ".usage-totals", "usage-totals").await;
    pixels::assert_reads(
        &read,
        &["This chat", "1 model call", "cost 0.0140"],
        "the chat's totals",
    );
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_js("return !document.querySelector('.head-menu .menu')")
        .await;
    app.quit().await;

    // After a restart the answer tells the same.
    let app = App::launch(&home, &server.url()).await;
    app.open_chat("Say hello").await;
    app.wait_for(".message.assistant .answer-usage").await;
    app.hover(".message.assistant .md").await;
    app.wait_for_text(".message.assistant .answer-usage", &live)
        .await;
    app.screenshot("usage-restarted").await;
    app.quit().await;
}

/// `line` with each "12 ms" read as "N ms": how long a call took is not the test's.
fn without_durations(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            let is_count = !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit());
            if is_count && words.get(i + 1) == Some(&"ms") {
                "N"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn in_plan_mode_a_write_is_blocked() {
    let server = FakeServer::start().await;
    write_turn(&server, "Plan: 1. write notes.md with the summary.");
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch(&home, &server.url()).await;
    app.choose_mode("plan").await;
    app.choose_workspace(&workspace).await;
    app.send("Plan the notes").await;
    app.wait_for_text(".message.assistant .md", "Plan: 1. write notes.md")
        .await;
    let card = app.wait_for(".card.failed").await;
    card.click().await.ok();
    assert_eq!(
        app.count(".approval").await,
        0,
        "plan mode never asks: it blocks"
    );
    assert!(!workspace.join("notes.md").exists());
    app.wait_for_text(".notice.plan", "The plan is ready").await;
    let request = first_chat_request(&server);
    assert!(
        cairn_testkit::wire::context_block(&request).contains("Permission mode: plan"),
        "{request}"
    );
    app.screenshot("plan-mode-blocked").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn stop_mid_stream_keeps_the_partial_text() {
    let server = FakeServer::start().await;
    // The answer holds after two words for as long as the test needs: it is stopped
    // there, never let go.
    server.push(CHAT, held_answer(&numbered("word", 30), 2, "never"));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Write a long text").await;
    app.wait_for_text(".message.assistant .md", "word2").await;
    app.wait_for(".stop").await;
    // Esc in the composer is the Stop button's shortcut.
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_text(".notice.muted", "Stopped.").await;
    let shown = text_of(&app.wait_for(".message.assistant .md").await).await;
    assert_eq!(shown.trim(), "word1 word2", "the stream was stopped");
    app.screenshot("stopped").await;

    // What was kept is what the store has: open the thread afresh.
    app.click(".new-chat").await;
    app.open_chat("Write a long text").await;
    let stored = text_of(&app.wait_for_text(".message.assistant .md", "word1").await).await;
    assert_eq!(stored.trim(), shown.trim());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_reply_finished_out_of_sight_notifies_and_the_click_opens_its_chat() {
    let server = FakeServer::start().await;
    // The reply waits until the user has turned away, however long that takes.
    server.push(
        CHAT,
        Reply::new(200, "text/event-stream")
            .then(Piece::Gate("away".into()))
            .then(Piece::Bytes(sse::text(&["Done while you were away."]))),
    );
    let home = Home::new();
    let watch = NotificationWatch::start();
    let app = App::launch(&home, &server.url()).await;
    app.send("Work in the background").await;
    app.wait_for_text(".thread-title", "Work in the background")
        .await;
    // The user turns to something else: a new chat in front, the window out of focus.
    app.click(".new-chat").await;
    app.unfocus_window().await;
    server.open_gate("away");

    let bus = watch.wait_for("Work in the background").await;
    assert!(bus.contains("The reply is ready."), "{bus}");
    session::click_newest_notification();
    app.wait_for_text(".chat-title", "Work in the background")
        .await;
    app.wait_for_text(".message.assistant .md", "Done while you were away.")
        .await;
    app.screenshot("opened-from-notification").await;
    app.quit().await;
}

/// A tool call the model makes once the test opens `gate`.
fn gated_call(gate: &str, id: &str, name: &str, args: serde_json::Value) -> Reply {
    gated(
        vec![sse::tool_calls(&[(id, name, args)])],
        &[(Some(gate), 1)],
    )
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_approval_is_answered_from_its_notification_and_the_window_follows() {
    // The desktop's notification service is a fake on a bus of the test's own, so
    // the test can press Allow and Deny as the user would.
    let bus = private_bus::Bus::start();
    let notifications = fake_notifications::FakeNotifications::start(&bus.address, true);
    let server = FakeServer::start().await;
    // The command runs until the test creates `go`: while it runs, the card must
    // already read as answered.
    let slow = json!({"command": "until [ -e go ]; do sleep 0.1; done; echo checked"});
    server.push(CHAT, gated_call("allow", "c1", "run_command", slow));
    server.push(CHAT, Reply::sse(sse::text(&["Checked."])));
    let write = json!({"path": "notes.md", "content": "kept"});
    server.push(CHAT, gated_call("deny", "w1", "write_file", write.clone()));
    server.push(CHAT, Reply::sse(sse::text(&["Nothing written."])));
    server.push(CHAT, gated_call("window", "w2", "write_file", write));
    server.push(CHAT, Reply::sse(sse::text(&["Wrote it."])));
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch_with(
        &home,
        &server.url(),
        &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())],
    )
    .await;
    app.choose_workspace(&workspace).await;

    // Allow, pressed on the notification.
    app.send("Run the slow check").await;
    app.wait_for_text(".thread-title", "Run the slow check")
        .await;
    app.unfocus_window().await;
    server.open_gate("allow");
    let asked = notifications.wait_for(0, "needs your approval").await;
    assert_eq!(asked.summary, "Run the slow check needs your approval");
    assert!(asked.body.contains("run_command"), "{asked:?}");
    assert_eq!(asked.actions, ["default", "allow", "deny"]);
    app.wait_for(".card[data-card='c1'] .approval").await;
    notifications.click(asked.id, "allow");
    app.wait_for_js("return document.querySelector('.approval') === null;")
        .await;
    assert_eq!(
        app.count(".card.running[data-card='c1']").await,
        1,
        "the command still runs: the card stopped asking on the answer alone"
    );
    app.screenshot("allowed-from-notification").await;
    let read = pixels::readable_text(&app, ".card[data-card='c1']", "allowed-card").await;
    pixels::assert_reads(&read, &["run_command"], "allowed-from-notification");
    std::fs::write(workspace.join("go"), "").unwrap();
    app.wait_for_text(".message.assistant .md", "Checked.")
        .await;
    let finished = notifications
        .wait_for(asked.id, "The reply is ready.")
        .await;

    // Deny, pressed on the notification.
    app.send("Write the notes").await;
    app.unfocus_window().await;
    server.open_gate("deny");
    let asked = notifications
        .wait_for(finished.id, "needs your approval")
        .await;
    assert!(asked.body.contains("write_file"), "{asked:?}");
    notifications.click(asked.id, "deny");
    app.wait_for_text(".message.assistant .md", "Nothing written.")
        .await;
    app.wait_for(".card.denied[data-card='w1']").await;
    assert!(
        !workspace.join("notes.md").exists(),
        "a denied write writes nothing"
    );
    let finished = notifications
        .wait_for(asked.id, "The reply is ready.")
        .await;

    // Allow, clicked in the window: the notification's buttons go away with it.
    app.send("Write the notes after all").await;
    app.unfocus_window().await;
    server.open_gate("window");
    let asked = notifications
        .wait_for(finished.id, "needs your approval")
        .await;
    app.click(".card[data-card='w2'] .approval-buttons .primary")
        .await;
    notifications.wait_for_close(asked.id).await;
    app.wait_for_text(".message.assistant .md", "Wrote it.")
        .await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.md")).unwrap(),
        "kept"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_reply_finished_in_front_of_the_user_does_not_notify() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["Right here."])));
    let home = Home::new();
    let watch = NotificationWatch::start();
    let app = App::launch(&home, &server.url()).await;
    app.focus_window().await;
    app.send("Answer me now").await;
    app.wait_for_text(".message.assistant .md", "Right here.")
        .await;
    // The finish notice would be sent right after the answer: give it time to show up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(watch.count(), 0, "the user was looking at the window");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_summon_shortcut_brings_back_the_composer() {
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.click(".search").await;
    app.wait_for_js("return document.activeElement.classList.contains('search');")
        .await;
    app.unfocus_window().await;

    session::press_keys("ctrl+shift+space");
    app.wait_for_js("return document.activeElement.classList.contains('composer-input');")
        .await;
    assert!(session::app_has_focus(), "the window came to the front");
    app.quit().await;
}

/// The session bus `dbus-run-session` gave the tests (and the app).
fn session_bus() -> String {
    std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("a session bus: run under dbus-run-session")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn on_wayland_the_desktop_portal_binds_the_summon_shortcut() {
    let portal = fake_portal::FakePortal::start(&session_bus(), 0);
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch_with(&home, &server.url(), &[("XDG_SESSION_TYPE", "wayland")]).await;
    let start = std::time::Instant::now();
    while portal.seen.lock().unwrap().triggers.is_empty() {
        assert!(
            start.elapsed() < harness::PATIENCE,
            "the app never bound its shortcut"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(portal.seen.lock().unwrap().triggers, ["CTRL+SHIFT+space"]);
    app.click(".search").await;
    app.wait_for_js("return document.activeElement.classList.contains('search');")
        .await;
    app.unfocus_window().await;

    // The desktop tells the app the key was pressed; no X key grab is involved.
    portal.press(cairn_desktop::portal::SUMMON);
    app.wait_for_js("return document.activeElement.classList.contains('composer-input');")
        .await;
    assert!(session::app_has_focus(), "the window came to the front");
    app.click(".chat-head [aria-label='Settings']").await;
    assert_eq!(
        app.count(".shortcut-problem").await,
        0,
        "Settings has nothing to say"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn on_wayland_without_the_portal_settings_say_the_shortcut_cannot_work() {
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch_with(&home, &server.url(), &[("XDG_SESSION_TYPE", "wayland")]).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(".shortcut-problem", "no global shortcuts portal")
        .await;
    // The server check redraws the page when it ends: scroll once it has.
    app.wait_for_js("return !document.querySelector('.status').innerText.includes('Connecting');")
        .await;
    app.js("document.querySelector('.shortcut-problem').scrollIntoView({block: 'center'});")
        .await;
    assert_usable(&app, &[".shortcut-problem"]).await;
    app.screenshot("settings-wayland-without-portal").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_second_launch_brings_the_first_forward_and_ends() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["Yes."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Still here?").await;
    app.wait_for_text(".thread-title", "Still here?").await;
    app.click(".search").await;
    app.wait_for_js("return document.activeElement.classList.contains('search');")
        .await;
    app.unfocus_window().await;

    let status = App::launch_again(&home, &server.url()).await;
    assert!(status.success(), "the second launch ended with {status}");
    app.wait_for_js("return document.activeElement.classList.contains('composer-input');")
        .await;
    assert!(
        session::app_has_focus(),
        "the first window came to the front"
    );
    let exe = std::path::Path::new(harness::APP).canonicalize().unwrap();
    let apps = harness::processes_running(&exe);
    assert_eq!(apps.len(), 1, "one app runs: {apps:?}");
    // The first instance is the one the user had: its chat is still open.
    app.wait_for_text(".thread-title", "Still here?").await;

    // Every later launch ends cleanly too. One in about a hundred once crashed on
    // its way out (exit() ran the libraries' teardown under their running threads).
    for launch in 0..LATER_LAUNCHES {
        let status = App::launch_again(&home, &server.url()).await;
        assert!(status.success(), "launch {launch} ended with {status}");
    }
    assert_eq!(harness::processes_running(&exe).len(), 1);
    app.quit().await;
}

/// How many more launches the single-instance test makes.
const LATER_LAUNCHES: usize = 30;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn at_the_smallest_window_size_everything_stays_reachable() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "kept"}),
        )])),
    );
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch(&home, &server.url()).await;
    app.driver
        .set_window_rect(0, 0, 800, 600)
        .await
        .expect("resizing the window");
    app.choose_workspace(&workspace).await;
    app.send("Write the notes").await;
    app.wait_for(".approval").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    app.screenshot("smallest-window").await;
    assert_placeholder_fits(&app).await;
    assert_usable(
        &app,
        &[
            ".approval-buttons .primary",
            ".approval-buttons .danger",
            ".stop",
            ".mode-select",
            ".composer-input",
        ],
    )
    .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn reopening_a_running_chat_shows_what_streamed_and_goes_on_live() {
    let server = FakeServer::start().await;
    let pieces = numbered("part", 24);
    // Two parts stream while the chat is open, two more while it is closed; the rest
    // waits until it is open again.
    let text: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let parts = sse::answer_parts(&[], &text);
    server.push(
        CHAT,
        gated(
            parts,
            &[(None, 3), (Some("closed"), 2), (Some("reopened"), 21)],
        ),
    );
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Stream for a while").await;
    app.wait_for_text(".message.assistant .md", "part2").await;
    app.click(".new-chat").await;
    app.wait_for(".welcome").await;
    server.open_gate("closed");

    app.open_chat("Stream for a while").await;
    // What streamed while the chat was closed is there at once, in order...
    let shown = text_of(&app.wait_for_text(".message.assistant .md", "part4").await).await;
    assert_eq!(shown.trim(), "part1 part2 part3 part4");
    // ...and the rest arrives live, exactly once.
    server.open_gate("reopened");
    // Read once finished: the answer being written is drawn by appending, and the
    // finished one whole, in a new element; one held across that moment reads empty.
    let done = text_of(
        &app.wait_for_text(".message.assistant .turn.finished .md", "part24")
            .await,
    )
    .await;
    assert_eq!(done.trim(), pieces.concat().trim());
    app.quit().await;
}

/// The misbehaving MCP server of `cairn-testkit`, built if this run has not.
fn mcp_fixture() -> std::path::PathBuf {
    cairn_testkit::mcp::stdio_fixture()
}

/// The fixture MCP server configured for `home`, and allowed to start, as a user
/// would have it after ticking "Start it" in Settings.
async fn allow_the_mcp_fixture(home: &Home) {
    std::fs::write(
        home.mcp_config(),
        json!({"mcpServers": {"fixture": {"command": mcp_fixture()}}}).to_string(),
    )
    .unwrap();
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime.allow_mcp_server("fixture", true).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_mcp_servers_read_only_marks_count_only_once_the_user_trusts_it() {
    let server = FakeServer::start().await;
    for n in 0..2 {
        server.push(
            CHAT,
            Reply::sse(sse::tool_calls(&[(
                &format!("e{n}"),
                "mcp__fixture__echo",
                json!({"text": format!("echo {n}")}),
            )])),
        );
        server.push(CHAT, Reply::sse(sse::text(&[&format!("Echoed {n}.")])));
    }
    let home = Home::new();
    allow_the_mcp_fixture(&home).await;

    let app = App::launch(&home, &server.url()).await;
    // Untrusted, the server's "read-only" is only its claim: the call asks.
    app.send("Echo once").await;
    app.wait_for_text(".approval", "mcp__fixture__echo").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Echoed 0.")
        .await;

    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(".mcp-server[data-server='fixture'] .mcp-status", "running")
        .await;
    app.click(".mcp-server[data-server='fixture'] .mcp-trusted")
        .await;
    app.wait_for_js(
        "return document.querySelector(\".mcp-server[data-server='fixture'] .mcp-trusted\").checked;",
    )
    .await;
    app.screenshot("settings-mcp-trusted").await;
    app.click(".back-to-chat").await;
    app.click(".new-chat").await;
    app.send("Echo again").await;
    app.wait_for_text(".message.assistant .md", "Echoed 1.")
        .await;
    assert_eq!(
        app.count(".approval").await,
        0,
        "trusted: it ran without asking"
    );
    // The window also asks about the model (GET /v1/models): only chat bodies count.
    let requests = server.requests_to(CHAT);
    let last = requests.last().unwrap().json();
    assert!(last.to_string().contains("echo 1"), "the tool ran: {last}");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_slash_lists_the_commands_as_you_type_and_mcp_shows_the_servers() {
    let server = FakeServer::start().await;
    let home = Home::new();
    allow_the_mcp_fixture(&home).await;
    let app = App::launch(&home, &server.url()).await;
    let input = app.wait_for(".composer-input").await;

    input.send_keys("/").await.unwrap();
    app.wait_for(".slash-list").await;
    assert_eq!(
        app.count(".slash-item").await,
        10,
        "a bare slash offers every command"
    );
    input.send_keys("mo").await.unwrap();
    app.wait_for_js("return document.querySelectorAll('.slash-item').length === 2")
        .await;
    let read = pixels::readable_text(&app, ".slash-list", "slash-list").await;
    pixels::assert_reads(
        &read,
        &["/mode", "show or set what tool calls may do", "/model"],
        "the command list",
    );
    // Down to /model, and Tab completes it for its argument.
    input.send_keys(thirtyfour::Key::Down).await.unwrap();
    app.wait_for(".slash-item.selected:nth-child(2)").await;
    input.send_keys(thirtyfour::Key::Tab).await.unwrap();
    app.wait_for_js("return document.querySelector('.composer-input').value === '/model '")
        .await;
    assert_eq!(app.count(".slash-list").await, 0, "chosen: the list goes");

    // Esc puts the list away without touching the text.
    input.clear().await.unwrap();
    input.send_keys("/").await.unwrap();
    app.wait_for(".slash-list").await;
    input.send_keys(thirtyfour::Key::Escape).await.unwrap();
    app.wait_for_js("return !document.querySelector('.slash-list')")
        .await;
    assert_eq!(
        app.js("return document.querySelector('.composer-input').value")
            .await,
        "/"
    );

    // Enter on a command that takes nothing more runs it: /mcp lists the servers.
    input.send_keys("mc").await.unwrap();
    app.wait_for_text(".slash-item.selected", "/mcp").await;
    input.send_keys(thirtyfour::Key::Enter).await.unwrap();
    let listing = app.wait_for_text(".notice-line", "fixture — running").await;
    let listing = text_of(&listing).await;
    assert!(
        listing.contains("  tools: ") && listing.contains("echo") && listing.contains("shout"),
        "{listing}"
    );
    app.screenshot("slash-mcp").await;
    assert!(
        server.requests_to(CHAT).is_empty(),
        "commands never reach the model"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_image_an_mcp_tool_returns_is_drawn_in_its_card_and_shown_to_the_model() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("c1", "mcp__fixture__chart", json!({}))])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Orange over blue."])));
    let home = Home::new();
    allow_the_mcp_fixture(&home).await;
    let app = App::launch(&home, &server.url()).await;
    app.send("Chart the sales").await;
    app.wait_for_text(".approval", "chart").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Orange over blue.")
        .await;

    // Drawn, not only in the page: the chart's two colours are on the screen.
    let shot = pixels::region(&app, ".card[data-card='c1'] .card-image", "card-image").await;
    assert_chart_colours(&shot);
    let card = text_of(&app.wait_for(".card[data-card='c1'] .card-result").await).await;
    assert!(card.contains("[image 1: image/png, 1 KB]"), "{card}");

    // The model saw it: after the result, a user message with the image.
    let second = server.requests_to(CHAT)[1].json();
    let messages = second["messages"].as_array().unwrap();
    let shown = messages.last().unwrap();
    assert_eq!(shown["role"], "user", "{second}");
    assert_eq!(
        shown["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{}", cairn_testkit::mcp::CHART_PNG)
    );
    app.quit().await;

    // A stored call draws its image again.
    let app = App::launch(&home, &server.url()).await;
    app.open_chat("Chart the sales").await;
    let shot = pixels::region(
        &app,
        ".card[data-card='c1'] .card-image",
        "card-image-stored",
    )
    .await;
    assert_chart_colours(&shot);
    app.quit().await;
}

/// The fixture's chart on the screen: its orange half and its blue half.
fn assert_chart_colours(shot: &std::path::Path) {
    let white = [0xff, 0xff, 0xff];
    let orange = pixels::inked(shot, white, [0xd9, 0x48, 0x0f]);
    let blue = pixels::inked(shot, white, [0x1c, 0x7e, 0xd6]);
    assert!(
        orange > 1000 && blue > 1000,
        "{}: orange pixels {orange}, blue pixels {blue}",
        shot.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_allowed_mcp_server_that_fails_to_start_is_reported() {
    let server = FakeServer::start().await;
    let home = Home::new();
    std::fs::write(
        home.mcp_config(),
        r#"{"mcpServers": {"broken-tools": {"command": "/nonexistent/mcp-server"}}}"#,
    )
    .unwrap();
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime
        .allow_mcp_server("broken-tools", true)
        .await
        .unwrap();
    drop(runtime);

    let app = App::launch(&home, &server.url()).await;
    // Said once the window is up, though the failure came before it listened.
    app.wait_for_text(".toast", "broken-tools").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_mcp_server_only_the_login_shell_can_find_starts_from_a_desktop_launch() {
    use std::os::unix::fs::PermissionsExt;
    let server = FakeServer::start().await;
    let home = Home::new();
    // A folder only the user's login shell puts on PATH (nvm, uv, ~/.local/bin): the
    // app, started the way a desktop entry starts it, does not have it.
    let own_bin = home.dir.path().join("own-bin");
    std::fs::create_dir_all(&own_bin).unwrap();
    let script = |path: &std::path::Path, body: String| {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        &own_bin.join("fake-npx"),
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", mcp_fixture().display()),
    );
    // The login shell: its profile adds that folder (called as `-i -l -c SCRIPT`).
    let login_shell = home.dir.path().join("login-shell");
    script(
        &login_shell,
        format!(
            "#!/bin/sh\nPATH='{}':\"$PATH\"; export PATH\nshift 3\nexec /bin/sh -c \"$1\"\n",
            own_bin.display()
        ),
    );
    std::fs::write(
        home.mcp_config(),
        json!({"mcpServers": {"npx-style": {"command": "fake-npx"}}}).to_string(),
    )
    .unwrap();
    let own_path = std::env::var("PATH").unwrap();
    assert!(
        !own_path.contains("own-bin"),
        "the app's PATH lacks the folder"
    );
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime.allow_mcp_server("npx-style", true).await.unwrap();
    drop(runtime);

    let shell = login_shell.display().to_string();
    let app = App::launch_with(&home, &server.url(), &[("SHELL", &shell)]).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(
        ".mcp-server[data-server='npx-style'] .mcp-status",
        "running",
    )
    .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_last_answer_regenerates_and_the_last_question_is_edited_in_place() {
    let server = FakeServer::start().await;
    for answer in ["Five.", "Four.", "Six."] {
        server.push(CHAT, Reply::sse(sse::text(&[answer])));
    }
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("What is 2 + 2?").await;
    app.wait_for_text(".message.assistant .md", "Five.").await;

    app.click(".answer-actions .regenerate").await;
    app.wait_for_text(".message.assistant .md", "Four.").await;
    assert_eq!(
        app.count(".message.assistant").await,
        1,
        "in the old one's place"
    );
    assert_eq!(
        app.count(".message.user").await,
        1,
        "the question is not asked twice"
    );

    app.hover(".message.user .bubble").await;
    app.click(".edit-question").await;
    let edit = app.wait_for(".edit-input").await;
    edit.clear().await.unwrap();
    edit.send_keys("What is 3 + 3?").await.unwrap();
    edit.send_keys(thirtyfour::Key::Enter).await.unwrap();
    app.wait_for_text(".message.assistant .md", "Six.").await;
    app.wait_for_text(".message.user .bubble", "What is 3 + 3?")
        .await;
    assert_eq!(app.count(".edit-input").await, 0);
    assert_eq!(app.count(".message.user").await, 1);
    let asked: Vec<String> = server
        .requests_to(CHAT)
        .iter()
        .map(|r| {
            let messages = r.json()["messages"].as_array().unwrap().clone();
            cairn_testkit::wire::users_words(messages.last().unwrap()).to_owned()
        })
        .collect();
    assert_eq!(
        asked,
        ["What is 2 + 2?", "What is 2 + 2?", "What is 3 + 3?"]
    );
    let live = app.thread_lines().await;
    app.screenshot("edited-question").await;
    app.quit().await;

    let app = App::launch(&home, &server.url()).await;
    app.open_chat("What is 2 + 2?").await;
    app.wait_for_text(".message.assistant .md", "Six.").await;
    assert_eq!(app.thread_lines().await, live, "stored as shown");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn retry_answers_the_failed_question_again_in_its_place() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::json(400, r#"{"error":{"message":"the model is warming up"}}"#),
    );
    server.push(CHAT, Reply::sse(sse::text(&["It is 4."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("What is 2 + 2?").await;
    app.wait_for_text(".notice.error", "warming up").await;
    // Pressed the moment it shows, as an impatient user would.
    app.wait_for(".notice.error .retry").await;
    app.js("document.querySelector('.notice.error .retry').click();")
        .await;
    app.wait_for_text(".message.assistant .md", "It is 4.")
        .await;
    assert_eq!(app.count(".notice.error").await, 0, "the failure gave way");
    assert_eq!(app.count(".message.user").await, 1, "asked once");

    // So it is stored: the reopened chat has the question once and the new answer.
    app.quit().await;
    let app = App::launch(&home, &server.url()).await;
    app.click(".thread-open").await;
    app.wait_for_text(".message.assistant .md", "It is 4.")
        .await;
    assert_eq!(app.count(".message.user").await, 1);
    assert_eq!(app.count(".notice.error").await, 0);
    app.quit().await;
}

/// What the app put on the clipboard, as another program pastes it.
fn clipboard() -> String {
    let out = std::process::Command::new("xclip")
        .args(["-o", "-selection", "clipboard"])
        .output()
        .expect("xclip runs (apt install xclip)");
    assert!(
        out.status.success(),
        "nothing on the clipboard: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the clipboard holds text")
}

/// Waits until the clipboard holds `expected` (the copy goes through the app's
/// command, so it lands a moment after the click).
async fn assert_clipboard(expected: &str, what: &str) {
    let start = std::time::Instant::now();
    loop {
        let now = clipboard();
        if now == expected {
            return;
        }
        assert!(
            start.elapsed() < harness::PATIENCE,
            "{what}: the clipboard holds {now:?}, not {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn code_is_coloured_and_code_answers_and_questions_copy_to_the_clipboard() {
    let answer = "Here it is:\n\n```rust\n// greet\nfn main() {\n    println!(\"hello, world\");\n}\n```\n\nRun it with `cargo run`.";
    let code = "// greet\nfn main() {\n    println!(\"hello, world\");\n}";
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&[answer])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Show me hello world in Rust").await;
    app.wait_for_text(".message.assistant .md", "Run it with")
        .await;
    app.wait_for_text(".code-block .code-lang", "rust").await;

    // Coloured on the screen, not only marked: the keyword's and the string's colours
    // are among the painted pixels, and the code reads.
    let shot = pixels::region(&app, ".code-block", "code-block").await;
    let paper = [0xef, 0xef, 0xec];
    let keyword = pixels::inked(&shot, paper, [0x8e, 0x3f, 0xb3]);
    let string = pixels::inked(&shot, paper, [0x2a, 0x73, 0x1c]);
    assert!(
        keyword > 10 && string > 30,
        "{}: keyword pixels {keyword}, string pixels {string}",
        shot.display()
    );
    let read = pixels::readable_text(&app, ".code-block", "code-block-read").await;
    pixels::assert_reads(
        &read,
        &["fn main", "println", "hello, world", "Copy"],
        "the code block",
    );
    let live_block = app
        .js("return document.querySelector('.code-block').outerHTML")
        .await;

    // Before any click: a focused button inside the answer shows them too.
    let visibility = "return getComputedStyle(document.querySelector('.copy-answer')).visibility";
    app.hover(".chat-title").await;
    assert_eq!(
        app.js(visibility).await,
        "hidden",
        "out of the way until looked for"
    );

    app.click(".code-block .code-copy").await;
    app.wait_for_text(".code-block .code-copy", "Copied").await;
    assert_clipboard(code, "the code block").await;
    // The label comes back, so the next copy can be seen too.
    app.wait_for_text(".code-block .code-copy", "Copy").await;

    app.hover(".message.assistant .md").await;
    assert_eq!(app.js(visibility).await, "visible");
    app.click(".copy-answer").await;
    assert_clipboard(answer, "the answer").await;

    app.hover(".message.user .bubble").await;
    app.click(".copy-question").await;
    assert_clipboard("Show me hello world in Rust", "the question").await;
    app.screenshot("copied-question").await;
    app.quit().await;

    // A stored answer draws its code the same.
    let app = App::launch(&home, &server.url()).await;
    app.open_chat("Show me hello world in Rust").await;
    app.wait_for(".code-block .hl-k").await;
    assert_eq!(
        app.js("return document.querySelector('.code-block').outerHTML")
            .await,
        live_block
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_link_in_an_answer_opens_in_the_browser_and_only_web_links_do() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::text(&[
            "Read [the guide](https://example.com/guide?page=2) ",
            "but not [this](file:///etc/passwd).",
        ])),
    );
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Where are the docs?").await;
    app.wait_for_text(".md a.link", "the guide")
        .await
        .click()
        .await
        .unwrap();
    let start = std::time::Instant::now();
    while home.opened_links().is_empty() && start.elapsed() < harness::PATIENCE {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(home.opened_links(), ["https://example.com/guide?page=2"]);
    assert_eq!(
        app.count(".composer-input").await,
        1,
        "the app's page stays"
    );

    app.wait_for_text(".md a.link", "this").await;
    app.js("Array.from(document.querySelectorAll('.md a.link')).find(a => a.textContent === 'this').click();")
        .await;
    app.wait_for_text(".toast", "only web and mail links are opened")
        .await;
    assert_eq!(home.opened_links().len(), 1, "the file link was not opened");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn at_200_percent_zoom_the_chat_stays_usable_and_the_zoom_is_kept() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["Big enough to read."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Zoom in").await;
    app.wait_for_text(".message.assistant .md", "Big enough to read.")
        .await;
    app.wait_for(".send").await; // the turn is over
    let width = app.js("return window.innerWidth;").await.as_f64().unwrap();
    assert_placeholder_fits(&app).await;
    for step in 0..5 {
        // 110, 125, 150, 175, 200%.
        app.press_chord("=").await;
        let zoomed = [1.1, 1.25, 1.5, 1.75, 2.0][step];
        app.wait_for_js(&format!(
            "return Math.abs(window.innerWidth * {zoomed} - {width}) <= 2;"
        ))
        .await;
        assert_placeholder_fits(&app).await;
    }
    app.wait_for_js(&format!(
        "return Math.abs(window.innerWidth * 2 - {width}) <= 2;"
    ))
    .await;
    app.screenshot("zoom-200").await;
    assert_usable(&app, &[".composer-input", ".send", ".sidebar-toggle"]).await;
    assert_eq!(
        app.js("return getComputedStyle(document.querySelector('.sidebar')).display;")
            .await,
        json!("none"),
        "too narrow for the chats beside the thread: they wait behind the toggle"
    );
    // WebKitWebDriver aims its clicks without the page zoom: click from inside.
    app.js("document.querySelector('.sidebar-toggle').click();")
        .await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.sidebar')).display === 'flex';",
    )
    .await;
    app.screenshot("zoom-200-chats").await;
    app.js("document.querySelector('.thread-title').click();")
        .await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.sidebar')).display === 'none';",
    )
    .await;
    // A click beside the chats, on the dimmed thread, closes them too.
    app.js("document.querySelector('.sidebar-toggle').click();")
        .await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.backdrop')).display === 'block';",
    )
    .await;
    app.js("document.querySelector('.backdrop').click();").await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.sidebar')).display === 'none' \
         && getComputedStyle(document.querySelector('.backdrop')).display === 'none';",
    )
    .await;
    app.quit().await;

    // The zoom is a setting: the next start has it.
    let app = App::launch(&home, &server.url()).await;
    app.wait_for_js(&format!(
        "return Math.abs(window.innerWidth * 2 - {width}) <= 2;"
    ))
    .await;
    app.press_chord("0").await;
    app.wait_for_js(&format!(
        "return Math.abs(window.innerWidth - {width}) <= 2;"
    ))
    .await;
    app.quit().await;
}

/// The composer's placeholder fits on its one line, whole.
async fn assert_placeholder_fits(app: &App) {
    let room = app
        .js(
            "const t = document.querySelector('.composer-input'), s = getComputedStyle(t); \
             const c = document.createElement('canvas').getContext('2d'); c.font = s.font; \
             return [c.measureText(t.placeholder).width, \
                     t.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];",
        )
        .await;
    let (needed, has) = (room[0].as_f64().unwrap(), room[1].as_f64().unwrap());
    assert!(
        needed <= has,
        "the placeholder needs {needed} px and has {has}"
    );
}

/// Every text field's placeholder under `scope` fits in its field, whole.
async fn assert_placeholders_fit(app: &App, scope: &str) {
    let cut = app
        .js(&format!(
            "const c = document.createElement('canvas').getContext('2d'); \
             return [...document.querySelectorAll('{scope} input[placeholder], {scope} textarea[placeholder]')] \
               .filter(e => e.offsetParent !== null && e.placeholder) \
               .filter(e => {{ const s = getComputedStyle(e); c.font = s.font; \
                 return c.measureText(e.placeholder).width > \
                   e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }}) \
               .map(e => e.placeholder);"
        ))
        .await;
    assert_eq!(cut, json!([]), "placeholders cut off");
}

/// Nothing sticks out sideways, and each of `controls` is inside the window.
async fn assert_usable(app: &App, controls: &[&str]) {
    let overflow = app
        .js("return document.documentElement.scrollWidth - window.innerWidth;")
        .await;
    assert!(
        overflow.as_i64().is_some_and(|px| px <= 0),
        "{overflow} px too wide"
    );
    for control in controls {
        let inside = app
            .js(&format!(
                "const r = document.querySelector('{control}').getBoundingClientRect(); \
                 return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth \
                     && r.top >= 0 && r.bottom <= window.innerHeight;"
            ))
            .await;
        assert_eq!(inside, json!(true), "{control} is outside the window");
    }
}

/// `count` numbered words ("word1 ", "word2 ", …): the pieces of a long answer.
pub(crate) fn numbered(word: &str, count: usize) -> Vec<String> {
    (1..=count).map(|n| format!("{word}{n} ")).collect()
}

/// An answer that streams its first `before` pieces, then holds at `gate` until the
/// test opens it: a test acts mid-answer without racing the stream, however loaded
/// the machine.
pub(crate) fn held_answer(pieces: &[String], before: usize, gate: &str) -> Reply {
    let text: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let parts = sse::answer_parts(&[], &text);
    let rest = parts.len() - 1 - before;
    gated(parts, &[(None, 1 + before), (Some(gate), rest)])
}

/// An answer's SSE parts sent in stretches: each `(gate, count)` waits at its gate (if
/// any) until the test opens it, then sends the next `count` parts.
fn gated(parts: Vec<Vec<u8>>, stretches: &[(Option<&str>, usize)]) -> Reply {
    let mut parts = parts.into_iter().map(Piece::Bytes);
    let mut reply = Reply::new(200, "text/event-stream");
    for (gate, count) in stretches {
        if let Some(gate) = gate {
            reply = reply.then(Piece::Gate((*gate).into()));
        }
        for piece in parts.by_ref().take(*count) {
            reply = reply.then(piece);
        }
    }
    reply
}

/// The first chat request the app made (it also lists the server's models at start-up).
/// llama.cpp's model list: `test-model`, with the context it was started with.
fn llama_cpp_models(n_ctx: u32) -> Reply {
    Reply::json(
        200,
        json!({"object": "list", "data": [
            {"id": "test-model", "object": "model", "meta": {"n_ctx": n_ctx}}
        ]})
        .to_string(),
    )
}

/// The first request that asked the model a question (not one that read the prompt
/// ahead of it).
fn first_chat_request(server: &FakeServer) -> serde_json::Value {
    questions(server)
        .into_iter()
        .next()
        .expect("the app asked the model")
}

/// The chat requests that asked the model something, in order: warm-ups left out.
fn questions(server: &FakeServer) -> Vec<serde_json::Value> {
    server
        .requests_to(CHAT)
        .iter()
        .map(cairn_testkit::Recorded::json)
        .filter(|body| !cairn_testkit::wire::is_warm_up(body))
        .collect()
}

/// Waits until no app runs (it quit).
async fn wait_for_the_app_to_end() {
    let exe = std::path::Path::new(harness::APP).canonicalize().unwrap();
    let start = std::time::Instant::now();
    while !harness::processes_running(&exe).is_empty() {
        assert!(
            start.elapsed() < harness::PATIENCE,
            "the app is still running"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn without_a_tray_closing_the_window_quits_and_settings_says_why() {
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(".tray-problem", "closing the window quits Cairn")
        .await;
    assert_eq!(
        app.js("return document.querySelector('.close-to-tray').disabled;")
            .await,
        json!(true)
    );
    app.screenshot("settings-without-tray").await;
    session::close_app_window();
    wait_for_the_app_to_end().await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn start_at_login_writes_an_autostart_entry_that_starts_cairn_hidden_in_the_tray() {
    let _tray = session::SystemTray::own();
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.click(".start-at-login").await;
    app.click(".save-settings").await;
    let entry = home.autostart_entry();
    let start = std::time::Instant::now();
    while !entry.exists() {
        assert!(start.elapsed() < harness::PATIENCE, "no autostart entry");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let written = std::fs::read_to_string(&entry).unwrap();
    let exe = std::path::Path::new(harness::APP).canonicalize().unwrap();
    assert!(
        written.contains(&format!("\nExec=\"{}\" --hidden\n", exe.display())),
        "{written}"
    );
    app.screenshot("settings-start-at-login").await;
    app.quit().await;

    // Started as the session would start it: no window until summoned.
    let app = App::launch_with_args(&home, &server.url(), &["--hidden"]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!session::app_window_shown(), "started hidden, in the tray");
    session::press_keys("ctrl+shift+space");
    let start = std::time::Instant::now();
    while !session::app_window_shown() {
        assert!(
            start.elapsed() < harness::PATIENCE,
            "the shortcut did not bring it"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.click(".chat-head [aria-label='Settings']").await;
    let checked = "return document.querySelector('.start-at-login').checked";
    assert_eq!(app.js(checked).await, true, "the choice is kept");
    app.click(".start-at-login").await;
    app.click(".save-settings").await;
    let start = std::time::Instant::now();
    while entry.exists() {
        assert!(start.elapsed() < harness::PATIENCE, "the entry stayed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn with_a_tray_closing_the_window_hides_it_and_the_reply_goes_on() {
    let _tray = session::SystemTray::own();
    let server = FakeServer::start().await;
    // The reply goes on only once the window is hidden.
    server.push(CHAT, held_answer(&numbered("part", 8), 1, "hidden"));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Keep going while hidden").await;
    app.wait_for_text(".message.assistant .md", "part1").await;
    session::close_app_window();
    let start = std::time::Instant::now();
    while session::app_window_shown() {
        assert!(start.elapsed() < harness::PATIENCE, "the window stayed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exe = std::path::Path::new(harness::APP).canonicalize().unwrap();
    assert_eq!(harness::processes_running(&exe).len(), 1, "still running");
    server.open_gate("hidden");
    session::press_keys("ctrl+shift+space");
    // Read once finished (the element drawn while it streams is replaced at the end).
    let done = text_of(
        &app.wait_for_text(".message.assistant .turn.finished .md", "part8")
            .await,
    )
    .await;
    assert!(done.starts_with("part1 part2"), "{done}");
    assert!(session::app_window_shown());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn quitting_while_a_reply_runs_asks_and_the_question_follows_the_reply() {
    let server = FakeServer::start().await;
    // The reply holds after its first word until the test lets it finish.
    let words = ["word1 ", "word2 ", "word12"].map(String::from);
    server.push(CHAT, held_answer(&words, 1, "finish"));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Write for a few seconds").await;
    app.wait_for_text(".message.assistant .md", "word1").await;
    // No tray here: closing the window quits, and a reply is still being written.
    session::close_app_window();
    app.wait_for_text(".quit-text", "1 running").await;
    app.screenshot("quit-while-running").await;
    server.open_gate("finish");
    app.wait_for_text(".quit-text", "The replies have finished")
        .await;
    app.screenshot("quit-after-the-reply").await;
    // Clicked after the script returns: the app ends under WebDriver's feet.
    app.js("setTimeout(() => document.querySelector('.quit-confirm').click(), 100);")
        .await;
    wait_for_the_app_to_end().await;
    app.quit().await;

    // The answer was kept whole: it finished before the quit.
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let threads = store
        .list_threads(cairn_store::Page {
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    let messages = store.messages(&threads[0].id).await.unwrap();
    assert!(messages[1].content.trim_end().ends_with("word12"));
    assert_eq!(messages[1].status, cairn_protocol::MessageStatus::Complete);
}

/// The controls (buttons, fields, menus) a toast lies on top of, by class: the part
/// of each that its scrolling containers leave visible, against the toast's box.
async fn controls_under_the_toast(app: &App) -> serde_json::Value {
    app.js(
        "const t = document.querySelector('.toast').getBoundingClientRect(); \
         const shown = e => { let r = e.getBoundingClientRect(); \
           let box = {l: r.left, r: r.right, t: r.top, b: r.bottom}; \
           for (let a = e.parentElement; a; a = a.parentElement) { \
             if (getComputedStyle(a).overflowY === 'visible') continue; \
             const c = a.getBoundingClientRect(); \
             box = {l: Math.max(box.l, c.left), r: Math.min(box.r, c.right), \
                    t: Math.max(box.t, c.top), b: Math.min(box.b, c.bottom)}; } \
           return box; }; \
         return [...document.querySelectorAll('button, select, input, textarea')] \
           .filter(e => !e.closest('.toast')) \
           .filter(e => { const v = shown(e); \
             return v.r > v.l && v.b > v.t && v.l < t.right && v.r > t.left \
               && v.t < t.bottom && v.b > t.top; }) \
           .map(e => e.className || e.tagName);",
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn toasts_leave_by_themselves_and_never_cover_a_control() {
    let server = FakeServer::start().await;
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("/export md").await;
    app.wait_for_text(".toast", "Nothing to export yet").await;
    app.screenshot("toast").await;
    assert_eq!(controls_under_the_toast(&app).await, json!([]));
    let shown = std::time::Instant::now();
    app.wait_for_js("return document.querySelector('.toast') === null;")
        .await;
    assert!(
        shown.elapsed() >= Duration::from_secs(3),
        "long enough to read"
    );

    // In Settings too, above the save button rather than over it.
    app.click(".chat-head [aria-label='Settings']").await;
    app.click(".save-settings").await;
    app.wait_for_text(".toast", "Settings saved").await;
    assert_eq!(controls_under_the_toast(&app).await, json!([]));
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_chat_menu_closes_on_escape_or_a_click_elsewhere_and_rename_takes_the_keys() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["Hi."])));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Name me").await;
    app.wait_for_text(".message.assistant .md", "Hi.").await;
    // The head re-renders as the turn ends; a menu opened before that would close.
    app.wait_for(".turn.finished").await;

    app.click(".thread-menu").await;
    app.wait_for(".menu").await;
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_js("return document.querySelector('.menu') === null;")
        .await;

    app.click(".thread-menu").await;
    app.wait_for(".menu").await;
    app.click(".chat-title").await;
    app.wait_for_js("return document.querySelector('.menu') === null;")
        .await;

    app.click(".thread-menu").await;
    app.wait_for_text(".menu button", "Rename").await;
    app.js("[...document.querySelectorAll('.menu button')].find(b => b.textContent === 'Rename').click();")
        .await;
    app.wait_for_js(
        "return document.activeElement && document.activeElement.classList.contains('rename');",
    )
    .await;
    // Typed where the focus is, as a user would, without clicking into the field.
    app.driver
        .action_chain()
        .send_keys("Named")
        .send_keys(thirtyfour::Key::Enter)
        .perform()
        .await
        .unwrap();
    let title = text_of(&app.wait_for_text(".thread-title", "Named").await).await;
    assert_eq!(
        title.trim(),
        "Named",
        "the old name was selected, so typing replaced it"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_streaming_answer_reads_as_it_is_written() {
    let server = FakeServer::start().await;
    // opening, reasoning | text 1 | text 2, close: the test opens each gate in turn.
    let parts = sse::answer_parts(
        &["Let me think about links."],
        &["Read [the guide](https://exa", "mple.com/guide) today."],
    );
    server.push(
        CHAT,
        gated(
            parts,
            &[(None, 2), (Some("reasoned"), 1), (Some("half-link"), 2)],
        ),
    );
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Where is the guide?").await;
    // The model reasons: its reasoning is open to read as it comes.
    app.wait_for_text(".reasoning-text", "think about links")
        .await;
    assert_eq!(
        app.js("return document.querySelector('.reasoning').open;")
            .await,
        json!(true),
        "open while it streams"
    );
    server.open_gate("reasoned");
    // Half a link streamed: its words, no raw brackets, and no "Thinking…" beside the text.
    let shown = text_of(
        &app.wait_for_text(".message.assistant .md", "the guide")
            .await,
    )
    .await;
    assert!(!shown.contains("]("), "no raw link syntax: {shown:?}");
    assert_eq!(
        app.count(".message.assistant .chip").await,
        0,
        "the text shows it is writing"
    );
    assert_eq!(
        app.js("return document.querySelector('.reasoning').open;")
            .await,
        json!(false),
        "folded once the answer starts"
    );
    app.screenshot("streaming-half-link").await;
    server.open_gate("half-link");
    app.wait_for_text(".message.assistant .md", "today.").await;
    app.wait_for_text(".md a.link", "the guide").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_new_chat_starts_in_the_last_folder_used() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["Looked."])));
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch(&home, &server.url()).await;
    app.wait_for_text(".welcome-folder", "Choose a folder")
        .await;
    app.choose_workspace(&workspace).await;
    app.wait_for_text(".welcome-folder", "Cairn works in").await;
    app.send("Look around").await;
    app.wait_for_text(".message.assistant .md", "Looked.").await;

    app.click(".new-chat").await;
    app.wait_for_text(".workspace-button", "project").await;
    app.wait_for_text(".welcome-folder", &workspace.display().to_string())
        .await;
    assert_eq!(
        app.js("return document.querySelector('.mode-select').value;")
            .await,
        json!("default"),
        "the folder carries over, the mode does not"
    );
    app.quit().await;

    // And after a restart.
    let app = App::launch(&home, &server.url()).await;
    app.wait_for_text(".workspace-button", "project").await;
    app.screenshot("new-chat-in-last-folder").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_search_lists_each_chat_once_in_plain_words_with_the_hit_marked() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::text(&[
            "The **pebble** is in [the garden](https://example.com/a/b). It is a \
             stoneandpebbleandstoneandpebbleandstoneandpebbleandstoneandpebbleandstone.",
        ])),
    );
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Where is the pebble?").await;
    app.wait_for_text(".message.assistant .md", "garden").await;

    app.wait_for(".search")
        .await
        .send_keys("pebble")
        .await
        .unwrap();
    app.wait_for(".hit").await;
    assert_eq!(
        app.count(".hit").await,
        1,
        "the question and the answer: one chat"
    );
    let snippet = text_of(&app.wait_for(".hit-snippet").await).await;
    for mark in ["**", "](", "[", "`"] {
        assert!(!snippet.contains(mark), "{mark:?} in {snippet:?}");
    }
    assert_eq!(
        text_of(&app.wait_for(".hit-snippet mark").await)
            .await
            .to_lowercase(),
        "pebble"
    );
    assert_eq!(
        app.js("const h = document.querySelector('.hits'); return h.scrollWidth - h.clientWidth;")
            .await,
        json!(0),
        "nothing sticks out sideways"
    );
    app.screenshot("search-hits").await;

    // A word only the answer has: its snippet comes from the Markdown.
    let search = app.wait_for(".search").await;
    search.clear().await.unwrap();
    search.send_keys("garden").await.unwrap();
    let snippet = text_of(&app.wait_for_text(".hit-snippet", "garden").await).await;
    for mark in ["**", "](", "[", "https"] {
        assert!(!snippet.contains(mark), "{mark:?} in {snippet:?}");
    }
    assert!(
        snippet.contains("The pebble is in the garden"),
        "{snippet:?}"
    );
    assert_eq!(
        app.js("const h = document.querySelector('.hits'); return h.scrollWidth - h.clientWidth;")
            .await,
        json!(0),
        "a long word wraps instead of sticking out"
    );
    app.screenshot("search-hits-answer").await;
    let hit = app.wait_for(".hit").await;
    hit.click().await.unwrap();
    app.wait_for_text(".chat-title", "Where is the pebble?")
        .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_model_picker_says_how_much_context_the_model_has_and_when_tools_wait() {
    let server = FakeServer::start().await;
    // llama.cpp's model list says the context the model was started with.
    server.fallback("GET /v1/models", llama_cpp_models(4096));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    let hint = app.wait_for_text(".context-hint", "4k context").await;
    assert_eq!(text_of(&hint).await, "4k context");
    let title = hint.attr("title").await.unwrap().unwrap_or_default();
    assert!(
        title.starts_with("This model takes 4096 tokens at once (llama.cpp server's n_ctx)."),
        "{title}"
    );
    assert_usable(&app, &[".context-hint", ".model-select", ".send"]).await;
    app.screenshot("context-hint").await;

    // With an MCP server's tools and a 1k context, the tools wait in their group.
    std::fs::write(
        home.mcp_config(),
        json!({"mcpServers": {"fixture": {"command": mcp_fixture()}}}).to_string(),
    )
    .unwrap();
    app.quit().await;
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime.allow_mcp_server("fixture", true).await.unwrap();
    drop(runtime);
    server.fallback("GET /v1/models", llama_cpp_models(1024));
    let app = App::launch(&home, &server.url()).await;
    app.wait_for_text(".context-hint", "1k context · tools on demand")
        .await;
    // A long hint at 1120 px: Send stays on the controls' first line, not one of its own.
    app.driver
        .set_window_rect(0, 0, 1120, 800)
        .await
        .expect("resizing the window");
    app.wait_for_js("return window.innerWidth <= 1120").await;
    let rows = app
        .js("const top = s => Math.round(document.querySelector(s).getBoundingClientRect().top); \
             return [top('.agent-chip'), top('.send'), document.querySelector('.send').getBoundingClientRect().height];")
        .await;
    let (chip, send, height) = (
        rows[0].as_f64().unwrap(),
        rows[1].as_f64().unwrap(),
        rows[2].as_f64().unwrap(),
    );
    assert!(
        (send - chip).abs() < height,
        "Send sits on the first line (chip at {chip}, Send at {send})"
    );
    app.screenshot("composer-1120").await;
    app.driver
        .set_window_rect(0, 0, 800, 600)
        .await
        .expect("resizing the window");
    assert_usable(&app, &[".context-hint", ".model-select", ".send"]).await;
    app.screenshot("context-hint-tools-on-demand").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_answer_the_server_cut_at_its_length_says_so_and_keeps_its_text() {
    let server = FakeServer::start().await;
    server.fallback("GET /v1/models", llama_cpp_models(4096));
    // A server that says its window is sent the prompt ahead: a dot answers that.
    server.respond(CHAT, |request: &cairn_testkit::Recorded| {
        Reply::sse(if cairn_testkit::wire::is_warm_up(&request.json()) {
            sse::text(&["."])
        } else {
            sse::text_ending(&["The code word is", " the code word is", " the"], "length")
        })
    });
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("What is the code word?").await;
    let notice = ".message.assistant .notice.cut";
    app.wait_for_text(notice, "The model stopped at its length limit")
        .await;
    app.wait_for_text(
        ".message.assistant .md",
        "The code word is the code word is the",
    )
    .await;
    assert_eq!(
        app.count(".message.assistant .notice.error").await,
        0,
        "not a failure"
    );
    assert!(
        first_chat_request(&server)["max_tokens"]
            .as_u64()
            .is_some_and(|max| max <= 1024),
        "the answer's room"
    );
    app.screenshot("cut-at-length").await;
    let live = app.thread_lines().await;
    app.quit().await;

    let app = App::launch(&home, &server.url()).await;
    app.open_chat("What is the code word?").await;
    app.wait_for_text(notice, "The model stopped at its length limit")
        .await;
    assert_eq!(app.thread_lines().await, live);
    assert_eq!(app.count(".message.assistant .notice.error").await, 0);
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_app_and_the_cli_open_a_new_database_together() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["Both opened it."])));
    let home = Home::new();
    let cli = std::path::Path::new(harness::APP).with_file_name("cairn");
    assert!(
        cli.exists(),
        "{} is not built: cargo build -p cairn-cli",
        cli.display()
    );
    // Whoever creates and migrates the file holds the lock beside it. Held here, it
    // makes the app and three CLI runs wait at the same point of their first open,
    // and all of them go at once when it is let go.
    let mut lock_path = home.db().into_os_string();
    lock_path.push(".lock");
    let lock = std::fs::File::create(&lock_path).unwrap();
    lock.lock().unwrap();
    let env = harness::app_env(&home, &server.url());
    let runs: Vec<_> = (0..3)
        .map(|_| {
            tokio::process::Command::new(&cli)
                .args(["threads", "list", "--json"])
                .envs(env.clone())
                .kill_on_drop(true)
                .output()
        })
        .map(tokio::spawn)
        .collect();
    let url = server.url();
    let launch = App::launch(&home, &url);
    let app = {
        let releasing = async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(!home.db().exists(), "nobody opened the file past the lock");
            drop(lock);
        };
        let (app, ()) = tokio::join!(launch, releasing);
        app
    };
    for run in runs {
        let out = run.await.unwrap().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The app works on the file as usual.
    app.send("Did you both open it?").await;
    app.wait_for_text(".message.assistant .md", "Both opened it.")
        .await;
    assert_eq!(app.count(".toast").await, 0, "no error was said");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_local_server_reads_the_prompt_while_the_question_is_written() {
    let server = FakeServer::start().await;
    server.fallback("GET /v1/models", llama_cpp_models(8192));
    server.respond(CHAT, |request: &cairn_testkit::Recorded| {
        Reply::sse(if cairn_testkit::wire::is_warm_up(&request.json()) {
            sse::text(&["."])
        } else {
            sse::text(&["Hello."])
        })
    });
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch(&home, &server.url()).await;
    app.choose_workspace(&workspace).await;
    app.click(".composer-input").await;
    // Before a word is typed, the server has read what the question will follow.
    let start = std::time::Instant::now();
    let ahead = loop {
        let warm_ups: Vec<_> = server
            .requests_to(CHAT)
            .iter()
            .map(cairn_testkit::Recorded::json)
            .filter(cairn_testkit::wire::is_warm_up)
            .collect();
        // The folder's prompt: the one read once the folder was chosen.
        let folder = format!(
            "Workspace: the folder `{}`",
            workspace.file_name().unwrap().to_str().unwrap()
        );
        if let Some(last) = warm_ups.last()
            && cairn_testkit::wire::context_block(last).contains(&folder)
        {
            break last.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no warm-up for the folder: {warm_ups:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    app.send("Say hello.").await;
    app.wait_for_text(".message.assistant .md", "Hello.").await;
    let asked = first_chat_request(&server);
    let sent = asked["messages"].as_array().unwrap();
    // A new chat's context block was read ahead as a message of its own, which the
    // question then opens with.
    let (block, before) = ahead["messages"].as_array().unwrap().split_last().unwrap();
    assert_eq!(before, &sent[..sent.len() - 1]);
    let question = sent.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(
        question.strip_prefix(block["content"].as_str().unwrap()),
        Some("Say hello."),
        "the question added only itself"
    );
    assert_eq!(ahead["tools"], asked["tools"]);
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus, tauri-driver and the real model server: run scripts/test"]
async fn a_real_small_model_answers_in_the_window() {
    let server = std::env::var("CAIRN_REAL_MODEL_URL")
        .expect("CAIRN_REAL_MODEL_URL is not set: run under scripts/real-model with");
    let home = Home::new();
    // The harness names the model `test-model`; this server serves `smollm2`.
    let app = App::launch_with(&home, &server, &[("CAIRN_MODEL", "smollm2")]).await;
    // The picker reads the window from the server, and that SmolLM2's own template
    // takes no tools, so they reach the model through its prompt.
    app.wait_for_text(".context-hint", "4k context").await;
    app.wait_for_text(".context-hint", "tools through text")
        .await;
    app.send("What colour is the sky on a clear day? Answer in one sentence.")
        .await;
    // A real answer: some words, the turn over (no running chip, no Stop), no error.
    // The model's time is the machine's: as long as the slowest real run the suite
    // has seen, ten times over, not the app's 30 s.
    app.wait_for_js_within(
        "const md = document.querySelector('.message.assistant .md'); \
         return md && md.innerText.trim().split(/\\s+/).length >= 3 \
           && !document.querySelector('.message.assistant .chip') \
           && !document.querySelector('.running-chip') \
           && !document.querySelector('.stop');",
        REAL_MODEL_PATIENCE,
    )
    .await;
    assert_eq!(app.count(".message.assistant .notice.error").await, 0);
    let live = text_of(&app.wait_for(".message.assistant .md").await).await;
    app.screenshot("real-model-answer").await;
    app.quit().await;
    // What was stored reads as it was shown.
    let app = App::launch_with(&home, &server, &[("CAIRN_MODEL", "smollm2")]).await;
    app.open_chat("What colour is the sky").await;
    let stored = text_of(&app.wait_for(".message.assistant .md").await).await;
    assert_eq!(stored, live);
    app.quit().await;
}

/// How long a real model's answer may take in the window: SmolLM2's answers here take
/// 1–30 s; a busy machine slows it many times over.
const REAL_MODEL_PATIENCE: Duration = Duration::from_secs(600);

/// The call and offset the last "read the rest" note in a result names.
fn next_page(content: &str) -> Option<(String, usize)> {
    let at = content.rfind("{\"tool_call_id\": \"")?;
    let rest = &content[at + 18..];
    let (id, rest) = rest.split_once("\", \"offset\": ")?;
    let offset = rest.split('}').next()?.parse().ok()?;
    Some((id.to_owned(), offset))
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_4k_model_pages_a_long_file_back_and_answers_from_it() {
    let server = FakeServer::start().await;
    server.fallback("GET /v1/models", llama_cpp_models(4096));
    // A model that reads the file, follows each "read the rest" note to its end, and
    // answers from the last page.
    server.respond(CHAT, |request: &cairn_testkit::Recorded| {
        let body = request.json();
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        Reply::sse(if last["role"] == "tool" {
            match next_page(last["content"].as_str().unwrap()) {
                Some((id, offset)) => sse::tool_calls(&[(
                    &format!("p{offset}"),
                    "read_tool_result",
                    json!({"tool_call_id": id, "offset": offset}),
                )]),
                None => sse::text(&["The last note, 800, says the path ends at the gate."]),
            }
        } else {
            sse::tool_calls(&[("r1", "read_file", json!({"path": "notes.md"}))])
        })
    });
    let home = Home::new();
    let workspace = home.workspace();
    let notes: String = (1..=800)
        .map(|n| match n {
            800 => "note 800: the path ends at the gate\n".to_owned(),
            _ => format!("note {n:03}: the garden path runs past the old stone wall\n"),
        })
        .collect();
    std::fs::write(workspace.join("notes.md"), &notes).unwrap();
    let app = App::launch(&home, &server.url()).await;
    app.choose_workspace(&workspace).await;
    // In a folder, the whole toolbelt crowds 4k: the picker says so, and what waits.
    let hint = app
        .wait_for_text(".context-hint", "4k context · tools on demand")
        .await;
    let title = hint.attr("title").await.unwrap().unwrap_or_default();
    assert!(
        title
            .ends_with("loads the rest as it needs them: llm, memory, plans, subtasks, todo, web."),
        "{title}"
    );
    app.screenshot("4k-tools-on-demand").await;

    app.send("What does the last note in notes.md say?").await;
    app.wait_for_text(".message.assistant .md", "the path ends at the gate")
        .await;
    let chats = questions(&server);
    assert!(chats.len() >= 5, "paged in {} requests", chats.len());
    for (n, chat) in chats.iter().enumerate() {
        let tokens = cairn_testkit::wire::estimated_tokens(chat);
        assert!(
            tokens * 5 <= 4096 * 4,
            "request {n}: {tokens} of 4096 tokens"
        );
        assert!(chat["max_tokens"].as_u64().is_some_and(|max| max <= 1024));
    }
    // The first result the model read: the head, the tail, and the way to the rest.
    let first = chats[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(first.starts_with("note 001:"), "{first}");
    assert!(
        first.ends_with("note 800: the path ends at the gate\n"),
        "{first}"
    );
    assert!(next_page(&first).is_some(), "{first}");
    // One card a call: the read, then each page.
    let outline = app.outline().await;
    let cards = outline
        .iter()
        .filter(|line| line.contains(" card "))
        .count();
    assert_eq!(cards, chats.len() - 1, "{outline:?}");
    assert_eq!(outline[0], "0 card read_file", "{outline:?}");
    assert!(
        outline[1..cards]
            .iter()
            .all(|line| line == "0 card read_tool_result"),
        "{outline:?}"
    );
    app.screenshot("4k-paged-answer").await;

    // After a restart the chat reads as it did.
    let live = app.outline().await;
    app.quit().await;
    let app = App::launch(&home, &server.url()).await;
    app.open_chat("What does the last note in notes.md say?")
        .await;
    app.wait_for_text(".message.assistant .md", "the path ends at the gate")
        .await;
    assert_eq!(app.outline().await, live);
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_long_result_is_cut_for_the_model_and_shown_whole_in_its_card() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "r1",
            "read_file",
            json!({"path": "long.txt"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["I read it."])));
    let home = Home::new();
    let workspace = home.workspace();
    // About 90 KB: more than one result may take (50 KB), all of it one read.
    let lines: String = (1..=1500)
        .map(|n| format!("line {n:04} of a file longer than a small model takes in\n"))
        .collect();
    std::fs::write(workspace.join("long.txt"), &lines).unwrap();
    let app = App::launch(&home, &server.url()).await;
    app.choose_workspace(&workspace).await;
    app.send("Read the long file").await;
    app.wait_for_text(".message.assistant .md", "I read it.")
        .await;

    // The model read a cut that says how to read the rest.
    let followup = server.requests_to(CHAT)[1].json();
    let messages = followup["messages"].as_array().unwrap();
    let read = messages.iter().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(read.len() <= 50_000, "{} bytes", read.len());
    assert!(read.starts_with("line 0001"), "the head is kept");
    assert!(
        read.trim_end()
            .ends_with("line 1500 of a file longer than a small model takes in")
    );
    assert!(
        read.contains("read_tool_result {\"tool_call_id\": \"r1\""),
        "the way to the rest"
    );

    // The card shows its start, and every line on request.
    let offered = text_of(&app.wait_for_text(".show-all", "Show all").await).await;
    app.screenshot("long-result-start").await;
    app.click(".show-all").await;
    let shown = text_of(&app.wait_for_text(".card-result", "line 1500").await).await;
    assert_eq!(shown.trim_end(), lines.trim_end());
    assert_eq!(app.count(".show-all").await, 0);
    app.screenshot("long-result-whole").await;
    app.quit().await;

    // After a restart the card offers the same, and shows every line the tool returned.
    let app = App::launch(&home, &server.url()).await;
    app.open_chat("Read the long file").await;
    let card_head = ".card[data-card='r1'] > .card-head";
    app.wait_for(card_head).await;
    if app
        .js(&format!(
            "return document.querySelector(\"{card_head}\").getAttribute('aria-expanded');"
        ))
        .await
        != json!("true")
    {
        app.click(card_head).await;
    }
    let stored = text_of(&app.wait_for_text(".show-all", "Show all").await).await;
    assert_eq!(
        stored, offered,
        "the stored card offers what the live one did"
    );
    app.click(".show-all").await;
    let shown = text_of(&app.wait_for_text(".card-result", "line 1500").await).await;
    assert_eq!(shown.trim_end(), lines.trim_end());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_server_settings_say_what_is_wrong_and_how_to_fix_it() {
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"test-model","object":"model"}]}"#,
        ),
    );
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.click(".chat-head [aria-label='Settings']").await;
    // The harness starts the app with CAIRN_BASE_URL: the window says so.
    app.wait_for_text(".env-overrides", "CAIRN_BASE_URL=").await;
    app.wait_for_text(".status", "Connected: 1 model.").await;
    assert_placeholders_fit(&app, ".settings").await;

    // An Ollama server at an OpenAI-style address: the error says so and offers the way out.
    app.choose_in(".dialect", "ollama").await;
    let address = app.wait_for(".base-url").await;
    address.clear().await.unwrap();
    address
        .send_keys(format!("{}/v1", server.url()))
        .await
        .unwrap();
    app.wait_for_text(".status", "Checked when you stop typing")
        .await;
    let failure = app.wait_for_text(".status.error-text", "404").await;
    // In the theme's danger colour, not the muted grey of a hint.
    let colours = app
        .js("const probe = document.createElement('span'); document.body.append(probe); \
             probe.style.color = 'var(--danger)'; const danger = getComputedStyle(probe).color; \
             probe.style.color = 'var(--muted)'; const muted = getComputedStyle(probe).color; \
             probe.remove(); \
             return [getComputedStyle(document.querySelector('.status.error-text')).color, danger, muted];")
        .await;
    assert_eq!(colours[0], colours[1], "{colours}");
    assert_ne!(colours[1], colours[2], "{colours}");
    assert!(text_of(&failure).await.contains("OpenAI-compatible"));
    app.screenshot("settings-dialect-hint").await;
    app.click(".switch-dialect").await;
    app.wait_for_text(".status", "Connected: 1 model.").await;
    assert_eq!(
        app.js("return document.querySelector('.dialect').value;")
            .await,
        json!("openai")
    );

    // A typo in the address is explained in words.
    let address = app.wait_for(".base-url").await;
    address.clear().await.unwrap();
    address.send_keys("localhost:11434").await.unwrap();
    let said = text_of(&app.wait_for_text(".status.error-text", "http://").await).await;
    assert!(said.contains("needs http:// or https://"), "{said}");
    assert!(!said.contains("relative URL"), "{said}");

    // Saving an address nothing answers at: saved, and said to be unreachable.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let address = app.wait_for(".base-url").await;
    address.clear().await.unwrap();
    address.send_keys(&nowhere).await.unwrap();
    app.wait_for_text(".status.error-text", "could not connect")
        .await;
    app.click(".save-settings").await;
    app.wait_for_text(".toast", "Settings saved, but the server cannot be used")
        .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_first_run_screen_offers_the_other_api_when_the_address_speaks_it() {
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"test-model","object":"model"}]}"#,
        ),
    );
    let home = Home::new();
    let app = App::launch_first_run(&home, &server.url()).await;
    app.click(".custom-server summary").await;
    app.choose_in(".custom-server select", "ollama").await;
    let address = app.wait_for(".custom-url").await;
    address
        .send_keys(format!("{}/v1", server.url()))
        .await
        .unwrap();
    app.click(".connect").await;
    // Said beside the address, not in a toast that leaves: what failed and the way out.
    let failure = text_of(
        &app.wait_for_text(".custom-server .status.error-text", "404")
            .await,
    )
    .await;
    assert!(failure.contains("OpenAI-compatible"), "{failure}");
    assert_eq!(app.count(".model-choice").await, 0);
    app.screenshot("first-run-dialect-hint").await;
    app.click(".custom-server .switch-dialect").await;
    app.wait_for_text(".model-choice", "test-model").await;
    assert_eq!(
        app.js("return document.querySelector('.custom-server select').value;")
            .await,
        json!("openai")
    );
    assert_eq!(app.count(".custom-server .status.error-text").await, 0);
    app.click(".model-choice").await;
    app.wait_for(".composer-input").await;
    app.quit().await;
}
