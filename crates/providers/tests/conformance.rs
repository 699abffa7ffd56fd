//! What every dialect's client does alike, run against each over real HTTP to the fake
//! server: a busy server retried and the wait announced, a connection closed before
//! any answer asked again once, a cut or stalled stream keeping what arrived, nothing
//! listening named as such, an unknown model answered with the models there are, and
//! a tool's arguments sent in the order a call writes them.
//! A dialect is its [`Wire`]: how it streams, errs and lists. What only one dialect
//! does (its request shape, its recordings decoded piece by piece, its capability
//! fallbacks) stays in `ollama.rs` and `openai.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use cairn_protocol::{ChatMessage, ToolSpec};
use cairn_providers::http::RetryPolicy;
use cairn_providers::ollama::{OllamaClient, OllamaConfig};
use cairn_providers::openai::{OpenAiClient, OpenAiConfig};
use cairn_providers::{ChatRequest, ModelClient, ModelEvent, ProviderError, Sampling};
use cairn_testkit::{FakeServer, Piece, Reply, fixture};
use futures_util::StreamExt;
use serde_json::json;

/// How one dialect says what these tests need.
struct Wire {
    /// Where a chat is sent.
    chat: &'static str,
    /// An unfinished answer's piece of text, as the dialect streams it.
    piece: fn(&str) -> Vec<u8>,
    /// What ends an answer.
    end: &'static [u8],
    /// A streamed answer's reply.
    stream: fn(Vec<u8>) -> Reply,
    /// An error's body in the dialect's shape.
    error: fn(&str) -> String,
    /// A recorded answer, and how what it says (reasoning, then text) begins.
    recording: (&'static str, &'static str),
    /// The server's answer to a chat for `bad_model`, which it lacks.
    no_such_model: fn() -> Vec<u8>,
    /// Where the server lists its models, the list, and the names in it.
    models: (&'static str, fn() -> Vec<u8>, &'static str),
    /// What the client advises after naming a model the server lacks.
    get_it: &'static str,
    /// How the client says to start the server when nothing listens, if it does.
    start_it: Option<&'static str>,
    /// Answers what the client asks before a chat (Ollama's model details).
    prepare: fn(&FakeServer),
    /// A client of the server at `url`: tries a busy server `attempts` more times,
    /// waiting `first_wait` at first, and calls a stream silent for `idle` stalled.
    client:
        fn(url: &str, attempts: u32, first_wait: Duration, idle: Duration) -> Box<dyn ModelClient>,
}

const OLLAMA: Wire = Wire {
    chat: "POST /api/chat",
    piece: |text| {
        let mut line =
            json!({"message": {"role": "assistant", "content": text}, "done": false}).to_string();
        line.push('\n');
        line.into_bytes()
    },
    end: b"{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\"}\n",
    stream: |bytes| Reply::ndjson(bytes),
    error: |message| json!({ "error": message }).to_string(),
    recording: ("ollama/chat_stream_thinking.ndjson", "Thinking Process"),
    no_such_model: || fixture("ollama/error_model_not_found.json"),
    models: (
        "GET /api/tags",
        || fixture("ollama/docs_tags.json"),
        "deepseek-r1:latest, llama3.2:latest",
    ),
    get_it: "Pull it with `cairn pull bad_model`, or choose one it has.",
    start_it: Some("Is Ollama running? Start it with `ollama serve`."),
    prepare: |server| {
        server.fallback(
            "POST /api/show",
            Reply::json(
                200,
                json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 8192}})
                    .to_string(),
            ),
        );
    },
    client: |url, attempts, first_wait, idle| {
        let mut config = OllamaConfig::new(url);
        config.retry = retry(attempts, first_wait);
        config.idle_timeout = idle;
        Box::new(OllamaClient::new(config).unwrap())
    },
};

const OPENAI: Wire = Wire {
    chat: "POST /v1/chat/completions",
    piece: |text| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": text}}]})
        )
        .into_bytes()
    },
    end: b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    stream: |bytes| Reply::sse(bytes),
    error: |message| json!({ "error": { "message": message } }).to_string(),
    recording: ("openai/plain_stream_with_usage.sse", "I'm unable"),
    no_such_model: || {
        json!({"error": {"message": "The model `bad_model` does not exist.", "type": "NotFoundError", "code": 404}})
            .to_string()
            .into_bytes()
    },
    models: (
        "GET /v1/models",
        || br#"{"data":[{"id":"qwen3-8b"},{"id":"llama-3.2-3b"}]}"#.to_vec(),
        "qwen3-8b, llama-3.2-3b",
    ),
    get_it: "Load it in the server, or choose one it has.",
    start_it: None,
    prepare: |_| {},
    client: |url, attempts, first_wait, idle| {
        let mut config = OpenAiConfig::new(url);
        config.retry = retry(attempts, first_wait);
        config.idle_timeout = idle;
        Box::new(OpenAiClient::new(config).unwrap())
    },
};

