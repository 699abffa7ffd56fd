//! The OpenAI-compatible dialect against recorded server traffic: first the decoder
//! on the exact bytes (whole and cut at every kind of boundary), then the client over
//! real HTTP to the fake server: its request shape, what each server says of its
//! window, its errors. What every dialect does alike (busy servers, cut and stalled
//! streams, unknown models) is in `conformance.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bytes::Bytes;
use cairn_protocol::{ChatMessage, Image, ToolCall, ToolSpec};
use cairn_providers::openai::{OpenAiClient, OpenAiConfig, decode_body};
use cairn_providers::{
    ChatRequest, FinishReason, ModelClient, ModelEvent, PromptRead, ProviderError, RequestOrigin,
    Sampling, TokenUsage,
};
use cairn_testkit::{FakeServer, Piece, Recorded, Reply, fixture, openai_sse};
use futures_util::{Stream, StreamExt, stream};
use serde_json::json;

#[derive(Debug, Default, PartialEq)]
struct Decoded {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    error: Option<ProviderError>,
    reconnects: Vec<u32>,
    /// The calls as they were written, by slot: (id, name, the pieces joined), and
    /// how many pieces came.
    drafts: Vec<(String, String, String, usize)>,
    /// How far the server said it had read the prompt, in order.
    reads: Vec<PromptRead>,
}

