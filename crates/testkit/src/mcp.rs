//! A misbehaving MCP server for tests, written from the protocol (JSON-RPC 2.0): the
//! same tools over stdio (the `mcp-fixture-server` binary) and over streamable HTTP
//! ([`McpHttpFixture`]), one tool per fault a real server has been seen to have.
//!
//! | tool | does |
//! |---|---|
//! | `echo {text}` | answers the text (marked read-only) |
//! | `shout {text}` | answers it upper-cased |
//! | `fail` | an error result (`isError`) |
//! | `crash` | the server dies mid-call |
//! | `big {bytes}` | answers that many bytes of text (quotes and newlines, so the JSON line is about twice that) |
//! | `hang` | never answers |
//! | `garbage` | answers with a line that is not JSON |
//! | `malformed` | answers with JSON-RPC that has neither result nor error |
//! | `stray` | answers an id nobody asked for, then the real one |
//! | `close_stdout` | closes its output and keeps running |
//! | `flood_stderr {bytes}` | writes that much to stderr, then answers |
//! | `streamed {text}` | over HTTP: answers as a stream of events after a notification |
//! | `chart` | answers a line of text and [`CHART_PNG`], an image (marked read-only) |

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::server::read_request;

/// The image `chart` returns, in base64: a 96×64 PNG, its top half orange
/// (`#d9480f`), its bottom half blue (`#1c7ed6`), so a screenshot can find it.
pub const CHART_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAMAAADS6oI8AAAABlBMVEXZSA8cftZrho57AAAAK0lEQVRYw+3NMQ0AAAgDsOHfNM8scJC0BpoAAADUHBMIBAKBQCAQCARvggXceAwB8NE+6QAAAABJRU5ErkJggg==";

/// What the fixture does with one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Act {
    /// Write this JSON-RPC message.
    Send(Value),
    /// Write these exact bytes as one line.
    Raw(String),
    /// Several acts in order.
    All(Vec<Act>),
    /// Nothing: the message was a notification.
    Nothing,
    /// Never answer this call.
    Hang,
    /// Die at once with this status.
    Exit(i32),
    /// Close the output and carry on.
    CloseOutput,
    /// Write this many bytes to stderr.
    Stderr(usize),
    /// Over HTTP: answer as a stream of events, a notification first.
    Stream(Value),
}

/// The tools as `tools/list` gives them.
pub fn tools() -> Value {
    let text = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let bytes = json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]});
    let none = json!({"type": "object"});
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    let mut echo = tool("echo", "Echo the text back", &text);
    echo["inputSchema"]["required"] = json!(["text"]);
    echo["annotations"] = json!({"readOnlyHint": true});
    let mut chart = tool("chart", "Draws the sales chart", &none);
    chart["annotations"] = json!({"readOnlyHint": true});
    json!({"tools": [
        echo,
        tool("shout", "Upper-case the text", &text),
        tool("fail", "Always fails", &none),
        tool("crash", "Dies mid-call", &none),
        tool("big", "Answers that many bytes", &bytes),
        tool("hang", "Never answers", &none),
        tool("garbage", "Answers with a line that is not JSON", &none),
        tool("malformed", "Answers with broken JSON-RPC", &none),
        tool("stray", "Answers an id nobody asked for first", &none),
        tool("close_stdout", "Closes its output and keeps running", &none),
        tool("flood_stderr", "Floods stderr, then answers", &bytes),
        tool("streamed", "Answers as a stream of events", &text),
        chart
    ]})
}

/// What the fixture does with `message`.
pub fn act(message: &Value) -> Act {
    let Some(id) = message.get("id").cloned() else {
        return Act::Nothing; // a notification
    };
    let result = |result: Value| Act::Send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    let text_result = |text: String| result(json!({"content": [{"type": "text", "text": text}]}));
    match message["method"].as_str().unwrap_or("") {
        "initialize" => result(json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fixture", "version": "1.0.0"}
        })),
        "ping" => result(json!({})),
        "tools/list" => result(tools()),
        "tools/call" => {
            let arguments = &message["params"]["arguments"];
            let text = arguments["text"].as_str().unwrap_or("").to_owned();
            let bytes = arguments["bytes"].as_u64().unwrap_or(0) as usize;
            match message["params"]["name"].as_str().unwrap_or("") {
                "echo" => text_result(text),
                "shout" => text_result(text.to_uppercase()),
                "fail" => result(json!({
                    "content": [{"type": "text", "text": "the fixture failed on purpose"}],
                    "isError": true
                })),
                "crash" => Act::Exit(9),
                "big" => text_result(filler(bytes)),
                "hang" => Act::Hang,
                "garbage" => Act::Raw("Server says hello on stdout!".into()),
                "malformed" => Act::Raw(json!({"jsonrpc": "2.0", "id": id}).to_string()),
                "stray" => Act::All(vec![
                    Act::Send(json!({"jsonrpc": "2.0", "id": 987_654, "result": {}})),
                    text_result("answered after a stray".into()),
                ]),
                "close_stdout" => Act::CloseOutput,
                "flood_stderr" => Act::All(vec![Act::Stderr(bytes), text_result("flooded".into())]),
                "chart" => result(json!({"content": [
                    {"type": "text", "text": "Sales by month:"},
                    {"type": "image", "mimeType": "image/png", "data": CHART_PNG}
                ]})),
                "streamed" => Act::Stream(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": text}]
                }})),
                other => Act::Send(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32602, "message": format!("no tool {other}")}})),
            }
        }
        _ => Act::Send(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}})),
    }
}

