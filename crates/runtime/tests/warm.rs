//! Reading a prompt ahead: a local server reads what a turn opens with (instructions,
//! tools, the thread so far) before the question exists, through the real OpenAI
//! client against a fake llama.cpp server; the question then adds only itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use cairn_core::Limits;
use cairn_protocol::{PermissionMode, TurnStatus};
use cairn_providers::{Dialect, Endpoint, Sampling, Server};
use cairn_runtime::{ModelChoice, Runtime};
use cairn_store::Store;
use cairn_testkit::{FakeServer, Piece, Reply, sse};
use serde_json::{Value, json};

const CHAT: &str = "POST /v1/chat/completions";
const MODELS: &str = "GET /v1/models";

async fn runtime() -> (tempfile::TempDir, Arc<Runtime>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    (dir, Runtime::new(store, Limits::default()))
}

/// A llama.cpp server: it lists the window it runs with.
async fn local_server() -> FakeServer {
    let server = FakeServer::start().await;
    server.fallback(
        MODELS,
        Reply::json(
            200,
            json!({"data": [{"id": "m", "meta": {"n_ctx": 8192}}]}).to_string(),
        ),
    );
    server
}

fn choice(server: &FakeServer) -> ModelChoice {
    let client = Server::connect(&Endpoint::new(Dialect::Openai, server.url())).unwrap();
    ModelChoice {
        client: client.model_client(),
        dialect: "openai".into(),
        base_url: server.url(),
        model: "m".into(),
        sampling: Sampling::default(),
    }
}

/// An answer of `text` the server holds back until the test opens `gate`.
fn held(gate: &str, text: &str) -> Reply {
    Reply::new(200, "text/event-stream")
        .then(Piece::Gate(gate.into()))
        .then(Piece::Bytes(sse::text(&[text])))
}

/// Waits for the server's first chat request.
async fn until_asked(server: &FakeServer, what: &str) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while server.requests_to(CHAT).is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}

fn chat_bodies(server: &FakeServer) -> Vec<Value> {
    server
        .requests_to(CHAT)
        .iter()
        .map(cairn_testkit::Recorded::json)
        .collect()
}

/// Asserts that `warm` read ahead exactly what `turn` then sent before its question:
/// in a `new_chat`, up to the thread's context block that opens the question.
fn read_ahead(warm: &Value, turn: &Value, new_chat: bool) {
    assert_eq!(warm["max_tokens"], 1, "a warm-up writes next to nothing");
    let (ahead, sent) = (
        warm["messages"].as_array().unwrap(),
        turn["messages"].as_array().unwrap(),
    );
    let question = sent.last().unwrap();
    assert_eq!(question["role"], "user");
    if new_chat {
        let (context, before) = ahead.split_last().unwrap();
        assert_eq!(before, &sent[..sent.len() - 1]);
        assert_eq!(context["role"], "user");
        let context = context["content"].as_str().unwrap();
        assert!(context.starts_with("<context>"), "{context}");
        assert!(
            question["content"].as_str().unwrap().starts_with(context),
            "the question opens with the block read ahead: {question}"
        );
    } else {
        assert_eq!(ahead.as_slice(), &sent[..sent.len() - 1]);
    }
    assert_eq!(warm["tools"], turn["tools"]);
    assert!(
        !turn["tools"].as_array().unwrap().is_empty(),
        "the tools were read ahead too"
    );
}

#[tokio::test]
async fn a_new_chat_is_read_ahead_and_its_question_waits_for_the_reading() {
    let (dir, runtime) = runtime().await;
    let folder = dir.path().join("project");
    std::fs::create_dir(&folder).unwrap();
    let server = local_server().await;
    let choice = choice(&server);
    // The warm-up's answer is held until the test lets it go.
    server.push(CHAT, held("read", "."));
    server.push(CHAT, Reply::sse(sse::text(&["Hello."])));
    let warming = {
        let (runtime, choice, folder) = (Arc::clone(&runtime), choice.clone(), folder.clone());
        tokio::spawn(async move {
            let draft = (PermissionMode::Default, folder.to_str());
            runtime.warm(None, draft, &choice).await.unwrap();
        })
    };
    until_asked(&server, "the prompt is sent ahead").await;
    // The chat is made as the composer makes it, and the question sent.
    let thread = runtime
        .new_thread("Say hello.", PermissionMode::Default)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(&folder))
        .await
        .unwrap();
    let live = runtime
        .send(&thread.id, "Say hello.", choice.clone())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.requests_to(CHAT).len(),
        1,
        "the question waits while the prompt is read"
    );
    server.open_gate("read");
    warming.await.unwrap();
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    let bodies = chat_bodies(&server);
    assert_eq!(bodies.len(), 2);
    read_ahead(&bodies[0], &bodies[1], true);

    // The chat's next question: the thread so far is read ahead with the rest.
    server.push(CHAT, Reply::sse(sse::text(&["."])));
    server.push(CHAT, Reply::sse(sse::text(&["Hello again."])));
    let draft = (PermissionMode::Plan, None);
    runtime
        .warm(Some(&thread.id), draft, &choice)
        .await
        .unwrap();
    let live = runtime.send(&thread.id, "Again.", choice).await.unwrap();
    live.finished().await.unwrap();
    let bodies = chat_bodies(&server);
    assert_eq!(bodies.len(), 4);
    read_ahead(&bodies[2], &bodies[3], false);
    let ahead = bodies[2]["messages"].as_array().unwrap();
    assert_eq!(
        ahead.last().unwrap()["content"],
        "Hello.",
        "the thread so far, not the draft's"
    );
}

#[tokio::test]
async fn a_server_that_says_nothing_of_its_window_is_sent_nothing_ahead() {
    let (_dir, runtime) = runtime().await;
    // A hosted API: it lists models and nothing about them.
    let server = FakeServer::start().await;
    server.fallback(MODELS, Reply::json(200, r#"{"data":[{"id":"m"}]}"#));
    let choice = choice(&server);
    runtime
        .warm(None, (PermissionMode::Default, None), &choice)
        .await
        .unwrap();
    assert!(
        server.requests_to(CHAT).is_empty(),
        "{:?}",
        server.requests()
    );
}

#[tokio::test]
async fn a_server_writing_an_answer_is_sent_nothing_ahead() {
    let (_dir, runtime) = runtime().await;
    let server = local_server().await;
    let choice = choice(&server);
    server.push(CHAT, held("answer", "Hello."));
    let thread = runtime
        .new_thread("Say hello.", PermissionMode::Default)
        .await
        .unwrap();
    let live = runtime
        .send(&thread.id, "Say hello.", choice.clone())
        .await
        .unwrap();
    until_asked(&server, "the question is sent").await;
    // Another chat opens while the answer is written: it would only slow it down.
    runtime
        .warm(None, (PermissionMode::Default, None), &choice)
        .await
        .unwrap();
    assert_eq!(server.requests_to(CHAT).len(), 1);
    server.open_gate("answer");
    assert_eq!(live.finished().await.unwrap().status, TurnStatus::Completed);
}