async fn collect(events: impl Stream<Item = Result<ModelEvent, ProviderError>>) -> Decoded {
    let mut decoded = Decoded::default();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(ModelEvent::Text(t)) => decoded.text.push_str(&t),
            Ok(ModelEvent::Reasoning(t)) => decoded.reasoning.push_str(&t),
            Ok(ModelEvent::ToolCall(call)) => decoded.calls.push(call),
            Ok(ModelEvent::ToolCallDraft {
                slot,
                id,
                name,
                arguments,
            }) => {
                if decoded.drafts.len() <= slot {
                    decoded.drafts.resize(slot + 1, Default::default());
                }
                let draft = &mut decoded.drafts[slot];
                (draft.0, draft.1) = (id, name);
                draft.2.push_str(&arguments);
                draft.3 += 1;
            }
            // Summed, as the engine does: a forced retry reports twice.
            Ok(ModelEvent::Usage(usage)) => {
                let total = decoded.usage.get_or_insert_with(TokenUsage::default);
                total.prompt_tokens += usage.prompt_tokens;
                total.completion_tokens += usage.completion_tokens;
                total.cached_prompt_tokens += usage.cached_prompt_tokens;
            }
            Ok(ModelEvent::PromptRead(read)) => decoded.reads.push(read),
            Ok(ModelEvent::Finished(reason)) => decoded.finish = Some(reason),
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

/// Decodes a recording whole and in several piece sizes; all must agree.
async fn decode_fixture(name: &str) -> Decoded {
    let bytes = openai_sse(name);
    let whole = decode_in_pieces(&bytes, bytes.len().max(1)).await;
    for piece in [1, 7, 64, 1000] {
        assert_eq!(
            decode_in_pieces(&bytes, piece).await,
            whole,
            "{name} in {piece}-byte pieces"
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

/// `usage` with `tokens` of its prompt read from the server's cache.
fn cached(usage: Option<TokenUsage>, tokens: u64) -> Option<TokenUsage> {
    usage.map(|usage| TokenUsage {
        cached_prompt_tokens: tokens,
        ..usage
    })
}

#[tokio::test]
async fn plain_text_with_a_usage_chunk() {
    let d = decode_fixture("openai/plain_stream_with_usage.sse").await;
    assert_eq!(
        d.text,
        "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app."
    );
    assert_eq!(
        (d.usage, d.finish, d.error),
        (usage(14, 30), Some(FinishReason::Stop), None)
    );
}

#[tokio::test]
async fn fragmented_tool_calls_reassembled_by_index() {
    let d = decode_fixture("openai/tool_call_single_fragmented.sse").await;
    assert_eq!(
        d.calls,
        [call(
            "call_4XzlGBLtUe9dy3GVNV4jhq7h",
            "get_weather",
            r#"{"city":"New York City"}"#
        )]
    );
    assert_eq!(d.finish, Some(FinishReason::ToolCalls));
    let d = decode_fixture("openai/tool_call_single_strict_fragmented.sse").await;
    assert_eq!(
        d.calls,
        [call(
            "call_c91SqDXlYFuETYv8mUHzz6pp",
            "GetWeatherArgs",
            r#"{"city":"Edinburgh","country":"UK","units":"c"}"#
        )]
    );
    let d = decode_fixture("openai/parallel_tool_calls_two_indexes.sse").await;
    assert_eq!(
        d.calls,
        [
            call(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#
            ),
            call(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#
            ),
        ]
    );
    assert_eq!(d.usage, usage(149, 60));
    // Each call was shown piece by piece as it was written, and the pieces make it.
    assert_eq!(d.drafts.len(), 2);
    for (draft, call) in d.drafts.iter().zip(&d.calls) {
        assert_eq!(
            (&draft.0, &draft.1, &draft.2),
            (&call.id, &call.name, &call.arguments)
        );
        assert!(draft.3 > 3, "in pieces, not whole: {draft:?}");
    }
}

#[tokio::test]
async fn whole_argument_calls_and_ids_only_on_the_first_fragment() {
    let d = decode_fixture("openai/groq_tool_call_whole_args.ndjson").await;
    assert_eq!(d.calls, [call("tk85n1k4m", "weather", "{}")]);
    let d = decode_fixture("openai/xai_tool_call_whole_args.ndjson").await;
    assert_eq!(
        d.calls,
        [call(
            "call_55117580",
            "weather",
            r#"{"location":"San Francisco"}"#
        )]
    );
    assert_eq!(d.reasoning, "First, the user is");
    let d = decode_fixture("openai/glm_tool_call_vllm_style_id.ndjson").await;
    assert_eq!(
        d.calls,
        [call(
            "chatcmpl-tool-9f149c74c42f265b",
            "webSearchTool",
            r#"{"query": "current Berlin weather"}"#
        )]
    );
    assert_eq!(d.usage, cached(usage(171, 14), 128));
}

#[tokio::test]
async fn llama_cpp_streams() {
    let d = decode_fixture("openai/llamacpp_plain_stream.sse").await;
    assert_eq!(
        (d.text.as_str(), d.usage, d.finish),
        ("Hello.", None, Some(FinishReason::Stop))
    );
    let d = decode_fixture("openai/llamacpp_reasoning_content_stream.sse").await;
    assert_eq!(d.text, "Hello");
    assert!(
        d.reasoning
            .starts_with("Thinking Process:\n\n1.  **Analyze the Request:**"),
        "{}",
        d.reasoning
    );
    assert_eq!(d.reasoning.len(), 628);
    let d = decode_fixture("openai/llamacpp_single_tool_call_required.sse").await;
    assert_eq!(
        d.calls,
        [call(
            "6Xbxzom1Kq3NTq06ZYfhHJKWPcnrxGpc",
            "square_root",
            r#"{"number":132413}"#
        )]
    );
    assert_eq!(d.reasoning.len(), 423);
    let d = decode_fixture("openai/llamacpp_parallel_tool_calls_required.sse").await;
    assert_eq!(
        d.calls,
        [
            call(
                "xjGzBx8CDcygHg2n6gmujRMLoKwn8HQ1",
                "best_country",
                r#"{"country":"Canada"}"#
            ),
            call(
                "s36V7cwDGfHRUrRk0dXgdAx18TRi3TZA",
                "best_country",
                r#"{"country":"USA"}"#
            ),
        ]
    );
}

#[tokio::test]
async fn reasoning_as_reasoning_content_or_reasoning() {
    let d = decode_fixture("openai/deepseek_reasoning_content.ndjson").await;
    assert_eq!(d.text, "The word \"strawberry\" contains three \"r\"s.");
    assert_eq!((d.reasoning.len(), d.usage), (606, usage(18, 219)));
    let d = decode_fixture("openai/deepseek_reasoning_then_tool_call.ndjson").await;
    assert_eq!(
        d.calls,
        [call(
            "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
            "weather",
            r#"{"location": "San Francisco"}"#
        )]
    );
    assert_eq!(
        (d.reasoning.len(), d.usage),
        (191, cached(usage(339, 83), 320))
    );
    let d = decode_fixture("openai/groq_delta_reasoning.ndjson").await;
    assert!(d.reasoning.starts_with("Okay, let me try to figure out"));
    assert_eq!(
        (d.reasoning.chars().count(), d.usage),
        (2952, usage(17, 1107))
    );
    let d = decode_fixture("openai/openrouter_reasoning_stream.sse").await;
    assert_eq!(d.text, "2 + 2 = 4");
    assert_eq!(
        d.reasoning,
        "This is a simple arithmetic question. 2+2 equals 4."
    );
}

#[tokio::test]
async fn length_finish_and_a_mid_stream_error_chunk() {
    let d = decode_fixture("openai/finish_length_max_tokens.sse").await;
    assert_eq!(
        (d.text.as_str(), d.finish),
        ("{\"", Some(FinishReason::Length))
    );
    let d = decode_fixture("openai/openrouter_midstream_error_chunk.sse").await;
    assert_eq!(d.reasoning, "We need to respond to a greeting. The user");
    assert_eq!(
        d.error,
        Some(ProviderError::Server {
            server: "test".into(),
            message: "Token limit reached".into()
        })
    );
}

#[tokio::test]
async fn a_stream_without_an_end_is_cut_and_garbage_is_named() {
    let d = decode_in_pieces(
        b"data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\n\n",
        5,
    )
    .await;
    assert_eq!(d.text, "Hal");
    assert!(
        matches!(d.error, Some(ProviderError::StreamCut { .. })),
        "{d:?}"
    );
    let d = decode_in_pieces(b"data: {not json\n\n", 100).await;
    let Some(ProviderError::Protocol { detail, .. }) = d.error else {
        panic!("{d:?}")
    };
    assert!(detail.contains("{not json"), "{detail}");
}

#[tokio::test]
async fn calls_without_index_are_split_by_id_and_empty_ids_never_overwrite() {
    let payloads = br#"data: {"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}}]}
data: {"choices":[{"delta":{"tool_calls":[{"id":"","function":{"arguments":":1}"}}]}}]}
data: {"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":{"y":2}}}]}}]}
data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"#;
    let d = decode_in_pieces(payloads, 9).await;
    assert_eq!(
        d.calls,
        [call("a", "f", r#"{"x":1}"#), call("b", "g", r#"{"y":2}"#)]
    );
}

#[tokio::test]
async fn a_last_word_goes_out_with_no_tools_and_its_results_as_the_users_words() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(fixture("openai/plain_stream_with_usage.sse")),
    );
    let history = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("What is in a?"),
        ChatMessage::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![call("c1", "read_file", r#"{"path":"a"}"#)],
        },
        ChatMessage::Tool {
            tool_call_id: "c1".into(),
            name: "read_file".into(),
            content: "alpha".into(),
            is_error: false,
            images: Vec::new(),
        },
    ];
    let last_word = ChatRequest {
        tools: Vec::new().into(),
        answer_only: true,
        ..request(history)
    };
    collect(client(&server).stream_chat(last_word)).await;

    let sent = server.requests()[0].json();
    assert_eq!(sent.get("tools"), None);
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "What is in a?\n\nWhat the tools returned:\n\
                                         read_file a:\nalpha\n\nAnswer in one sentence."}
        ])
    );
}

