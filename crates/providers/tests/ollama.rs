//! Ollama's native dialect against recorded server traffic: the decoder on the exact
//! bytes, then the client over real HTTP to the fake server: request shape, the
//! capability fallbacks, listing and pulling. What every dialect does alike (busy
//! servers, cut and stalled streams, unknown models) is in `conformance.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bytes::Bytes;
use cairn_protocol::{ChatMessage, Image, ToolCall, ToolSpec};
use cairn_providers::http::RetryPolicy;
use cairn_providers::ollama::{OllamaClient, OllamaConfig, PullProgress, decode_body};
use cairn_providers::{
    ChatRequest, FinishReason, ModelClient, ModelEvent, ProviderError, RequestOrigin, Sampling,
    TokenUsage,
};
use cairn_testkit::{FakeServer, Recorded, Reply, fixture, ndjson_from_pretty};
use futures_util::{Stream, StreamExt, stream};
use serde_json::{Value, json};

#[derive(Debug, Default, PartialEq)]
struct Decoded {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    error: Option<ProviderError>,
    reconnects: Vec<u32>,
}

async fn collect(events: impl Stream<Item = Result<ModelEvent, ProviderError>>) -> Decoded {
    let mut decoded = Decoded::default();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(ModelEvent::Text(t)) => decoded.text.push_str(&t),
            Ok(ModelEvent::Reasoning(t)) => decoded.reasoning.push_str(&t),
            Ok(ModelEvent::ToolCall(call)) => decoded.calls.push(call),
            Ok(ModelEvent::ToolCallDraft { .. }) => {
                panic!("Ollama sends whole calls: nothing to show while they are written")
            }
            Ok(ModelEvent::Usage(usage)) => decoded.usage = Some(usage),
            Ok(ModelEvent::Finished(reason)) => decoded.finish = Some(reason),
            Ok(ModelEvent::PromptRead(read)) => panic!("Ollama says no progress: {read:?}"),
            Ok(ModelEvent::Reconnecting { attempt, .. }) => decoded.reconnects.push(attempt),
            Err(err) => {
                assert!(decoded.error.is_none(), "a stream ends at its first error");
                decoded.error = Some(err);
            }
        }
    }
    decoded
}

async fn decode_in_pieces(bytes: &[u8], piece: usize) -> Decoded {
    let pieces: Vec<Result<Bytes, std::io::Error>> = bytes
        .chunks(piece)
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    collect(decode_body(
        "test".into(),
        stream::iter(pieces),
        Duration::from_secs(5),
    ))
    .await
}

async fn decode_fixture(bytes: Vec<u8>) -> Decoded {
    let whole = decode_in_pieces(&bytes, bytes.len().max(1)).await;
    for piece in [1, 13, 512] {
        assert_eq!(
            decode_in_pieces(&bytes, piece).await,
            whole,
            "in {piece}-byte pieces"
        );
    }
    whole
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        written: None,
    }
}

fn usage(prompt_tokens: u64, completion_tokens: u64) -> Option<TokenUsage> {
    Some(TokenUsage {
        prompt_tokens,
        completion_tokens,
        cached_prompt_tokens: 0,
    })
}

#[tokio::test]
async fn plain_thinking_and_length_streams() {
    let d = decode_fixture(fixture("ollama/chat_stream_plain.ndjson")).await;
    assert_eq!(
        (d.text.as_str(), d.usage, d.finish.clone()),
        ("Hi", usage(20, 2), Some(FinishReason::Stop))
    );
    let d = decode_fixture(fixture("ollama/chat_stream_thinking.ndjson")).await;
    assert_eq!(d.text, "Hello");
    assert!(
        d.reasoning
            .starts_with("Thinking Process:\n\n1.  **Analyze the Req")
    );
    assert_eq!(
        (d.reasoning.chars().count(), d.usage),
        (759, usage(18, 229))
    );
    let d = decode_fixture(fixture("ollama/chat_stream_done_reason_length.ndjson")).await;
    assert_eq!(
        (d.finish, d.usage),
        (Some(FinishReason::Length), usage(23, 16))
    );
    assert!(d.text.starts_with("# The Theory of Relativity"));
    let d = decode_fixture(fixture("ollama/chat_stream_after_tool_result.ndjson")).await;
    assert_eq!((d.text.as_str(), d.usage), ("363.89", usage(358, 16)));
}

