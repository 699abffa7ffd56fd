//! The time to the first word against a real model server, beside the server's own
//! for the question alone (rerun with `scripts/real-model with cargo bench -p
//! cairn-runtime --bench real_first_token`; it uses `CAIRN_REAL_MODEL_TOOLS_URL`, a
//! llama.cpp server whose template renders tools, or `CAIRN_FIRST_TOKEN_URL` when set:
//! any llama.cpp server, such as `scripts/real-model serve 1.5b`). A call that asks
//! for approval is denied: the bench times the first word, not what a model does.
//!
//! Per sample, alternating, each with a question of its own (no two share words a
//! cache could reuse):
//! - bare: a client sends the question alone and reads to its first token;
//! - new chat: a new thread in the folder the last one had (the instructions and
//!   the tools are the server's from before; the question is new);
//! - new folder: a new thread in a folder never seen (its path in the system prompt,
//!   which this template renders before the tools);
//! - new folder, read ahead: the same after `Runtime::warm`, as the window does when
//!   the chat opens, the question sent once that is done;
//! - next turn: the new chat's second question;
//! - the question alone after Cairn's prompt: the new folder's request as Cairn sent
//!   it (through a relay that keeps it), its messages cut to the system message and
//!   a new question: the least any turn with that prompt and those tools can cost on
//!   this server, whatever opens the thread.
//!
//! Cairn's time runs from sending the question to its first `chunk` or call. Medians,
//! with the prompt tokens the server counted and how many it had cached.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cairn_core::Limits;
use cairn_protocol::{ApprovalDecision, Event, PermissionMode};
use cairn_providers::{Dialect, Endpoint, Sampling, Server};
use cairn_runtime::{ModelChoice, Runtime};
use cairn_store::Store;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const SAMPLES: usize = 5;

const SUBJECTS: [&str; SAMPLES + 1] = [
    "lighthouses",
    "glaciers",
    "violins",
    "bees",
    "railways",
    "volcanoes",
];

/// One figure: seconds to the first word, and the server's count of the prompt.
#[derive(Debug, Clone, Copy, Default)]
struct Timed {
    seconds: f64,
    prompt: u64,
    cached: u64,
}

#[derive(Default)]
struct Column {
    samples: Vec<Timed>,
}

impl Column {
    /// The median sample by time.
    fn median(&self) -> Timed {
        let mut samples = self.samples.clone();
        samples.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
        samples[samples.len() / 2]
    }
}

/// Whether an event is the first sign of an answer: its text, or a call.
fn answers(event: &Event) -> bool {
    matches!(event, Event::Chunk(_) | Event::ToolCallUpdate(_))
}

/// The bare question: a client sends it alone and reads to the first token.
async fn bare(http: &reqwest::Client, url: &str, question: &str) -> Timed {
    let request = json!({
        "model": "smollm2", "stream": true, "max_tokens": 8, "temperature": 0,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": question}]
    });
    first_token(http, url, &request).await
}

/// Cairn's last request with its messages cut to the system message and `question`.
async fn after_prompt(http: &reqwest::Client, url: &str, sent: &Value, question: &str) -> Timed {
    let mut request = sent.clone();
    request["messages"] = json!([sent["messages"][0], {"role": "user", "content": question}]);
    request["max_tokens"] = json!(8);
    first_token(http, url, &request).await
}