fn request(messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        model: "qwen3:8b".into(),
        messages,
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]
        .into(),
        sampling: Sampling {
            temperature: Some(0.0),
            top_p: None,
            max_tokens: Some(512),
        },
        origin: RequestOrigin::default(),
        answer_only: false,
    }
}

fn client(server: &FakeServer) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig::new(server.url())).unwrap()
}

const CHAT: &str = "POST /v1/chat/completions";

#[tokio::test]
async fn streams_over_http_and_sends_the_openai_request_shape() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(fixture("openai/parallel_tool_calls_two_indexes.sse"))
            .paced(300, Duration::from_millis(1)),
    );
    let history = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("hi"),
        ChatMessage::Assistant {
            content: String::new(),
            reasoning: Some("hidden".into()),
            tool_calls: vec![
                call("c1", "read_file", r#"{"path":"a"}"#),
                call("c2", "read_file", "{broken"),
            ],
        },
        ChatMessage::Tool {
            tool_call_id: "c1".into(),
            name: "read_file".into(),
            content: "A".into(),
            is_error: false,
            images: Vec::new(),
        },
        ChatMessage::Tool {
            tool_call_id: "c2".into(),
            name: "read_file".into(),
            content: "Error".into(),
            is_error: true,
            images: Vec::new(),
        },
    ];
    let d = collect(client(&server).stream_chat(request(history))).await;
    assert_eq!(d.calls.len(), 2);
    assert_eq!(d.error, None);

    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.json(),
        json!({
            "model": "qwen3:8b",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "A"},
                {"role": "tool", "tool_call_id": "c2", "content": "Error"}
            ],
            "tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                       "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.0,
            "max_tokens": 512
        })
    );
}

