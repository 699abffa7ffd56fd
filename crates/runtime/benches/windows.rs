//! What a turn sends for each size of context window, printed as a table (rerun with
//! `cargo bench -p cairn-runtime --bench windows`). Sizes, not times: the figures are
//! the same on every run.
//!
//! A thread in a workspace, in default mode, with the whole toolbelt, against a
//! scripted server of each dialect that reports a 2k, 4k or 8k window, or none (a
//! hosted API). Its model makes ten rounds of calls (files of 30 KB read, a search,
//! a listing) and then answers. Per window: the fixed prompt (system prompt and tool
//! schemas, as sent) in characters and estimated tokens, and the largest request of
//! the turn, estimated, against the window.
//!
//! With `CAIRN_REAL_MODEL_URL` set to a llama.cpp server (`scripts/real-model serve`,
//! with a template that renders tools), the OpenAI requests of the 4k turn are sent
//! to it too, and its own count of each prompt is printed beside the estimate.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::atomic::{AtomicUsize, Ordering};

use cairn_core::Limits;
use cairn_protocol::{PermissionMode, TurnStatus};
use cairn_providers::{Dialect, Endpoint, Sampling, Server};
use cairn_runtime::{ModelChoice, Runtime};
use cairn_store::Store;
use cairn_testkit::wire::{estimated_tokens, fixed_prompt_chars};
use cairn_testkit::{FakeServer, Recorded, Reply, ndjson, sse};
use serde_json::{Value, json};

const ROUNDS: usize = 10;

/// The call the scripted model makes in round `n`, or `None` once it has made ten.
fn call_for(round: usize) -> Option<(&'static str, Value)> {
    (round < ROUNDS).then(|| match round % 3 {
        0 => ("read_file", json!({"path": format!("docs/part{round}.md")})),
        1 => ("search_files", json!({"pattern": "garden"})),
        _ => ("list_dir", json!({"path": "docs"})),
    })
}

/// Counts the requests a scripted model has answered: small windows prune older
/// rounds, so the request itself cannot tell which round it is.
fn counter() -> impl Fn() -> usize {
    let answered = AtomicUsize::new(0);
    move || answered.fetch_add(1, Ordering::SeqCst)
}

async fn server(dialect: Dialect, window: Option<u32>) -> (FakeServer, &'static str) {
    let server = FakeServer::start().await;
    let route = match dialect {
        Dialect::Ollama => {
            server.fallback("GET /api/ps", Reply::json(200, r#"{"models": []}"#));
            let show = window.map_or(
                json!({}),
                |tokens| json!({"model_info": {"llama.context_length": tokens}}),
            );
            server.fallback("POST /api/show", Reply::json(200, show.to_string()));
            let round = counter();
            server.respond("POST /api/chat", move |_: &Recorded| {
                Reply::ndjson(match call_for(round()) {
                    Some(call) => ndjson::tool_calls(&[call]),
                    None => ndjson::text(&["Done."]),
                })
            });
            "POST /api/chat"
        }
        Dialect::Openai => {
            let meta = window.map_or(json!({}), |tokens| json!({"n_ctx": tokens}));
            server.fallback(
                "GET /v1/models",
                Reply::json(
                    200,
                    json!({"data": [{"id": "small", "meta": meta}]}).to_string(),
                ),
            );
            let next = counter();
            server.respond("POST /v1/chat/completions", move |_: &Recorded| {
                let round = next();
                Reply::sse(match call_for(round) {
                    Some((name, args)) => sse::tool_calls(&[(&format!("c{round}"), name, args)]),
                    None => sse::text(&["Done."]),
                })
            });
            "POST /v1/chat/completions"
        }
    };
    (server, route)
}

struct Measured {
    fixed_chars: usize,
    fixed_tokens: u64,
    largest: u64,
    requests: usize,
    bodies: Vec<Value>,
}

async fn measure(dialect: Dialect, window: Option<u32>) -> Measured {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    let page: String = (1..=500)
        .map(|n| format!("line {n:03}: the garden path runs past the old wall\n"))
        .collect();
    for round in 0..ROUNDS {
        std::fs::write(docs.join(format!("part{round}.md")), &page).unwrap();
    }
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    let runtime = Runtime::with_agents_dir(store, Limits::default(), None);
    let thread = runtime
        .new_thread("bench", PermissionMode::Default)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(dir.path()))
        .await
        .unwrap();
    let (server, route) = server(dialect, window).await;
    let connected = Server::connect(&Endpoint::new(dialect, server.url())).unwrap();
    let choice = ModelChoice {
        client: connected.model_client(),
        dialect: dialect.to_string(),
        base_url: connected.server().to_owned(),
        model: "small".into(),
        sampling: Sampling::default(),
    };
    let outcome = runtime
        .send(&thread.id, "What do the docs say about the garden?", choice)
        .await
        .unwrap()
        .finished()
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed, "{:?}", outcome.error);
    let bodies: Vec<Value> = server
        .requests_to(route)
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(bodies.len(), ROUNDS + 1);
    let first = &bodies[0];
    let mut opening = first.clone();
    opening["messages"] = json!([first["messages"][0]]);
    Measured {
        fixed_chars: fixed_prompt_chars(first),
        fixed_tokens: estimated_tokens(&opening),
        largest: bodies.iter().map(estimated_tokens).max().unwrap(),
        requests: bodies.len(),
        bodies,
    }
}

/// The prompt tokens a real server counts for `body`, asked for a one-token answer.
async fn counted(http: &reqwest::Client, url: &str, body: &Value) -> u64 {
    let mut body = body.clone();
    body["stream"] = json!(false);
    body["max_tokens"] = json!(1);
    body.as_object_mut().unwrap().remove("stream_options");
    let answer: Value = http
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["usage"]["prompt_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("no usage in {answer}"))
}

/// Each request of a turn, estimated and as the real server at `url` counts it.
async fn against_a_real_tokenizer(url: &str, bodies: &[Value]) {
    let http = reqwest::Client::new();
    println!("\n| request | estimated | the server counted | counted / estimated |");
    println!("|---|---|---|---|");
    for (n, body) in bodies.iter().enumerate() {
        let estimated = estimated_tokens(body);
        let counted = counted(&http, url, body).await;
        println!(
            "| {} | {estimated} | {counted} | {:.2} |",
            n + 1,
            counted as f64 / estimated as f64
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "| window | dialect | fixed prompt | largest of {} requests |",
        ROUNDS + 1
    );
    println!("|---|---|---|---|");
    let mut real = None;
    for window in [Some(2048), Some(4096), Some(8192), None] {
        for dialect in [Dialect::Ollama, Dialect::Openai] {
            let measured = measure(dialect, window).await;
            let largest = match window {
                Some(tokens) => format!(
                    "{} tokens ({:.0}% of the window)",
                    measured.largest,
                    measured.largest as f64 * 100.0 / f64::from(tokens)
                ),
                None => format!("{} tokens", measured.largest),
            };
            assert_eq!(measured.requests, ROUNDS + 1);
            if window == Some(4096) && dialect == Dialect::Openai {
                real = Some(measured.bodies.clone());
            }
            println!(
                "| {} | {dialect} | {} characters, {} tokens | {largest} |",
                window.map_or("unknown".to_owned(), |tokens| tokens.to_string()),
                measured.fixed_chars,
                measured.fixed_tokens,
            );
        }
    }
    if let (Ok(url), Some(bodies)) = (std::env::var("CAIRN_REAL_MODEL_URL"), real) {
        against_a_real_tokenizer(&url, &bodies).await;
    }
}
