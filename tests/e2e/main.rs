//! End to end: the real app binary under WebDriver, its engine pointed at a fake
//! OpenAI-compatible server. Run by `scripts/test` (under Xvfb and a session bus);
//! plain `cargo test` skips them.
//!
//! One file per feature (approvals, answers, subtasks, notifications, MCP, …); here
//! the first answer, the web process's own settings, and the answers' builders the
//! files share. Launching and driving the app is `harness`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a11y;
mod accessibility;
mod answers;
mod approvals;
mod changes;
mod chats;
mod desktop;
#[path = "../support/fake_notifications.rs"]
mod fake_notifications;
#[path = "../support/fake_portal.rs"]
mod fake_portal;
mod follow;
mod harness;
mod layout;
mod mcp;
mod model;
mod models;
mod notifications;
mod pixels;
#[path = "../support/private_bus.rs"]
mod private_bus;
mod servers;
mod session;
mod subtasks;

use std::time::Duration;

use crate::model::Model;
use cairn_testkit::{FakeServer, Piece, Reply, sse};
use harness::Home;
use serde_json::json;

const CHAT: &str = "POST /v1/chat/completions";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_message_gets_its_streamed_answer() {
    let model = Model::start().await;
    model.push(
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
    let app = model.launch(&home).await;
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
    let request = first_chat_request(&model);
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
    let model = Model::start().await;
    let home = Home::new();
    let app = model.launch(&home).await;
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
    let model = Model::start().await;
    let home = Home::new();
    let app = model.launch(&home).await;
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