#[tokio::test]
async fn the_api_key_goes_as_a_bearer_token() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(fixture("openai/llamacpp_plain_stream.sse")),
    );
    let mut config = OpenAiConfig::new(format!("{}/v1", server.url()));
    config.api_key = Some("sk-test-123".into());
    let d = collect(
        OpenAiClient::new(config)
            .unwrap()
            .stream_chat(request(vec![ChatMessage::user("hi")])),
    )
    .await;
    assert_eq!(d.text, "Hello.");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-test-123")
    );
}

#[tokio::test]
async fn http_errors_carry_the_servers_own_message() {
    let server = FakeServer::start().await;
    for (status, body) in [
        (400, "openai/vllm_error_new_format.json"),
        (400, "openai/vllm_error_old_format.json"),
        (400, "openai/deepseek_error_bad_model.json"),
        (401, "openai/deepseek_error_bad_api_key.json"),
        (400, "openai/ollama_v1_error_tools_unsupported.json"),
    ] {
        server.push(CHAT, Reply::json(status, fixture(body)));
        let d = collect(client(&server).stream_chat(request(vec![ChatMessage::user("hi")]))).await;
        let Some(ProviderError::Http {
            status: got,
            message,
            server: named,
        }) = d.error
        else {
            panic!("{body}: {d:?}");
        };
        assert_eq!(got, status, "{body}");
        assert_eq!(named, server.url());
        let raw: serde_json::Value = serde_json::from_slice(&fixture(body)).unwrap();
        let expected = raw["error"]["message"]
            .as_str()
            .or(raw["message"].as_str())
            .unwrap();
        assert_eq!(message, expected, "{body}");
    }
}

