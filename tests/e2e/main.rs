//! End to end: the real app binary under WebDriver, its engine pointed at a fake
//! OpenAI-compatible server. Run by `scripts/test` (under Xvfb and a session bus);
//! plain `cargo test` skips them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;
mod session;

use std::time::Duration;

use cairn_testkit::{FakeServer, Reply, sse};
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
    let answer = app
        .wait_for_text(".message.assistant .md", "Hello from Cairn.")
        .await;
    assert_eq!(
        answer
            .find_all(thirtyfour::By::Css("strong"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        app.count(".message.assistant li").await,
        2,
        "Markdown lists render"
    );
    app.wait_for_text(".message.user", "Say hello").await;
    app.wait_for_text(".thread-title", "Say hello").await;
    let request = first_chat_request(&server);
    assert_eq!(request["model"], "test-model");
    assert_eq!(
        request["messages"].as_array().unwrap().last().unwrap()["content"],
        "Say hello"
    );
    app.screenshot("streamed-answer").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn parallel_subtasks_nest_and_come_back_after_a_restart() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[
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
        ])),
    );
    // Whichever subtask asks first gets the next reply: every order ends after four.
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("l1", "list_dir", json!({"path": "."}))])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("l2", "list_dir", json!({"path": "."}))])),
    );
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
    app.click(".card .card .card-head").await;
    app.wait_for(".card .card .card-body").await;
    app.screenshot("nested-subtasks-expanded").await;
    app.quit().await;

    // The same database after a restart: the thread and its cards are back.
    let app = App::launch(&home, &server.url()).await;
    app.wait_for_text(".thread-title", "Look at the project")
        .await
        .click()
        .await
        .unwrap();
    app.wait_for_text(".message.assistant .md", "Both subtasks are done.")
        .await;
    app.wait_for_text(".card-label", "Survey the files").await;
    app.wait_for_text(".card-label", "Check the readme").await;
    assert_nested_cards_start_collapsed(&app).await;
    app.screenshot("after-restart").await;
    app.quit().await;
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
    let home = Home::new();
    let workspace = home.workspace();
    let notes = workspace.join("notes.md");
    let app = App::launch(&home, &server.url()).await;

    app.choose_workspace(&workspace).await;
    app.send("Write the notes").await;
    let approval = app.wait_for_text(".approval", "write_file").await;
    let text = text_of(&approval).await;
    assert!(
        text.contains("notes.md") && text.contains("\"kept\""),
        "the full arguments: {text}"
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
    app.wait_for(".card.failed").await;
    assert!(!notes.exists(), "a denied write writes nothing");
    app.screenshot("approval-denied").await;
    app.quit().await;
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
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Permission mode: plan")
    );
    app.screenshot("plan-mode-blocked").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn stop_mid_stream_keeps_the_partial_text() {
    let server = FakeServer::start().await;
    server.push(CHAT, slow_answer(&numbered("word", 30), 120));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Write a long text").await;
    app.wait_for_text(".message.assistant .md", "word2").await;
    app.wait_for(".stop").await;
    // Esc in the composer is the Stop button's shortcut.
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_text(".notice.muted", "Stopped.").await;
    let shown = text_of(&app.wait_for(".message.assistant .md").await).await;
    assert!(shown.starts_with("word1 word2"), "{shown}");
    assert!(!shown.contains("word30"), "the stream was stopped: {shown}");
    app.screenshot("stopped").await;

    // What was kept is what the store has: open the thread afresh.
    app.click(".new-chat").await;
    app.wait_for_text(".thread-title", "Write a long text")
        .await
        .click()
        .await
        .unwrap();
    let stored = text_of(&app.wait_for_text(".message.assistant .md", "word1").await).await;
    assert_eq!(stored.trim(), shown.trim());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_reply_finished_out_of_sight_notifies_and_the_click_opens_its_chat() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::text(&["Done while you were away."])).head_delay(Duration::from_secs(2)),
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
    app.quit().await;
}

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
    server.push(CHAT, slow_answer(&pieces, 90));
    let home = Home::new();
    let app = App::launch(&home, &server.url()).await;
    app.send("Stream for a while").await;
    app.wait_for_text(".message.assistant .md", "part2").await;
    app.click(".new-chat").await;
    app.wait_for(".welcome").await;

    app.wait_for_text(".thread-title", "Stream for a while")
        .await
        .click()
        .await
        .unwrap();
    // What streamed while the chat was closed is there at once, in order...
    let shown = text_of(&app.wait_for_text(".message.assistant .md", "part1").await).await;
    assert!(shown.starts_with("part1 part2"), "{shown}");
    // ...and the rest arrives live, exactly once.
    let done = text_of(&app.wait_for_text(".message.assistant .md", "part24").await).await;
    assert_eq!(done.trim(), pieces.concat().trim());
    app.quit().await;
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
    app.js("document.querySelector('.notice.error button').click();")
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
    for _ in 0..5 {
        // 110, 125, 150, 175, 200%.
        app.press_chord("=").await;
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
fn numbered(word: &str, count: usize) -> Vec<String> {
    (1..=count).map(|n| format!("{word}{n} ")).collect()
}

/// An answer streamed slowly enough to act on mid-way: `piece_len` bytes every 250 ms.
fn slow_answer(pieces: &[String], piece_len: usize) -> Reply {
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    Reply::sse(sse::text(&pieces)).paced(piece_len, Duration::from_millis(250))
}

/// The first chat request the app made (it also lists the server's models at start-up).
fn first_chat_request(server: &FakeServer) -> serde_json::Value {
    let requests = server.requests();
    let chat = requests
        .iter()
        .find(|request| request.path == "/v1/chat/completions");
    chat.expect("the app asked the model").json()
}