/// Sends `request` and reads to its first token.
async fn first_token(http: &reqwest::Client, url: &str, request: &Value) -> Timed {
    let start = Instant::now();
    let mut answer = http
        .post(format!("{url}/v1/chat/completions"))
        .json(request)
        .send()
        .await
        .unwrap();
    let mut first = None;
    let mut body = String::new();
    while let Some(bytes) = answer.chunk().await.unwrap() {
        body.push_str(&String::from_utf8_lossy(&bytes));
        if first.is_none() && body.contains("\"content\":\"") {
            first = Some(start.elapsed().as_secs_f64());
        }
    }
    let mut timed = Timed {
        seconds: first.expect("a first token"),
        ..Timed::default()
    };
    for line in body.lines() {
        if let Some(payload) = line.strip_prefix("data: ")
            && let Ok(chunk) = serde_json::from_str::<Value>(payload)
            && let Some(tokens) = chunk["usage"]["prompt_tokens"].as_u64()
        {
            timed.prompt = tokens;
            timed.cached = chunk["usage"]["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0);
        }
    }
    timed
}

/// A relay in front of the server that keeps the last chat request it passed on
/// (one request per connection: it answers with `Connection: close`).
async fn relay(upstream: String, http: reqwest::Client) -> (String, Arc<Mutex<Value>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let last = Arc::new(Mutex::new(Value::Null));
    let kept = Arc::clone(&last);
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            let (read, mut write) = socket.into_split();
            let mut read = BufReader::new(read);
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                read.read_line(&mut line).await.unwrap();
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            read.read_exact(&mut body).await.unwrap();
            let mut words = head.split_whitespace();
            let (method, path) = (words.next().unwrap(), words.next().unwrap());
            let request = if method == "POST" {
                if path.ends_with("/chat/completions") {
                    *kept.lock().unwrap() = serde_json::from_slice(&body).unwrap();
                }
                http.post(format!("{upstream}{path}"))
                    .header("content-type", "application/json")
                    .body(body)
            } else {
                http.get(format!("{upstream}{path}"))
            };
            let mut answer = request.send().await.unwrap();
            let kind = answer
                .headers()
                .get("content-type")
                .and_then(|kind| kind.to_str().ok())
                .unwrap_or("application/json")
                .to_owned();
            let status = answer.status().as_u16();
            write
                .write_all(
                    format!(
                        "HTTP/1.1 {status} -\r\ncontent-type: {kind}\r\n\
                         connection: close\r\n\r\n"
                    )
                    .as_bytes(),
                )
                .await
                .unwrap();
            while let Some(bytes) = answer.chunk().await.unwrap() {
                write.write_all(&bytes).await.unwrap();
            }
        }
    });
    (url, last)
}

fn choice(url: &str) -> ModelChoice {
    let server = Server::connect(&Endpoint::new(Dialect::Openai, url)).unwrap();
    ModelChoice {
        client: server.model_client(),
        dialect: "openai".into(),
        base_url: server.server().to_owned(),
        model: "smollm2".into(),
        sampling: Sampling {
            max_tokens: Some(8),
            ..Sampling::default()
        },
    }
}

/// A new thread in `folder`.
async fn new_chat(runtime: &Runtime, folder: &Path) -> String {
    let thread = runtime
        .new_thread("A question", PermissionMode::Default)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(folder))
        .await
        .unwrap();
    thread.id
}

/// One of Cairn's turns in `thread`, timed from sending `question` to its first word.
async fn ask(runtime: &Runtime, thread: &str, question: &str, url: &str) -> Timed {
    let start = Instant::now();
    let live = runtime.send(thread, question, choice(url)).await.unwrap();
    // Attached at once: the server takes far longer to answer than this.
    let (so_far, mut events) = live.attach();
    let mut first = so_far.iter().any(answers).then(Instant::now);
    while let Some(event) = events.recv().await {
        if first.is_none() && answers(&event) {
            first = Some(Instant::now());
        }
        // A model that can call tools may ask to write; no one is there to allow it,
        // and the turn would wait for ever.
        match &event {
            Event::ToolApprovalRequest(request) => runtime
                .answer_approval(&request.approval_id, ApprovalDecision::Deny)
                .unwrap(),
            // The turn's last event: its receiver stays open after it.
            Event::Done(_) => break,
            _ => {}
        }
    }
    live.finished().await.unwrap();
    let usage = live
        .attach()
        .0
        .iter()
        .find_map(|event| match event {
            Event::Done(done) => Some(done.usage),
            _ => None,
        })
        .expect("a done event");
    Timed {
        seconds: first
            .expect("a first word")
            .duration_since(start)
            .as_secs_f64(),
        prompt: usage.prompt_tokens,
        cached: usage.cached_prompt_tokens,
    }
}

