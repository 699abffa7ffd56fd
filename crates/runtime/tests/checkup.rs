//! A model's check-up, against a fake server whose "model" reads what it is sent: how
//! it is shown its results is what got it to answer both probes, and is kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cairn_core::Limits;
use cairn_providers::{Dialect, Endpoint, Sampling, Server};
use cairn_runtime::{CallStyle, ModelChoice, Runtime};
use cairn_store::Store;
use cairn_testkit::{FakeServer, Recorded, Reply, sse};
use serde_json::{Value, json};

const CHAT: &str = "POST /v1/chat/completions";
const MODELS: &str = "GET /v1/models";

/// What the fake model does once it has a result.
#[derive(Clone, Copy)]
enum Reads {
    /// Answers from the template's tool message, for every file.
    Natively,
    /// Answers from the template's tool message for `probe.txt` only; from results
    /// restated in words, always.
    NativelyOnce,
    /// Answers only from results restated in words.
    InWords,
}

/// The fake model: a call to read the file its question names, written as text; then
/// the code word, when the result reaches it in a way it reads.
fn model(reads: Reads) -> impl Fn(&Recorded) -> Reply {
    move |request| {
        let body = request.json();
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        let content = last["content"].as_str().unwrap_or_default();
        let file = if messages.iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|text| text.contains("minutes.txt"))
        }) {
            "minutes.txt"
        } else {
            "probe.txt"
        };
        let word = |text: &str| {
            text.split("The code word is ")
                .nth(1)
                .and_then(|rest| rest.split('.').next())
                .map(str::to_owned)
        };
        let text = match last["role"].as_str() {
            Some("tool") => match reads {
                Reads::Natively => word(content),
                Reads::NativelyOnce if file == "probe.txt" => word(content),
                // What the 1.5B said to a result it did not read.
                _ => None,
            }
            .map_or_else(
                || "I changed the function call to `read_file`.".to_owned(),
                |word| format!("The code word is {word}."),
            ),
            Some("user") if content.starts_with("The result of read_file") => {
                format!("The code word is {}.", word(content).unwrap())
            }
            _ => format!(
                "```json\n{}\n```",
                json!({"name": "read_file", "arguments": {"path": file}})
            ),
        };
        Reply::sse(sse::text(&[&text]))
    }
}

/// The check-up of the fake model that `reads` so, and the requests it was sent.
async fn checked(reads: Reads) -> (cairn_runtime::Checkup, Vec<Value>) {
    let server = FakeServer::start().await;
    server.fallback(
        MODELS,
        Reply::json(
            200,
            json!({"data": [{"id": "m", "meta": {"n_ctx": 8192, "n_params": 494_032_768}}]})
                .to_string(),
        ),
    );
    server.respond(CHAT, model(reads));
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    let runtime = Runtime::new(store, Limits::default());
    let client = Server::connect(&Endpoint::new(Dialect::Openai, server.url())).unwrap();
    let choice = ModelChoice {
        client: client.model_client(),
        dialect: "openai".into(),
        base_url: server.url(),
        model: "m".into(),
        sampling: Sampling::default(),
    };
    assert!(
        runtime.needs_checkup(&choice).await.unwrap(),
        "small, never checked"
    );
    let checkup = runtime.check_model(&choice).await.unwrap();
    assert!(
        !runtime.needs_checkup(&choice).await.unwrap(),
        "checked once"
    );
    let kept = runtime
        .model_checkup(&server.url(), "m")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept, checkup, "kept as found");
    let bodies = server
        .requests_to(CHAT)
        .iter()
        .map(Recorded::json)
        .collect();
    (checkup, bodies)
}

#[tokio::test]
async fn a_model_that_answers_from_tool_messages_keeps_them() {
    let (checkup, bodies) = checked(Reads::Natively).await;
    assert_eq!(checkup.calls, CallStyle::Text);
    assert!(checkup.answered);
    assert_eq!(
        checkup.said(),
        "answers from tool results (writes calls as text)"
    );
    // Two probes, each a call and an answer.
    assert_eq!(bodies.len(), 4, "{bodies:#?}");
    assert_eq!(
        bodies[1]["messages"].as_array().unwrap().last().unwrap()["role"],
        "tool"
    );
}

#[tokio::test]
async fn one_lucky_answer_is_not_enough_and_the_way_that_answers_both_is_kept() {
    let (checkup, bodies) = checked(Reads::NativelyOnce).await;
    assert!(checkup.answered);
    assert_eq!(
        checkup.said(),
        "needs the question restated (writes calls as text)"
    );
    let restated = bodies
        .iter()
        .filter_map(|body| body["messages"].as_array().unwrap().last())
        .filter_map(|last| last["content"].as_str())
        .filter(|content| content.starts_with("The result of read_file"))
        .collect::<Vec<_>>();
    assert_eq!(
        restated.len(),
        2,
        "both probes again, restated: {bodies:#?}"
    );
    assert!(
        restated[1].ends_with(
            "With this result, answer in one sentence: Tell me the code word written in \
             minutes.txt."
        ),
        "{}",
        restated[1]
    );
}

#[tokio::test]
async fn a_model_that_answers_only_from_words_is_shown_its_results_in_words() {
    let (checkup, _) = checked(Reads::InWords).await;
    assert!(checkup.answered);
    assert_eq!(
        checkup.said(),
        "needs the question restated (writes calls as text)"
    );
}

#[tokio::test]
async fn every_check_up_asks_the_same_so_a_greedy_model_gets_the_same_verdict() {
    let (_, first) = checked(Reads::NativelyOnce).await;
    let (_, second) = checked(Reads::NativelyOnce).await;
    assert_eq!(first, second, "the same words and folder each time");
    let opening = first[0]["messages"][1]["content"].as_str().unwrap();
    assert!(opening.contains("the folder `project`."), "{opening}");
}
