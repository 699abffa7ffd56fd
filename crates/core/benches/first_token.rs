//! The time Cairn adds to the first token over the server's own, printed as medians
//! (rerun with `cargo bench -p cairn-core --bench first_token`).
//!
//! Per sample, over real HTTP to a local server that answers at once: the server's
//! own first token is a bare client's time from sending the request to the first
//! body bytes; Cairn's is from starting a turn (system prompt, request, stream,
//! decoding, the loop) to the first `chunk` event. Samples alternate so drift hits
//! both alike. Both dialects.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cairn_core::{Engine, EventSink, Limits, Toolbelt, TurnControl, TurnRequest};
use cairn_protocol::{ChatMessage, Event, PermissionMode, TurnStatus};
use cairn_providers::{Dialect, Endpoint, Sampling, Server};
use cairn_testkit::{FakeServer, Reply, fixture, sse};
use futures_util::StreamExt;

const SAMPLES: usize = 200;

struct FirstChunk {
    at: Mutex<Option<Instant>>,
}

impl EventSink for FirstChunk {
    fn emit(&self, event: Event) {
        if let Event::Chunk(_) = event {
            self.at.lock().unwrap().get_or_insert_with(Instant::now);
        }
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

async fn bench(dialect: Dialect, route: &str, answer: Reply) {
    let server = FakeServer::start().await;
    server.fallback(route, answer);
    server.fallback(
        "POST /api/show",
        Reply::json(200, r#"{"model_info":{"x.context_length":8192}}"#),
    );
    let endpoint = Endpoint::new(dialect, server.url());
    let engine = Engine::new(
        Server::connect(&endpoint).unwrap().model_client(),
        Limits::default(),
    );
    let raw = cairn_providers::http::client_builder().build().unwrap();
    let url = format!("{}{}", server.url(), route.trim_start_matches("POST "));
    let (mut bare, mut cairn) = (Vec::new(), Vec::new());
    for sample in 0..SAMPLES + 20 {
        let start = Instant::now();
        let response = raw
            .post(&url)
            .body(r#"{"model":"m","stream":true}"#)
            .send()
            .await
            .unwrap();
        let mut body = response.bytes_stream();
        body.next().await.unwrap().unwrap();
        let bare_first = start.elapsed();
        while body.next().await.is_some() {}

        let sink = Arc::new(FirstChunk {
            at: Mutex::new(None),
        });
        let request = TurnRequest {
            thread_id: "t".into(),
            message_id: "m".into(),
            model: "m".into(),
            history: vec![ChatMessage::user("say hello")],
            mode: PermissionMode::Default,
            tools: Toolbelt::default(),
            workspace: None,
            sampling: Sampling::default(),
            rules: Default::default(),
            instructions: None,
            agents: Default::default(),
            plans: None,
            load_tools: Vec::new(),
        };
        let start = Instant::now();
        let outcome = engine
            .run_turn(
                request,
                TurnControl::default(),
                Arc::clone(&sink) as Arc<dyn EventSink>,
            )
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{:?}", outcome.error);
        let cairn_first = sink.at.lock().unwrap().unwrap() - start;
        if sample >= 20 {
            bare.push(bare_first.as_secs_f64() * 1e3);
            cairn.push(cairn_first.as_secs_f64() * 1e3);
        }
    }
    let (bare, cairn) = (median(bare), median(cairn));
    println!(
        "first_token_{dialect}: server's own {bare:.3} ms, through Cairn {cairn:.3} ms, added {:.3} ms (medians of {SAMPLES}; target ≤ 1 ms)",
        cairn - bare
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        bench(
            Dialect::Openai,
            "POST /v1/chat/completions",
            Reply::sse(sse::text(&["Hello", " there"])),
        )
        .await;
        bench(
            Dialect::Ollama,
            "POST /api/chat",
            Reply::ndjson(fixture("ollama/chat_stream_plain.ndjson")),
        )
        .await;
    });
}