fn retry(attempts: u32, first_delay: Duration) -> RetryPolicy {
    RetryPolicy {
        attempts,
        first_delay,
        max_delay: first_delay.max(Duration::from_millis(50)),
    }
}

/// Each conformance test, once per dialect: `ollama::name` and `openai::name`.
macro_rules! for_each_dialect {
    ($($name:ident),* $(,)?) => {
        mod ollama {
            $(#[tokio::test] async fn $name() { super::$name(&super::OLLAMA).await })*
        }
        mod openai {
            $(#[tokio::test] async fn $name() { super::$name(&super::OPENAI).await })*
        }
    };
}

for_each_dialect!(
    a_busy_server_is_retried_with_backoff_then_given_up_on,
    the_wait_before_a_retry_is_announced_before_it_begins,
    a_connection_closed_unanswered_is_asked_again_once,
    a_cut_or_stalled_stream_keeps_what_arrived,
    nothing_listening_is_named_as_unreachable,
    an_unknown_model_lists_the_ones_there_are,
    a_tools_arguments_are_sent_in_the_order_a_call_writes_them,
);

/// What a stream came to.
#[derive(Debug, Default, PartialEq)]
struct Streamed {
    said: String,
    reconnects: Vec<u32>,
    error: Option<ProviderError>,
}

async fn ask(client: &dyn ModelClient, model: &str) -> Streamed {
    let mut streamed = Streamed::default();
    let mut events = client.stream_chat(request(model));
    while let Some(event) = events.next().await {
        match event {
            Ok(ModelEvent::Text(text) | ModelEvent::Reasoning(text)) => {
                streamed.said.push_str(&text);
            }
            Ok(ModelEvent::Reconnecting { attempt, .. }) => streamed.reconnects.push(attempt),
            Ok(_) => {}
            Err(err) => {
                assert!(streamed.error.is_none(), "a stream ends at its first error");
                streamed.error = Some(err);
            }
        }
    }
    streamed
}

fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![ChatMessage::user("hi")],
        tools: Vec::new().into(),
        sampling: Sampling::default(),
        origin: Default::default(),
        answer_only: false,
    }
}

/// A short answer, whole: "Hello."
fn hello(wire: &Wire) -> Reply {
    let mut bytes = (wire.piece)("Hello.");
    bytes.extend_from_slice(wire.end);
    (wire.stream)(bytes)
}

const QUICK: Duration = Duration::from_millis(10);
const PATIENT: Duration = Duration::from_secs(60);

async fn a_busy_server_is_retried_with_backoff_then_given_up_on(wire: &Wire) {
    let server = FakeServer::start().await;
    (wire.prepare)(&server);
    let client = (wire.client)(&server.url(), 3, QUICK, PATIENT);
    server.push(
        wire.chat,
        Reply::json(503, (wire.error)("server busy, please try again")),
    );
    server.push(
        wire.chat,
        Reply::json(429, (wire.error)("too many requests")),
    );
    server.push(wire.chat, hello(wire));
    assert_eq!(
        ask(client.as_ref(), "m").await,
        Streamed {
            said: "Hello.".into(),
            reconnects: vec![1, 2],
            error: None
        }
    );

    server.fallback(wire.chat, Reply::json(503, (wire.error)("server busy")));
    let given_up = ask(client.as_ref(), "m").await;
    assert_eq!(given_up.reconnects, [1, 2, 3]);
    assert!(
        matches!(given_up.error, Some(ProviderError::Http { status: 503, ref message, .. }) if message == "server busy"),
        "{given_up:?}"
    );

    // Other errors are not retried.
    server.push(wire.chat, Reply::json(500, (wire.error)("boom")));
    let failed = ask(client.as_ref(), "m").await;
    assert!(failed.reconnects.is_empty(), "{failed:?}");
    assert!(
        matches!(failed.error, Some(ProviderError::Http { status: 500, .. })),
        "{failed:?}"
    );
}

async fn the_wait_before_a_retry_is_announced_before_it_begins(wire: &Wire) {
    let server = FakeServer::start().await;
    (wire.prepare)(&server);
    server.push(
        wire.chat,
        Reply::json(429, (wire.error)("Rate limit reached")),
    );
    // A backoff far longer than the test may take: the event must come before it.
    let hour = Duration::from_secs(3600);
    let client = (wire.client)(&server.url(), 1, hour, PATIENT);
    let mut events = client.stream_chat(request("m"));
    let first = tokio::time::timeout(Duration::from_secs(30), events.next())
        .await
        .expect("the announcement comes at once, not after the wait");
    assert!(
        matches!(first, Some(Ok(ModelEvent::Reconnecting { attempt: 1, delay, .. })) if delay == hour),
        "{first:?}"
    );
}