fn folder(root: &Path, name: &str) -> std::path::PathBuf {
    let folder = root.join(name);
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "The code word is PELICAN.\n").unwrap();
    folder
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::var("CAIRN_FIRST_TOKEN_URL")
        .or_else(|_| std::env::var("CAIRN_REAL_MODEL_TOOLS_URL"))
        .expect("run under scripts/real-model with (CAIRN_REAL_MODEL_TOOLS_URL)");
    let http = cairn_providers::http::client_builder().build().unwrap();
    // Its own client, keeping no connection: llama.cpp closes an idle one, and a
    // request sent on it fails.
    let fresh = cairn_providers::http::client_builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (relayed, last_sent) = relay(url.clone(), fresh).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    let runtime = Runtime::with_agents_dir(store, Limits::default(), None);
    let shared = folder(dir.path(), "project");
    let names = [
        "bare",
        "new chat",
        "new folder",
        "new folder, read ahead",
        "next turn",
        "the question alone after Cairn's prompt",
    ];
    let mut columns: Vec<Column> = names.iter().map(|_| Column::default()).collect();
    // Round 0 meets the server as a user's first chat does; it is reported apart.
    let mut first_chat = Timed::default();
    for (sample, subject) in SUBJECTS.iter().enumerate() {
        let bare = bare(&http, &url, &format!("Name one fact about {subject}.")).await;
        let thread = new_chat(&runtime, &shared).await;
        let new_chat_time = ask(
            &runtime,
            &thread,
            &format!("What do notes say about {subject}?"),
            &url,
        )
        .await;
        let next = ask(&runtime, &thread, &format!("And why {subject}?"), &url).await;
        let unseen = folder(dir.path(), &format!("{subject}-a"));
        let thread = new_chat(&runtime, &unseen).await;
        let new_folder = ask(
            &runtime,
            &thread,
            &format!("Is {subject} in notes.txt?"),
            &relayed,
        )
        .await;
        let sent = last_sent.lock().unwrap().clone();
        let alone = after_prompt(&http, &url, &sent, &format!("Are {subject} in notes.txt?")).await;
        let unseen = folder(dir.path(), &format!("{subject}-b"));
        let thread = new_chat(&runtime, &unseen).await;
        runtime
            .warm(
                Some(&thread),
                (PermissionMode::Default, None),
                &choice(&url),
            )
            .await
            .unwrap();
        let read_ahead = ask(
            &runtime,
            &thread,
            &format!("Does notes.txt name {subject}?"),
            &url,
        )
        .await;
        if sample == 0 {
            first_chat = new_chat_time;
            continue;
        }
        for (column, timed) in
            columns
                .iter_mut()
                .zip([bare, new_chat_time, new_folder, read_ahead, next, alone])
        {
            column.samples.push(timed);
        }
    }
    let base = columns[0].median().seconds;
    println!(
        "first word, medians of {SAMPLES} (seconds, × the bare question, prompt tokens read / cached):"
    );
    for (name, column) in names.iter().zip(&columns) {
        let Timed {
            seconds,
            prompt,
            cached,
        } = column.median();
        println!(
            "  {name:<40} {seconds:>6.2} s {:>6.1}×  {:>5} / {cached}",
            seconds / base,
            prompt - cached.min(prompt),
        );
    }
    println!(
        "  {:<40} {:>6.2} s {:>6.1}×  {:>5} / {} (the server's first sight of the prompt)",
        "first chat",
        first_chat.seconds,
        first_chat.seconds / base,
        first_chat.prompt - first_chat.cached.min(first_chat.prompt),
        first_chat.cached
    );
}