#[tokio::test]
async fn whole_tool_calls_with_object_arguments() {
    let d = decode_fixture(fixture(
        "ollama/chat_stream_thinking_single_tool_call.ndjson",
    ))
    .await;
    assert_eq!(
        d.calls,
        [call("call_nixabbbq", "square_root", r#"{"number":132413}"#)]
    );
    assert_eq!(
        d.finish,
        Some(FinishReason::ToolCalls),
        "done_reason stop after calls is a tool round"
    );
    assert_eq!(d.reasoning.chars().count(), 190);
    let d = decode_fixture(fixture("ollama/chat_stream_thinking_two_tool_calls.ndjson")).await;
    assert_eq!(
        d.calls,
        [
            call("call_bzns1wnk", "best_country", r#"{"country":"Canada"}"#),
            call("call_3pm4xo0k", "best_country", r#"{"country":"USA"}"#),
        ]
    );
    assert_eq!(d.usage, usage(98, 701));
    // The documentation's older example has no call id.
    let d = decode_fixture(ndjson_from_pretty("ollama/docs_chat_stream_tool_call.json")).await;
    assert_eq!(d.calls, [call("", "get_weather", r#"{"city":"Tokyo"}"#)]);
    assert_eq!(d.usage, usage(169, 15));
}

#[tokio::test]
async fn an_error_line_mid_stream_ends_it_after_what_came_before() {
    let mut bytes = fixture("ollama/chat_stream_plain.ndjson");
    let first_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes.truncate(first_line);
    bytes.extend_from_slice(
        fixture("ollama/docs_error_midstream.ndjson")
            .rsplit(|&b| b == b'\n')
            .find(|l| !l.is_empty())
            .unwrap(),
    );
    let d = decode_in_pieces(&bytes, 7).await;
    assert_eq!(d.text, "Hi");
    assert_eq!(
        d.error,
        Some(ProviderError::Server {
            server: "test".into(),
            message: "an error was encountered while running the model".into()
        })
    );
}

#[tokio::test]
async fn an_unreadable_line_is_skipped_when_the_stream_recovers() {
    let plain = fixture("ollama/chat_stream_plain.ndjson");
    let mut bytes = b"{\"message\":{\"content\":\"Oh, \"},\"done\":false}\n{garbage\n".to_vec();
    bytes.extend_from_slice(&plain);
    let d = decode_in_pieces(&bytes, 5).await;
    assert_eq!((d.text.as_str(), d.error), ("Oh, Hi", None));
    let d = decode_in_pieces(b"<html>502 Bad Gateway</html>\n", 100).await;
    assert!(
        matches!(d.error, Some(ProviderError::Protocol { .. })),
        "nothing readable is an error: {d:?}"
    );
}

const CHAT: &str = "POST /api/chat";
const SHOW: &str = "POST /api/show";
const PS: &str = "GET /api/ps";
const TAGS: &str = "GET /api/tags";

fn config(server: &FakeServer) -> OllamaConfig {
    let mut config = OllamaConfig::new(server.url());
    config.retry = RetryPolicy {
        attempts: 3,
        first_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    };
    config
}

fn client(server: &FakeServer) -> OllamaClient {
    OllamaClient::new(config(server)).unwrap()
}

fn request(model: &str, messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages,
        tools: vec![ToolSpec {
            name: "square_root".into(),
            description: "Square root".into(),
            parameters: json!({"type": "object", "properties": {"number": {"type": "number"}}}),
        }]
        .into(),
        sampling: Sampling {
            temperature: Some(0.0),
            top_p: Some(0.9),
            max_tokens: Some(256),
        },
        origin: RequestOrigin::default(),
        answer_only: false,
    }
}

fn show(context_length: u64) -> Reply {
    Reply::json(200, json!({"model_info": {"general.architecture": "qwen35", "qwen35.context_length": context_length}}).to_string())
}

#[tokio::test]
async fn the_request_replays_history_in_ollamas_shape_with_a_real_context_window() {
    let server = FakeServer::start().await;
    server.push(SHOW, show(262_144));
    server.push(
        CHAT,
        Reply::ndjson(fixture("ollama/chat_stream_after_tool_result.ndjson")),
    );
    let history = vec![
        ChatMessage::user("Use the square_root tool on 132413."),
        ChatMessage::Assistant {
            content: String::new(),
            reasoning: Some("thinking".into()),
            tool_calls: vec![call("call_nixabbbq", "square_root", r#"{"number":132413}"#)],
        },
        ChatMessage::Tool {
            tool_call_id: "call_nixabbbq".into(),
            name: "square_root".into(),
            content: "363.89".into(),
            is_error: false,
            images: Vec::new(),
        },
    ];
    let d = collect(client(&server).stream_chat(request("qwen3.5:2b", history))).await;
    assert_eq!((d.text.as_str(), d.error), ("363.89", None));
    let requests = server.requests();
    let routes: Vec<String> = requests.iter().map(Recorded::route).collect();
    assert_eq!(
        routes,
        [PS, SHOW, CHAT],
        "not loaded: its own length, capped"
    );
    assert_eq!(requests[1].json(), json!({"model": "qwen3.5:2b"}));
    assert_eq!(
        requests[2].json(),
        json!({
            "model": "qwen3.5:2b",
            "messages": [
                {"role": "user", "content": "Use the square_root tool on 132413."},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_nixabbbq", "function": {"name": "square_root", "arguments": {"number": 132413}}}
                ]},
                {"role": "tool", "content": "363.89", "tool_call_id": "call_nixabbbq", "tool_name": "square_root"}
            ],
            "tools": [{"type": "function", "function": {"name": "square_root", "description": "Square root",
                       "parameters": {"type": "object", "properties": {"number": {"type": "number"}}}}}],
            "stream": true,
            "truncate": false,
            "think": true,
            "options": {"temperature": 0.0, "top_p": 0.9, "num_predict": 256, "num_ctx": 32768}
        })
    );
}

/// `GET /api/ps` as Ollama documents it, with the `context_length` newer servers add.
fn ps(model: &str, context_length: u64) -> Reply {
    Reply::json(
        200,
        json!({"models": [{
            "name": model, "model": model, "size": 5_137_025_024_u64,
            "digest": "2ae6f6dd7a3dd734790bbbf58b8909a606e0e7e97e94b7604e0aa7ae4490e6d8",
            "details": {"format": "gguf", "family": "qwen3", "parameter_size": "8.2B",
                        "quantization_level": "Q4_K_M"},
            "expires_at": "2026-11-23T10:45:00.000Z", "size_vram": 5_137_025_024_u64,
            "context_length": context_length
        }]})
        .to_string(),
    )
}

#[tokio::test]
async fn a_loaded_model_keeps_the_context_it_was_loaded_with() {
    let server = FakeServer::start().await;
    server.push(PS, ps("qwen3:8b", 4096));
    server.push(
        CHAT,
        Reply::ndjson(fixture("ollama/chat_stream_after_tool_result.ndjson")),
    );
    let client = client(&server);
    let window = client.context_window("qwen3:8b").await.unwrap();
    assert_eq!(
        (window.tokens, window.source.as_str()),
        (4096, "Ollama, as loaded")
    );
    collect(client.stream_chat(request("qwen3:8b", vec![ChatMessage::user("hi")]))).await;
    let requests = server.requests();
    let mut routes: Vec<String> = requests.iter().map(Recorded::route).collect();
    routes[..2].sort();
    assert_eq!(
        routes,
        [PS, SHOW, CHAT],
        "both asked at once, before the chat; the window asked once"
    );
    assert_eq!(
        requests[2].json()["options"]["num_ctx"],
        json!(4096),
        "asking for another size would make Ollama load the model again"
    );
}

#[tokio::test]
async fn a_server_that_says_nothing_leaves_the_window_unknown() {
    let server = FakeServer::start().await;
    // An older Ollama: /api/ps without context_length, /api/show without model_info.
    server.push(PS, Reply::json(200, r#"{"models": []}"#));
    server.push(SHOW, Reply::json(200, r#"{"details": {}}"#));
    assert_eq!(client(&server).context_window("old").await, None);
}

#[tokio::test]
async fn a_model_that_cannot_think_is_asked_again_without_and_remembered() {
    for refusal in [
        "ollama/error_think_unsupported.json",
        "ollama/error_think_unsupported_older.json",
    ] {
        let server = FakeServer::start().await;
        server.fallback(SHOW, show(4096));
        server.push(CHAT, Reply::json(400, fixture(refusal)));
        server.push(
            CHAT,
            Reply::ndjson(fixture("ollama/chat_stream_plain.ndjson")),
        );
        server.push(
            CHAT,
            Reply::ndjson(fixture("ollama/chat_stream_plain.ndjson")),
        );
        let client = client(&server);
        for _ in 0..2 {
            let d =
                collect(client.stream_chat(request("test", vec![ChatMessage::user("hi")]))).await;
            assert_eq!((d.text.as_str(), d.error), ("Hi", None), "{refusal}");
        }
        let chats: Vec<Value> = server
            .requests()
            .iter()
            .filter(|r| r.path == "/api/chat")
            .map(|r| r.json())
            .collect();
        assert_eq!(chats.len(), 3, "one refusal, then two rounds: {refusal}");
        assert_eq!(chats[0]["think"], true);
        assert_eq!(chats[1].get("think"), None);
        assert_eq!(chats[2].get("think"), None, "remembered for the model");
        assert_eq!(
            chats[1]["options"]["num_ctx"], 4096,
            "never more than the model has"
        );
    }
}

#[tokio::test]
async fn a_model_that_cannot_call_tools_still_answers() {
    let server = FakeServer::start().await;
    server.fallback(SHOW, show(8192));
    server.push(
        CHAT,
        Reply::json(400, fixture("ollama/error_tools_unsupported.json")),
    );
    server.push(
        CHAT,
        Reply::ndjson(fixture("ollama/chat_stream_plain.ndjson")),
    );
    let client = client(&server);
    assert!(
        client.can_call_tools("qwen3.5:0.8b"),
        "not known before it is asked"
    );
    let d =
        collect(client.stream_chat(request("qwen3.5:0.8b", vec![ChatMessage::user("hi")]))).await;
    assert_eq!((d.text.as_str(), d.error), ("Hi", None));
    let chats: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/chat")
        .map(|r| r.json())
        .collect();
    assert!(chats[0].get("tools").is_some());
    assert_eq!(chats[1].get("tools"), None);
    // The engine learns it too, and tells the model it has none.
    assert!(!client.can_call_tools("qwen3.5:0.8b"));
    assert!(client.can_call_tools("qwen3:8b"));
}

#[tokio::test]
async fn a_pull_whose_stream_ends_before_success_ends_in_an_error() {
    let server = FakeServer::start().await;
    server.push(
        "POST /api/pull",
        Reply::ndjson(
            "{\"status\":\"pulling manifest\"}\n\
             {\"status\":\"pulling abc\",\"total\":100,\"completed\":40}\n",
        ),
    );
    let steps: Vec<_> = client(&server).pull("llama3.2").collect().await;
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(steps[1].as_ref().unwrap().completed, Some(40));
    let err = steps[2].as_ref().unwrap_err();
    assert!(
        matches!(err, ProviderError::StreamCut { detail, .. } if detail.contains("last: pulling abc")),
        "{err}"
    );

    // A body with no progress at all says so.
    server.push("POST /api/pull", Reply::ndjson(""));
    let steps: Vec<_> = client(&server).pull("llama3.2").collect().await;
    assert!(
        matches!(steps.as_slice(), [Err(ProviderError::StreamCut { detail, .. })] if detail.contains("last: nothing")),
        "{steps:?}"
    );
}

#[tokio::test]
async fn models_are_listed_and_pulled_with_progress() {
    let server = FakeServer::start().await;
    server.push(TAGS, Reply::json(200, fixture("ollama/docs_tags.json")));
    let models = client(&server).list_models().await.unwrap();
    let names: Vec<_> = models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["deepseek-r1:latest", "llama3.2:latest"]);
    assert_eq!(
        (models[0].details.parameter_size.as_str(), models[0].size),
        ("7.6B", 4683075271)
    );

    server.push(
        "POST /api/pull",
        Reply::ndjson(ndjson_from_pretty("ollama/docs_pull_progress.json"))
            .paced(40, Duration::from_millis(1)),
    );
    let progress: Vec<PullProgress> = client(&server)
        .pull("llama3.2")
        .map(Result::unwrap)
        .collect()
        .await;
    let statuses: Vec<_> = progress.iter().map(|p| p.status.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "pulling manifest",
            "pulling digestname",
            "verifying sha256 digest",
            "writing manifest",
            "removing any unused layers",
            "success"
        ]
    );
    assert_eq!(
        (progress[1].total, progress[1].completed),
        (Some(2142590208), Some(241970))
    );
    assert_eq!(
        server.requests().last().unwrap().json(),
        json!({"model": "llama3.2", "stream": true})
    );

    server.push(
        "POST /api/pull",
        Reply::json(500, fixture("ollama/pull_error_stream_false.json")),
    );
    let failed: Vec<_> = client(&server).pull("bad_model").collect().await;
    assert_eq!(failed.len(), 1);
    assert!(
        matches!(&failed[0], Err(ProviderError::Http { status: 500, message, .. }) if message == "pull model manifest: file does not exist")
    );
}

#[tokio::test]
async fn a_tools_image_follows_the_round_in_images_until_the_model_refuses_it() {
    let server = FakeServer::start().await;
    server.fallback(SHOW, show(4096));
    let plain = || Reply::ndjson(fixture("ollama/chat_stream_plain.ndjson"));
    server.push(CHAT, plain());
    // A refusal in the style of Ollama for a model without a vision encoder (not a
    // recording).
    server.push(
        CHAT,
        Reply::json(
            500,
            r#"{"error":"this model is missing data required for image input"}"#,
        ),
    );
    server.push(CHAT, plain());
    let history = || {
        vec![
            ChatMessage::user("Chart the sales"),
            ChatMessage::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![call("c1", "chart", "{}")],
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                name: "chart".into(),
                content: "[image 1: image/png, 1 KB]".into(),
                is_error: false,
                images: vec![Image {
                    mime_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                }],
            },
        ]
    };
    let client = client(&server);
    let d = collect(client.stream_chat(request("llava", history()))).await;
    assert_eq!((d.text.as_str(), d.error), ("Hi", None));
    let d = collect(client.stream_chat(request("text-only", history()))).await;
    assert_eq!((d.text.as_str(), d.error), ("Hi", None));

    let chats: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/chat")
        .map(|r| r.json())
        .collect();
    assert_eq!(chats.len(), 3);
    let shown = json!({"role": "user",
        "content": "The tool results above returned these images (image 1 from `chart`).",
        "images": ["iVBORw0KGgo="]});
    assert_eq!(chats[0]["messages"][3], shown);
    assert_eq!(chats[1]["messages"][3], shown, "the refused request");
    assert_eq!(
        chats[2]["messages"].as_array().unwrap().len(),
        3,
        "sent again without the image: {}",
        chats[2]
    );
}
