//! Parser throughput of both dialects, printed as medians (rerun with
//! `cargo bench -p cairn-providers --bench parsers`): recorded-shape stream bytes in
//! 16 KiB reads → framing → payload decoder → model events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use cairn_providers::{ModelEvent, ProviderError};
use futures_util::{Stream, StreamExt, stream};

const TOKENS: usize = 100_000;

/// One delta per token, framed like the recorded OpenAI chunks.
fn openai_body() -> Bytes {
    let mut body = String::new();
    for n in 0..TOKENS {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL\",\"object\":\"chat.completion.chunk\",\"created\":1727346168,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_5050236cbd\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" word{}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            n % 1000
        ));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    Bytes::from(body)
}

/// One line per token, framed like the recorded Ollama `/api/chat` lines.
fn ollama_body() -> Bytes {
    let mut body = String::new();
    for n in 0..TOKENS {
        body.push_str(&format!(
            "{{\"model\":\"qwen3.5:2b\",\"created_at\":\"2026-05-04T22:48:14.389618Z\",\"message\":{{\"role\":\"assistant\",\"content\":\" word{}\"}},\"done\":false}}\n",
            n % 1000
        ));
    }
    body.push_str("{\"model\":\"qwen3.5:2b\",\"created_at\":\"2026-05-04T22:48:14.402885Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":20,\"eval_count\":100000}\n");
    Bytes::from(body)
}

fn reads(body: Bytes) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let pieces: Vec<_> = (0..body.len())
        .step_by(16 * 1024)
        .map(|start| Ok(body.slice(start..(start + 16 * 1024).min(body.len()))))
        .collect();
    stream::iter(pieces)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

async fn measure<S>(name: &str, body: Bytes, decode: impl Fn(Bytes) -> S)
where
    S: Stream<Item = Result<ModelEvent, ProviderError>>,
{
    let mut seconds = Vec::new();
    for round in 0..25 {
        let start = Instant::now();
        let mut events = std::pin::pin!(decode(body.clone()));
        let mut texts = 0;
        while let Some(event) = events.next().await {
            if let ModelEvent::Text(_) = event.unwrap() {
                texts += 1;
            }
        }
        assert_eq!(texts, TOKENS);
        if round >= 5 {
            seconds.push(start.elapsed().as_secs_f64());
        }
    }
    let median_seconds = median(seconds.clone());
    println!(
        "{name}: median {:.0} MB/s, {:.0} tokens/s ({TOKENS} tokens, {:.1} MB, {} samples)",
        body.len() as f64 / 1e6 / median_seconds,
        TOKENS as f64 / median_seconds,
        body.len() as f64 / 1e6,
        seconds.len()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let idle = Duration::from_secs(60);
        measure("openai_sse_parser", openai_body(), |body| {
            cairn_providers::openai::decode_body("bench".into(), reads(body), idle)
        })
        .await;
        measure("ollama_ndjson_parser", ollama_body(), |body| {
            cairn_providers::ollama::decode_body("bench".into(), reads(body), idle)
        })
        .await;
    });
}