#[tokio::test]
async fn models_are_listed_from_v1_models() {
    let server = FakeServer::start().await;
    server.push(
        "GET /v1/models",
        Reply::json(200, fixture("openai/llamacpp_v1_models.json")),
    );
    let models = client(&server).list_models().await.unwrap();
    let raw: serde_json::Value =
        serde_json::from_slice(&fixture("openai/llamacpp_v1_models.json")).unwrap();
    let expected: Vec<String> = raw["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(models, expected);
}

const MODELS: &str = "GET /v1/models";

/// The routes asked, sorted: the ways of asking go out at once.
fn routes(server: &FakeServer) -> Vec<String> {
    let mut routes: Vec<String> = server.requests().iter().map(Recorded::route).collect();
    routes.sort();
    routes
}

/// Every way of asking, as [`routes`] lists them.
const ASKED: [&str; 3] = ["GET /api/v0/models", "GET /props", MODELS];

#[tokio::test]
async fn llama_cpp_says_its_context_in_the_model_list() {
    let server = FakeServer::start().await;
    server.push(
        MODELS,
        Reply::json(200, fixture("openai/llamacpp_v1_models.json")),
    );
    // Asked at the same time; the model list comes first in the order of trust.
    server.push(
        "GET /props",
        Reply::json(200, r#"{"default_generation_settings": {"n_ctx": 8192}}"#),
    );
    let window = client(&server)
        .context_window("unsloth/Qwen3.5-2B-GGUF")
        .await
        .unwrap();
    assert_eq!(
        window.tokens, 16384,
        "the context it runs with, not n_ctx_train"
    );
    assert_eq!(window.source, "llama.cpp server's n_ctx");
    assert_eq!(routes(&server), ASKED);
}

/// What llama.cpp's server streams with `return_progress`, as this build sends it
/// (`scripts/real-model`): a chunk as it starts reading, one per batch read, then the
/// answer.
const PROGRESS_STREAM: &[&str] = &[
    r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"prompt_progress":{"total":1603,"cache":24,"processed":24,"time_ms":0}}"#,
    r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"prompt_progress":{"total":1603,"cache":24,"processed":1603,"time_ms":7821.4}}"#,
    r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{"content":"Hi"}}]}"#,
];

/// `server` answers as llama.cpp's does before a chat: its model and its slots.
fn says_it_is_llama_cpp(server: &FakeServer) {
    server.push(
        MODELS,
        Reply::json(200, fixture("openai/llamacpp_v1_models.json")),
    );
    server.push(
        "GET /props",
        Reply::json(
            200,
            r#"{"total_slots": 1, "default_generation_settings": {"n_ctx": 8192}}"#,
        ),
    );
}

#[tokio::test]
async fn llama_cpp_is_asked_for_its_reading_and_says_it() {
    let server = FakeServer::start().await;
    says_it_is_llama_cpp(&server);
    let lines = PROGRESS_STREAM.join("\n");
    server.push(
        CHAT,
        Reply::sse(cairn_testkit::sse_from_payload_lines(lines.as_bytes())),
    );
    let llama = client(&server);
    llama.context_window("unsloth/Qwen3.5-2B-GGUF").await;
    let mut asked = request(vec![ChatMessage::user("hi")]);
    asked.model = "unsloth/Qwen3.5-2B-GGUF".into();
    let decoded = collect(llama.stream_chat(asked)).await;
    assert_eq!(server.requests_to(CHAT)[0].json()["return_progress"], true);
    assert_eq!(
        decoded.reads,
        [
            PromptRead {
                total: 1603,
                cached: 24,
                read: 24,
                elapsed_ms: 0
            },
            PromptRead {
                total: 1603,
                cached: 24,
                read: 1603,
                elapsed_ms: 7821
            },
        ]
    );
    assert_eq!(decoded.text, "Hi");

    // A server that is not llama.cpp's is not sent a field it may refuse.
    let hosted = FakeServer::start().await;
    hosted.push(CHAT, Reply::sse(cairn_testkit::sse::text(&["Hi"])));
    collect(client(&hosted).stream_chat(request(vec![ChatMessage::user("hi")]))).await;
    assert!(
        hosted.requests_to(CHAT)[0]
            .json()
            .get("return_progress")
            .is_none()
    );
}