async fn a_connection_closed_unanswered_is_asked_again_once(wire: &Wire) {
    let server = FakeServer::start().await;
    (wire.prepare)(&server);
    let client = (wire.client)(&server.url(), 3, QUICK, PATIENT);
    server.push(wire.chat, Reply::hang_up());
    server.push(wire.chat, hello(wire));
    let answered = ask(client.as_ref(), "m").await;
    assert_eq!((answered.said.as_str(), answered.error), ("Hello.", None));
    assert_eq!(server.requests_to(wire.chat).len(), 2);

    // Twice in a row is a server that is really gone: said, not retried for ever.
    server.push(wire.chat, Reply::hang_up());
    server.push(wire.chat, Reply::hang_up());
    let gone = ask(client.as_ref(), "m").await;
    assert!(
        matches!(gone.error, Some(ProviderError::StreamCut { .. })),
        "{gone:?}"
    );
    assert_eq!(server.requests_to(wire.chat).len(), 4);
}

async fn a_cut_or_stalled_stream_keeps_what_arrived(wire: &Wire) {
    let server = FakeServer::start().await;
    (wire.prepare)(&server);
    let (recording, begins) = wire.recording;
    let bytes = fixture(recording);
    server.push(
        wire.chat,
        (wire.stream)(bytes[..bytes.len() / 2].to_vec()).then(Piece::Cut),
    );
    let client = (wire.client)(&server.url(), 3, QUICK, PATIENT);
    let cut = ask(client.as_ref(), "m").await;
    assert!(cut.said.starts_with(begins), "{cut:?}");
    assert!(
        matches!(cut.error, Some(ProviderError::StreamCut { .. })),
        "{cut:?}"
    );

    server.push(
        wire.chat,
        (wire.stream)((wire.piece)("wait")).then(Piece::Hang),
    );
    let client = (wire.client)(&server.url(), 3, QUICK, Duration::from_millis(200));
    let stalled = ask(client.as_ref(), "m").await;
    assert_eq!(stalled.said, "wait");
    assert!(
        matches!(stalled.error, Some(ProviderError::Stalled { .. })),
        "{stalled:?}"
    );
}

async fn nothing_listening_is_named_as_unreachable(wire: &Wire) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = (wire.client)(&format!("http://127.0.0.1:{port}"), 3, QUICK, PATIENT);
    let streamed = ask(client.as_ref(), "m").await;
    let Some(err @ ProviderError::Unreachable { .. }) = streamed.error else {
        panic!("{streamed:?}")
    };
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("could not connect to http://127.0.0.1:{port}: ")),
        "{message}"
    );
    assert!(message.contains("refused"), "{message}");
    if let Some(start_it) = wire.start_it {
        assert!(message.ends_with(start_it), "{message}");
    }
}

async fn an_unknown_model_lists_the_ones_there_are(wire: &Wire) {
    let server = FakeServer::start().await;
    // Ollama is asked of the model first; it says it has none such.
    server.fallback(
        "POST /api/show",
        Reply::json(404, r#"{"error":"model 'bad_model' not found"}"#),
    );
    server.push(wire.chat, Reply::json(404, (wire.no_such_model)()));
    let (route, list, names) = wire.models;
    server.push(route, Reply::json(200, list()));
    let client = (wire.client)(&server.url(), 3, QUICK, PATIENT);
    let streamed = ask(client.as_ref(), "bad_model").await;
    assert_eq!(
        streamed.error.unwrap().to_string(),
        format!(
            "{} has no model `bad_model`; it has: {names}. {}",
            server.url(),
            wire.get_it
        )
    );

    // A refusal that is not about the model stays as the server said it.
    server.push(wire.chat, Reply::json(400, (wire.error)("bad request")));
    let refused = ask(client.as_ref(), "bad_model").await;
    assert!(
        matches!(refused.error, Some(ProviderError::Http { status: 400, ref message, .. }) if message == "bad request"),
        "{refused:?}"
    );
}

/// A model writes a call's arguments in the order it is shown them: `edit_file`'s
/// go as a call writes them (what it edits, the text that is there, what replaces
/// it), not by name (`new_text` first), however the dialect shows its tools.
async fn a_tools_arguments_are_sent_in_the_order_a_call_writes_them(wire: &Wire) {
    let server = FakeServer::start().await;
    (wire.prepare)(&server);
    server.push(wire.chat, hello(wire));
    let client = (wire.client)(&server.url(), 0, QUICK, PATIENT);
    let mut request = request("m");
    request.tools = vec![ToolSpec {
        name: "edit_file".into(),
        description: "Replace one exact piece of a file's text.".into(),
        parameters: json!({"type": "object", "properties": {
            "new_text": {"type": "string"},
            "old_text": {"type": "string"},
            "path": {"type": "string"},
            "dry_run": {"type": "boolean"}
        }, "required": ["path", "old_text", "new_text"]}),
    }]
    .into();
    let mut events = client.stream_chat(request);
    while let Some(event) = events.next().await {
        event.unwrap();
    }
    let sent = server.requests_to(wire.chat).remove(0);
    let body = String::from_utf8(sent.body).unwrap();
    let at = |name: &str| {
        body.find(name)
            .unwrap_or_else(|| panic!("{name} is not sent: {body}"))
    };
    assert!(
        at("path") < at("old_text")
            && at("old_text") < at("new_text")
            && at("new_text") < at("dry_run"),
        "{body}"
    );
}
