//! Models on more than one machine, in the window: a subtask's card names the server
//! its profile runs on, says when it waits for that server's only slot, and says the
//! same after a restart; Settings lists the server with what it said of itself.

use cairn_protocol::Dialect;
use cairn_protocol::desktop::SavedEndpoint;
use cairn_store::Store;
use std::time::Duration;

use cairn_testkit::{FakeServer, Piece, Reply, machines, sse};
use serde_json::json;

use crate::CHAT;
use crate::harness::{App, Home, text_of};
use crate::model::Model;

/// A llama.cpp-like box with one slot: the first answer it starts waits at the gate
/// `first`, the second does not.
async fn gpu_box() -> FakeServer {
    let gpu = machines::llama_box(1, Duration::ZERO, "unused").await;
    gpu.push(
        CHAT,
        Reply::sse(Vec::new())
            .then(Piece::Gate("first".into()))
            .then(Piece::Bytes(sse::text(&["Counted on the box."]))),
    );
    gpu.push(CHAT, Reply::sse(sse::text(&["Sorted on the box."])));
    gpu
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn subtask_cards_name_the_machine_they_run_on_and_wait_for_its_slot() {
    let model = Model::start().await;
    model.says_and_calls(
        "Two jobs for the GPU box.",
        &[
            (
                "s1",
                "run_subtask",
                json!({"title": "Count", "instructions": "count", "agent": "boxed"}),
            ),
            (
                "s2",
                "run_subtask",
                json!({"title": "Sort", "instructions": "sort", "agent": "boxed"}),
            ),
        ],
    );
    model.says(&["Both came back."]);
    let gpu = gpu_box().await;
    let home = Home::new();
    machines::profile_on(&home.agents_dir(), "boxed", "gpu");
    let store = Store::open(home.db()).await.unwrap();
    store
        .set_setting(
            cairn_runtime::SERVERS_KEY,
            &vec![SavedEndpoint {
                name: "gpu".into(),
                dialect: Dialect::Openai,
                base_url: gpu.url(),
                slots: None,
            }],
        )
        .await
        .unwrap();
    drop(store);

    let app = model.launch(&home).await;
    app.send("Use the box").await;
    // One subtask holds the box's only slot (its answer waits at the gate); the other
    // says it waits for it.
    app.wait_for_text(".card-machine.waiting", "waiting for a free slot on gpu")
        .await;
    let running = app
        .wait_for_text(".card-machine:not(.waiting)", "on gpu")
        .await;
    assert_eq!(text_of(&running).await, "on gpu");
    app.screenshot("server-slot-wait").await;
    assert_eq!(gpu.requests_to(CHAT).len(), 1, "one request at a time");
    gpu.open_gate("first");
    app.wait_for_text(".message.assistant .md", "Both came back.")
        .await;
    let shown = machines(&app).await;
    assert_eq!(shown, ["on gpu", "on gpu"], "both cards name their server");
    assert_eq!(gpu.peak_in_flight(CHAT), 1);
    app.screenshot("server-cards").await;

    // Settings lists the box with what it said of itself.
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(
        ".saved-servers .server-facts",
        "llama.cpp server · 1 slot · 8k window",
    )
    .await;
    app.screenshot("settings-servers").await;
    crate::a11y::assert_accessible(&app, "Settings with a named server").await;
    app.quit().await;

    // After a restart the stored cards say the same.
    let app = model.launch(&home).await;
    app.open_chat("Use the box").await;
    app.wait_for_text(".message.assistant .md", "Both came back.")
        .await;
    assert_eq!(
        machines(&app).await,
        shown,
        "the reload reads as the live view"
    );
    app.quit().await;
}

/// What each card's server label says, in page order.
async fn machines(app: &App) -> Vec<String> {
    let said = app
        .js("return [...document.querySelectorAll('.card-machine')].map(e => e.innerText);")
        .await;
    serde_json::from_value(said).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_server_kept_in_settings_says_what_it_is_once_saved() {
    let gpu = machines::llama_box(2, Duration::ZERO, "unused").await;
    let home = Home::new();
    let app = App::launch(&home, &gpu.url()).await;
    app.click(".chat-head [aria-label='Settings']").await;
    let name = app.wait_for(".saved-servers .row input").await;
    name.send_keys("box").await.unwrap();
    app.click(".saved-servers .row button").await;
    app.wait_for_text(".saved-servers li", "box").await;
    app.click(".save-settings").await;
    app.wait_for_text(".toast", "Settings saved.").await;
    // Without closing Settings: the server just kept says what it is.
    app.wait_for_text(
        ".saved-servers .server-facts",
        "llama.cpp server · 2 slots · 8k window",
    )
    .await;
    app.screenshot("settings-server-kept").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_prompt_the_server_cut_is_said_under_the_answer_live_and_after_a_restart() {
    let model = Model::start().await;
    model.calls("r1", "read_file", json!({"path": "notes.md"}));
    // It read 1,100 tokens of a prompt of about 8,000: the start was cut.
    model.push(
        CHAT,
        Reply::sse(sse::text_after_reading(
            &["The notes are about a garden."],
            1100,
        )),
    );
    let home = Home::new();
    let workspace = home.workspace();
    let notes: String = (1..=400)
        .map(|n| format!("note {n:03}: the garden path runs past the wall\n"))
        .collect();
    std::fs::write(workspace.join("notes.md"), notes).unwrap();

    let app = model.launch(&home).await;
    app.choose_workspace(&workspace).await;
    app.send("What are the notes about?").await;
    app.wait_for_text(".message.assistant .md", "about a garden.")
        .await;
    let notice = ".message.assistant .notice.prompt-cut";
    let live = text_of(&app.wait_for_text(notice, "read only 1,100 of about").await).await;
    assert!(
        live.contains("From now on the prompt is fitted to 1,100 tokens."),
        "{live}"
    );
    let read = crate::pixels::readable_text(&app, notice, "prompt-cut").await;
    crate::pixels::assert_reads(
        &read,
        &["read only", "fitted to"],
        "the cut prompt's notice",
    );
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("What are the notes about?").await;
    app.wait_for_text(".message.assistant .md", "about a garden.")
        .await;
    let stored = text_of(&app.wait_for(notice).await).await;
    assert_eq!(stored, live, "the reload says what the live answer said");
    app.quit().await;
}