#[tokio::test]
async fn a_model_that_writes_calls_as_text_has_them_held_to_its_tools_on_llama_cpp() {
    use cairn_providers::habits::{self, Habits};
    let server = FakeServer::start().await;
    says_it_is_llama_cpp(&server);
    for _ in 0..2 {
        server.push(
            CHAT,
            Reply::sse(cairn_testkit::sse::text(&[
                "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            ])),
        );
    }
    let model = "unsloth/Qwen3.5-2B-GGUF";
    let llama = client(&server);
    llama.context_window(model).await;
    let asked = || ChatRequest {
        model: model.into(),
        ..request(vec![ChatMessage::user("read a.txt")])
    };

    // Before its check-up found it writes calls as text: the server's own way.
    let d = collect(llama.stream_chat(asked())).await;
    assert_eq!(d.calls.len(), 1, "read back from the text either way");
    let sent = server.requests_to(CHAT)[0].json();
    assert!(sent.get("grammar").is_none(), "{sent}");
    assert!(sent.get("tool_choice").is_none(), "{sent}");

    habits::learn(
        &server.url(),
        model,
        Habits {
            text_calls: true,
            ..Habits::default()
        },
    );
    let d = collect(llama.stream_chat(asked())).await;
    assert_eq!(d.calls.len(), 1);
    assert_eq!(d.calls[0].name, "read_file");
    let sent = server.requests_to(CHAT)[1].json();
    let grammar = sent["grammar"].as_str().unwrap();
    assert!(
        grammar.contains(r#""\"read_file\"""#),
        "the offered tool is the one name a call may have: {grammar}"
    );
    assert_eq!(
        sent["tool_choice"], "none",
        "llama.cpp takes a grammar only when it is to parse no call itself"
    );
    assert_eq!(
        sent["tools"][0]["function"]["name"], "read_file",
        "still shown"
    );

    // A server that is not llama.cpp's is sent no grammar, whatever the model does.
    let hosted = FakeServer::start().await;
    hosted.push(CHAT, Reply::sse(cairn_testkit::sse::text(&["Hi"])));
    habits::learn(
        &hosted.url(),
        "qwen3:8b",
        Habits {
            text_calls: true,
            ..Habits::default()
        },
    );
    collect(client(&hosted).stream_chat(request(vec![ChatMessage::user("hi")]))).await;
    assert!(hosted.requests_to(CHAT)[0].json().get("grammar").is_none());
}

#[tokio::test]
async fn vllm_says_its_context_as_max_model_len() {
    let server = FakeServer::start().await;
    // vLLM's model card shape (vllm/entrypoints/openai/protocol.py `ModelCard`).
    server.push(
        MODELS,
        Reply::json(
            200,
            json!({"object": "list", "data": [{
                "id": "Qwen/Qwen3-8B", "object": "model", "created": 1_795_430_000,
                "owned_by": "vllm", "root": "Qwen/Qwen3-8B", "parent": null,
                "max_model_len": 8192, "permission": []
            }]})
            .to_string(),
        ),
    );
    let window = client(&server)
        .context_window("Qwen/Qwen3-8B")
        .await
        .unwrap();
    assert_eq!(
        (window.tokens, window.source.as_str()),
        (8192, "vLLM's max_model_len")
    );
}

#[tokio::test]
async fn lm_studio_is_asked_on_its_own_api_where_the_others_say_nothing() {
    let server = FakeServer::start().await;
    server.push(
        MODELS,
        Reply::json(200, r#"{"object":"list","data":[{"id":"qwen3-4b","object":"model","owned_by":"organization_owner"}]}"#),
    );
    // LM Studio's REST API (docs: "REST API v0", `GET /api/v0/models`).
    server.push(
        "GET /api/v0/models",
        Reply::json(
            200,
            json!({"object": "list", "data": [
                {"id": "qwen3-4b", "object": "model", "type": "llm", "publisher": "qwen",
                 "arch": "qwen3", "compatibility_type": "gguf", "quantization": "Q4_K_M",
                 "state": "loaded", "max_context_length": 32768, "loaded_context_length": 4096}
            ]})
            .to_string(),
        ),
    );
    let client = client(&server);
    let window = client.context_window("qwen3-4b").await.unwrap();
    assert_eq!(
        (window.tokens, window.source.as_str()),
        (4096, "LM Studio, as loaded")
    );
    assert_eq!(routes(&server), ASKED);
    // Remembered a while, across clients: the next turn does not ask again.
    OpenAiClient::new(config(&server))
        .unwrap()
        .context_window("qwen3-4b")
        .await;
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_hosted_api_leaves_the_window_unknown() {
    let server = FakeServer::start().await;
    server.push(
        MODELS,
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"gpt-x","object":"model"}]}"#,
        ),
    );
    assert_eq!(client(&server).context_window("gpt-x").await, None);
    assert_eq!(
        routes(&server),
        ASKED,
        "each way asked once, each answered nothing"
    );
}

fn config(server: &FakeServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(server.url());
    config.retry = cairn_providers::http::RetryPolicy {
        attempts: 2,
        first_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    };
    config
}

#[tokio::test]
async fn a_narrated_call_is_asked_again_with_the_call_required() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(cairn_testkit::sse::text(&[
            "I'll use the read_file ",
            "tool to read README.md.",
        ])),
    );
    server.push(
        CHAT,
        Reply::sse(cairn_testkit::sse::tool_calls(&[(
            "call_r",
            "read_file",
            json!({"path": "README.md"}),
        )])),
    );
    let d = collect(
        OpenAiClient::new(config(&server))
            .unwrap()
            .stream_chat(request(vec![ChatMessage::user("what's in the readme")])),
    )
    .await;
    assert_eq!(d.text, "I'll use the read_file tool to read README.md.");
    assert_eq!(
        d.calls,
        [call("call_r", "read_file", r#"{"path":"README.md"}"#)]
    );
    assert_eq!(d.finish, Some(FinishReason::ToolCalls));
    assert_eq!(d.usage, usage(20, 7), "both answers count");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].json().get("tool_choice"), None);
    assert_eq!(requests[1].json()["tool_choice"], "required");
    assert_eq!(
        requests[1].json()["messages"],
        requests[0].json()["messages"]
    );
}

