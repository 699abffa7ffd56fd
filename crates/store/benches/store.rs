//! Store benchmarks on real SQLite files, printed as medians (rerun with
//! `cargo bench -p cairn-store --bench store`):
//!
//! - append: committing a turn's assistant message that carries a 200-node
//!   execution tree (after its user message and placeholder were stored);
//! - open: reading back every message of a 10,000-message thread;
//! - search: full-text search over 100,000 messages, a rare and a common word.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use cairn_protocol::{
    ChatMessage, ExecutionTree, ExecutionTreeNode, MessageStatus, ModelCall, ToolCall, Usage,
};
use cairn_store::{AnswerSnapshot, NewThread, Store};

const WORDS: [&str; 24] = [
    "the", "file", "build", "test", "cargo", "error", "function", "thread", "model", "answer",
    "read", "write", "folder", "config", "server", "token", "stream", "rust", "plan", "step",
    "check", "result", "value", "list",
];

/// Prose of `len` words from a small vocabulary; `n` varies it.
fn text(n: usize, len: usize) -> String {
    (0..len)
        .map(|i| WORDS[(n * 7 + i * 13 + i * i) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn tree(nodes: usize) -> ExecutionTree {
    ExecutionTree::new(
        (0..nodes)
            .map(|i| ExecutionTreeNode {
                id: format!("call_{i}"),
                parent_id: (i % 10 != 0).then(|| format!("call_{}", i - i % 10)),
                name: if i % 10 == 0 {
                    "run_subtask".into()
                } else {
                    "read_file".into()
                },
                title: (i % 10 == 0).then(|| format!("Part {i}")),
                args_preview: Some(format!("{{\"path\":\"src/module_{i}/lib.rs\"}}")),
                result_preview: Some(text(i, 60)),
                is_error: Some(false),
                duration_ms: 12,
                ..ExecutionTreeNode::default()
            })
            .collect(),
    )
}

/// A finished answer as the recorder commits it.
struct Answer {
    text: String,
    reasoning: String,
    replay: Vec<ChatMessage>,
    tree: ExecutionTree,
    usage: Usage,
    calls: Vec<ModelCall>,
}

impl Answer {
    fn snapshot(&self) -> AnswerSnapshot<'_> {
        AnswerSnapshot {
            content: &self.text,
            reasoning: &self.reasoning,
            replay: &self.replay,
            tree: &self.tree,
            usage: Some(&self.usage),
            status: MessageStatus::Complete,
            error: None,
        }
    }

    async fn commit(&self, store: &Store, thread: &str, message: &str) {
        store
            .finish_turn(thread, message, self.snapshot(), &self.calls)
            .await
            .unwrap();
    }
}

fn answer(n: usize, nodes: usize) -> Answer {
    Answer {
        text: text(n, 80),
        reasoning: text(n + 1, 40),
        replay: vec![
            ChatMessage::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "run_subtask".into(),
                    arguments: "{}".into(),
                    written: None,
                }],
            },
            ChatMessage::Tool {
                tool_call_id: "call_0".into(),
                name: "run_subtask".into(),
                content: text(n, 30),
                is_error: false,
                images: Vec::new(),
            },
            ChatMessage::assistant(text(n, 80)),
        ],
        tree: tree(nodes),
        usage: Usage {
            prompt_tokens: 1200,
            completion_tokens: 300,
            llm_calls: 2,
            tool_calls: 1,
            estimated: false,
            cached_prompt_tokens: 0,
        },
        calls: vec![ModelCall {
            operation: "chat".into(),
            model: "qwen3:8b".into(),
            server: Some("ollama".into()),
            depth: 0,
            prompt_tokens: 1200,
            completion_tokens: 300,
            estimated: false,
            latency_ms: 900,
            first_token_ms: Some(120),
            error: None,
        }],
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Fills a thread with `turns` question/answer pairs (small trees on the answers).
async fn fill(store: &Store, thread: &str, turns: usize, offset: usize) {
    for n in 0..turns {
        let start = store
            .begin_turn(thread, &text(offset + n, 25))
            .await
            .unwrap();
        answer(offset + n, 3)
            .commit(store, thread, &start.assistant_id)
            .await;
    }
}

async fn append(dir: &std::path::Path) {
    let store = Store::open(dir.join("append.db")).await.unwrap();
    let thread = store.create_thread(NewThread::default()).await.unwrap().id;
    fill(&store, &thread, 100, 0).await;
    let mut samples = Vec::new();
    for n in 0..300 {
        let start = store.begin_turn(&thread, &text(n, 25)).await.unwrap();
        let done = answer(n, 200);
        let began = Instant::now();
        done.commit(&store, &thread, &start.assistant_id).await;
        samples.push(began.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "append: median {:.3} ms to commit an assistant message with a 200-node execution tree ({} samples; target ≤ 2 ms)",
        median(samples.clone()),
        samples.len()
    );
}

async fn open(dir: &std::path::Path) {
    let store = Store::open(dir.join("open.db")).await.unwrap();
    let thread = store.create_thread(NewThread::default()).await.unwrap().id;
    fill(&store, &thread, 5_000, 0).await;
    let mut samples = Vec::new();
    for _ in 0..21 {
        let began = Instant::now();
        let messages = store.messages(&thread).await.unwrap();
        samples.push(began.elapsed().as_secs_f64() * 1e3);
        assert_eq!(messages.len(), 10_000);
    }
    println!(
        "open: median {:.1} ms to load a 10,000-message thread with its execution trees ({} samples; target ≤ 100 ms)",
        median(samples.clone()),
        samples.len()
    );
}

async fn search(dir: &std::path::Path) {
    let store = Store::open(dir.join("search.db")).await.unwrap();
    // 100,000 messages in 100 threads; one thread in ten mentions "quasar" once.
    for t in 0..100 {
        let thread = store
            .create_thread(NewThread {
                title: format!("thread {t}"),
                ..NewThread::default()
            })
            .await
            .unwrap()
            .id;
        fill(&store, &thread, 500, t * 500).await;
        if t % 10 == 0 {
            store.begin_turn(&thread, "what is a quasar").await.unwrap();
        }
    }
    for (label, query) in [("rare word", "quasar"), ("common word", "cargo")] {
        let mut samples = Vec::new();
        for _ in 0..51 {
            let began = Instant::now();
            let hits = store.search(query, 20).await.unwrap();
            samples.push(began.elapsed().as_secs_f64() * 1e3);
            assert!(!hits.is_empty());
        }
        println!(
            "search ({label} `{query}`): median {:.2} ms over 100,000+ messages, top 20 with snippets ({} samples; target ≤ 50 ms)",
            median(samples.clone()),
            samples.len()
        );
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let filter = std::env::args().nth(1).filter(|arg| !arg.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    runtime.block_on(async {
        if wants("append") {
            append(dir.path()).await;
        }
        if wants("open") {
            open(dir.path()).await;
        }
        if wants("search") {
            search(dir.path()).await;
        }
    });
}
