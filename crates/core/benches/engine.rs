//! Engine benchmarks, printed as medians (rerun with `cargo bench -p cairn-core`):
//!
//! - loop overhead: a scripted model that answers instantly, 20 rounds of one tool
//!   call each; the figure is the turn's time divided by its 20 tool rounds;
//! - streaming throughput: recorded-shape SSE bytes → the OpenAI decoder → the loop
//!   → every event serialized to JSON, in tokens per second;
//! - fan-out: 8 parallel subtasks whose model answers after 100 ms, against one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use cairn_core::{Engine, EventSink, Limits, Toolbelt, TurnControl, TurnRequest};
use cairn_protocol::{ChatMessage, Event, PermissionMode, ToolCategory, TurnStatus};
use cairn_providers::openai::decode_body;
use cairn_providers::{ChatRequest, ModelClient, ModelStream, Sampling};
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use cairn_tools::{Tool, ToolContext, ToolError, ToolOutput};
use futures_util::stream;
use serde_json::{Value, json};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let filter = std::env::args().nth(1).filter(|arg| !arg.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if wants("loop_overhead") {
        runtime.block_on(loop_overhead());
    }
    if wants("stream_throughput") {
        runtime.block_on(stream_throughput());
    }
    if wants("fan_out") {
        runtime.block_on(fan_out());
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// A sink that does what a front end must at least do: serialize every event.
#[derive(Default)]
struct Serializing {
    out: Mutex<Vec<u8>>,
}

impl EventSink for Serializing {
    fn emit(&self, event: Event) {
        let mut out = self.out.lock().unwrap();
        serde_json::to_writer(&mut *out, &event).unwrap();
        out.push(b'\n');
    }
}

fn request(tools: Toolbelt) -> TurnRequest {
    TurnRequest {
        thread_id: "bench".into(),
        message_id: "bench".into(),
        model: "bench".into(),
        history: vec![ChatMessage::user("go")],
        mode: PermissionMode::Auto,
        tools,
        workspace: None,
        sampling: Sampling::default(),
        rules: Default::default(),
        instructions: None,
        agents: Default::default(),
        plans: None,
        load_tools: Vec::new(),
    }
}

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

const TOOL_ROUNDS: usize = 20;

async fn loop_overhead() {
    let model = ScriptedModel::from_fn(|request: &ChatRequest| {
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Tool { .. }))
            .count();
        if results < TOOL_ROUNDS {
            ScriptedTurn::call("noop", json!({"n": results}))
        } else {
            ScriptedTurn::text("done")
        }
    });
    // 20 tool rounds and the answer after them are 21 iterations of the level.
    let limits = Limits {
        max_iterations_per_level: TOOL_ROUNDS as u32 + 1,
        ..Limits::default()
    };
    let engine = Engine::new(Arc::new(model), limits);
    let tools = Toolbelt::new([Arc::new(Noop) as Arc<dyn Tool>]).unwrap();
    let run = || async {
        let sink = Arc::new(Serializing::default());
        let outcome = engine
            .run_turn(request(tools.clone()), TurnControl::default(), sink)
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed);
        assert_eq!(outcome.usage.tool_calls as usize, TOOL_ROUNDS);
    };
    for _ in 0..50 {
        run().await;
    }
    let mut samples = Vec::new();
    for _ in 0..301 {
        let start = Instant::now();
        run().await;
        samples.push(start.elapsed().as_secs_f64() * 1e6 / TOOL_ROUNDS as f64);
    }
    println!(
        "loop_overhead: median {:.1} µs per model round ({TOOL_ROUNDS} rounds of one tool call, {} samples; target ≤ 50 µs)",
        median(samples.clone()),
        samples.len()
    );
}

/// Replays one SSE body through the production decoder, in 16 KiB reads.
struct Replay {
    body: Bytes,
}

impl ModelClient for Replay {
    fn stream_chat(&self, _request: ChatRequest) -> ModelStream {
        let body = self.body.clone();
        let reads: Vec<Result<Bytes, std::io::Error>> = (0..body.len())
            .step_by(16 * 1024)
            .map(|start| Ok(body.slice(start..(start + 16 * 1024).min(body.len()))))
            .collect();
        Box::pin(decode_body(
            "bench".into(),
            stream::iter(reads),
            Duration::from_secs(60),
        ))
    }
}

const TOKENS: usize = 100_000;

/// An answer of `TOKENS` one-word deltas, each framed like the recorded OpenAI chunks.
fn recorded_shape_stream() -> Bytes {
    let mut body = String::new();
    for n in 0..TOKENS {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL\",\"object\":\"chat.completion.chunk\",\"created\":1727346168,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_5050236cbd\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" word{}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            n % 1000
        ));
    }
    body.push_str("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    Bytes::from(body)
}

async fn stream_throughput() {
    let body = recorded_shape_stream();
    let megabytes = body.len() as f64 / 1e6;
    let engine = Engine::new(Arc::new(Replay { body }), Limits::default());
    let mut samples = Vec::new();
    for round in 0..23 {
        let sink = Arc::new(Serializing::default());
        let start = Instant::now();
        let outcome = engine
            .run_turn(
                request(Toolbelt::default()),
                TurnControl::default(),
                Arc::clone(&sink) as Arc<dyn EventSink>,
            )
            .await;
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(outcome.status, TurnStatus::Completed);
        let lines = sink
            .out
            .lock()
            .unwrap()
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        assert_eq!(
            lines,
            TOKENS + 2,
            "one chunk event per token, plus two agent states"
        );
        if round >= 3 {
            samples.push(TOKENS as f64 / seconds);
        }
    }
    let tokens_per_second = median(samples.clone());
    println!(
        "stream_throughput: median {:.0} tokens/s, {:.1} MB/s of SSE (SSE → decoder → loop → JSON events, {TOKENS} tokens, {} samples; target ≥ 500,000 tokens/s)",
        tokens_per_second,
        tokens_per_second * megabytes / TOKENS as f64,
        samples.len()
    );
}

async fn fan_out_wall(children: usize) -> f64 {
    let model = ScriptedModel::new();
    let fan = (0..children).fold(ScriptedTurn::new(), |turn, n| {
        turn.tool(
            "run_subtask",
            json!({"title": format!("child {n}"), "instructions": "answer"}),
        )
    });
    model.root([fan, ScriptedTurn::text("all done")]);
    for n in 0..children {
        model.subtask(
            &format!("child {n}"),
            [ScriptedTurn::new()
                .delay(Duration::from_millis(100))
                .say("result")],
        );
    }
    let engine = Engine::new(Arc::new(model), Limits::default());
    let start = Instant::now();
    let outcome = engine
        .run_turn(
            request(Toolbelt::default()),
            TurnControl::default(),
            Arc::new(Serializing::default()),
        )
        .await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    start.elapsed().as_secs_f64() * 1e3
}

async fn fan_out() {
    let mut ratios = Vec::new();
    let (mut eights, mut ones) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let one = fan_out_wall(1).await;
        let eight = fan_out_wall(8).await;
        ones.push(one);
        eights.push(eight);
        ratios.push(eight / one);
    }
    println!(
        "fan_out: 8 parallel subtasks {:.1} ms vs 1 subtask {:.1} ms, ratio {:.3} (medians of {}; target ≤ 1.1)",
        median(eights),
        median(ones),
        median(ratios.clone()),
        ratios.len()
    );
}