#[tokio::test]
async fn a_conversational_answer_stays_an_answer() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(cairn_testkit::sse::text(&[
            "Hello! I can read files with read_file if you like.",
        ])),
    );
    let d = collect(
        OpenAiClient::new(config(&server))
            .unwrap()
            .stream_chat(request(vec![ChatMessage::user("hi")])),
    )
    .await;
    assert_eq!((d.calls.len(), d.finish), (0, Some(FinishReason::Stop)));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_call_written_as_text_becomes_a_call() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(cairn_testkit::sse::text(&[
            "<tool_call>\n{\"name\": \"read_file\", ",
            "\"arguments\": {\"path\": \"a.txt\"}}\n",
            "</tool_call>",
        ])),
    );
    let d = collect(
        OpenAiClient::new(config(&server))
            .unwrap()
            .stream_chat(request(vec![ChatMessage::user("read a.txt")])),
    )
    .await;
    assert_eq!(d.text, "");
    assert_eq!(
        d.calls,
        [ToolCall {
            written: Some(
                "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>"
                    .into()
            ),
            ..call("", "read_file", r#"{"path":"a.txt"}"#)
        }],
        "kept as the model wrote it, to be shown to it so again"
    );
    // Shown while written, as a native call is: named, then its arguments as they
    // come (the object's own closing brace too, until the block ends).
    assert_eq!(
        d.drafts,
        [(
            String::new(),
            "read_file".to_owned(),
            "{\"path\": \"a.txt\"}}\n".to_owned(),
            1
        )]
    );
    assert_eq!(d.finish, Some(FinishReason::ToolCalls));
    assert_eq!(
        server.requests().len(),
        1,
        "a converted call needs no forced retry"
    );
}