/// `bytes` bytes of text full of what JSON must escape.
fn filler(bytes: usize) -> String {
    let line = "a \"quoted\" word\tand a tab\n";
    let mut text = line.repeat(bytes / line.len() + 1);
    text.truncate(bytes);
    text
}

/// The fixture's binary (`cargo build -p cairn-testkit --bin mcp-fixture-server`),
/// built (a no-op when fresh) the first time a test process asks.
///
/// # Panics
/// When it cannot be built.
#[allow(clippy::expect_used, clippy::panic)]
pub fn stdio_fixture() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // target/<profile>/deps/<test> → target/<profile>/mcp-fixture-server
            let exe = std::env::current_exe().expect("the test's own path");
            let profile = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("a target folder");
            let path = profile.join("mcp-fixture-server");
            // Built every run (a no-op when fresh): a binary left from an older
            // checkout would lack the tools added since.
            {
                let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
                let mut build = std::process::Command::new(cargo);
                build.args([
                    "build",
                    "-p",
                    "cairn-testkit",
                    "--bin",
                    "mcp-fixture-server",
                ]);
                if profile.ends_with("release") {
                    build.arg("--release");
                }
                let status = build.status().expect("cargo runs");
                assert!(status.success(), "building the MCP fixture failed");
            }
            path
        })
        .clone()
}

/// The fixture over streamable HTTP, on 127.0.0.1. Each POST is answered by [`act`];
/// a call that hangs keeps its connection open, a crash or a closed output cuts it.
#[derive(Debug)]
pub struct McpHttpFixture {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    accept: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Seen {
    messages: Vec<Value>,
    sessions: VecDeque<Option<String>>,
}

impl Drop for McpHttpFixture {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl McpHttpFixture {
    /// # Panics
    /// When no local port can be bound.
    #[allow(clippy::expect_used)]
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a local port");
        let addr = listener.local_addr().expect("local address");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let shared = Arc::clone(&seen);
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                connections.spawn(serve(socket, Arc::clone(&shared)));
            }
        });
        Self { addr, seen, accept }
    }

    /// `http://127.0.0.1:PORT/mcp`
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every message posted, in order.
    pub fn messages(&self) -> Vec<Value> {
        self.lock().messages.clone()
    }

    /// The session id each message came with.
    pub fn sessions(&self) -> Vec<Option<String>> {
        self.lock().sessions.iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

const SESSION: &str = "fixture-session-1";

async fn serve(mut socket: TcpStream, seen: Arc<Mutex<Seen>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    if request.method != "POST" {
        let _ = socket
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        return;
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        let _ = socket
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )
            .await;
        return;
    };
    {
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.messages.push(message.clone());
        seen.sessions
            .push_back(request.header("mcp-session-id").map(str::to_owned));
    }
    let session = if message["method"] == "initialize" {
        format!("mcp-session-id: {SESSION}\r\n")
    } else {
        String::new()
    };
    let _ = answer(&mut socket, act(&message), &session).await;
}

async fn answer(socket: &mut TcpStream, act: Act, session: &str) -> std::io::Result<()> {
    match act {
        Act::Send(message) => {
            let body = message.to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{session}connection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await
        }
        Act::Raw(text) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                text.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(text.as_bytes()).await
        }
        Act::Stream(message) => {
            let body = format!(
                "event: message\ndata: {}\n\nevent: message\ndata: {message}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
            );
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n{session}connection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await
        }
        Act::All(acts) => {
            // Over HTTP one request has one answer: the last act is it.
            match acts.into_iter().last() {
                Some(last) => Box::pin(answer(socket, last, session)).await,
                None => Ok(()),
            }
        }
        Act::Nothing => {
            socket
                .write_all(
                    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await
        }
        Act::Hang => {
            // Holds the line until the client gives up on it.
            let mut sink = [0u8; 64];
            while tokio::io::AsyncReadExt::read(socket, &mut sink).await? > 0 {}
            Ok(())
        }
        Act::Exit(_) | Act::CloseOutput | Act::Stderr(_) => socket.shutdown().await,
    }
}