#[tokio::test]
async fn an_unreadable_chunk_is_skipped_when_the_stream_recovers() {
    let mut bytes =
        b"data: {\"choices\":[{\"delta\":{\"content\":\"Well, \"}}]}\n\ndata: {oops\n\n".to_vec();
    bytes.extend_from_slice(&fixture("openai/llamacpp_plain_stream.sse"));
    let d = decode_in_pieces(&bytes, 11).await;
    assert_eq!((d.text.as_str(), d.error), ("Well, Hello.", None));
}

#[tokio::test]
async fn a_wrong_address_or_dialect_is_named_as_such() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::new(404, "text/plain").then(Piece::Bytes(b"404 page not found".to_vec())),
    );
    let d = collect(client(&server).stream_chat(request(vec![ChatMessage::user("hi")]))).await;
    let message = d.error.unwrap().to_string();
    assert!(message.contains("answered HTTP 404: 404 page not found; check that the address is an OpenAI-compatible server"), "{message}");
    // Said for both front ends: the window's Settings and the CLI's flag.
    assert!(
        message.ends_with(
            "or speak Ollama's API to it (the server's API in Settings; --dialect ollama for cairn)"
        ),
        "{message}"
    );
}

fn with_an_image() -> Vec<ChatMessage> {
    vec![
        ChatMessage::user("Chart the sales"),
        ChatMessage::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![
                call("c1", "chart", "{}"),
                call("c2", "read_file", r#"{"path":"a"}"#),
            ],
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
        ChatMessage::Tool {
            tool_call_id: "c2".into(),
            name: "read_file".into(),
            content: "A".into(),
            is_error: false,
            images: Vec::new(),
        },
    ]
}

#[tokio::test]
async fn a_tools_image_follows_the_round_as_an_image_part_until_the_model_refuses_it() {
    let server = FakeServer::start().await;
    let plain = || Reply::sse(cairn_testkit::sse::text(&["Seen."]));
    server.push(CHAT, plain());
    // A refusal in the words vLLM uses for a text-only model (not a recording).
    server.push(
        CHAT,
        Reply::json(
            400,
            r#"{"error":{"message":"qwen3:8b is not a multimodal model","type":"BadRequestError"}}"#,
        ),
    );
    server.push(CHAT, plain());
    server.push(CHAT, plain());
    let client = client(&server);
    for _ in 0..3 {
        let d = collect(client.stream_chat(request(with_an_image()))).await;
        assert_eq!((d.text.as_str(), d.error), ("Seen.", None));
    }
    let sent: Vec<serde_json::Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(sent.len(), 4, "three rounds, one of them refused once");
    let shown = json!({"role": "user", "content": [
        {"type": "text", "text": "The tool results above returned these images (image 1 from `chart`)."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    ]});
    // After both results, never between them: the API wants a call's results together.
    assert_eq!(sent[0]["messages"].as_array().unwrap().len(), 5);
    assert_eq!(sent[0]["messages"][2]["role"], "tool");
    assert_eq!(sent[0]["messages"][3]["role"], "tool");
    assert_eq!(sent[0]["messages"][4], shown);
    assert_eq!(sent[1]["messages"][4], shown, "the refused request");
    for (n, body) in sent.iter().enumerate().skip(2) {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4, "request {n}: no images once refused");
        assert_eq!(messages[2]["content"], "[image 1: image/png, 1 KB]");
    }
}

#[tokio::test]
async fn a_llamacpp_stream_says_how_much_of_its_prompt_was_cached() {
    // Recorded from llama-server: the last chunk's usage carries prompt_tokens_details.
    let d = decode_fixture("openai/llamacpp_smollm2_runaway.sse").await;
    assert_eq!(
        d.usage,
        Some(TokenUsage {
            prompt_tokens: 879,
            completion_tokens: 1024,
            cached_prompt_tokens: 96,
        })
    );
    assert_eq!(d.finish, Some(FinishReason::Length));
}
