//! Running the `cairn` binary with a database of its own, and reading what it says.

pub use std::process::Stdio;
pub use std::time::Duration;

pub use cairn_protocol::{Event, PromptCut, ToolCallStatus, TurnStatus};
pub use cairn_testkit::{FakeServer, Recorded, Reply, fixture, sse};
pub use serde_json::json;
pub use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
pub use tokio::process::{Child, Command};

pub const CHAT: &str = "POST /v1/chat/completions";

/// A database of its own for every command that does not name one, so tests never
/// share state or touch the user's real one.
pub fn scratch_db() -> std::path::PathBuf {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    dir.path()
        .join(format!("cairn-{}.db", NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// An empty folder of the user's agent profiles, so no test reads the real one.
pub fn no_user_agents() -> &'static std::path::Path {
    use std::sync::OnceLock;
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// The `cairn` under test: this build's, or the one `CAIRN_TEST_CLI` names (the
/// Windows build run by Wine, through `scripts/wine-cairn`).
pub fn cairn_binary() -> std::ffi::OsString {
    std::env::var_os("CAIRN_TEST_CLI").unwrap_or_else(|| env!("CARGO_BIN_EXE_cairn").into())
}

pub fn cairn(args: &[&str]) -> Command {
    let mut command = Command::new(cairn_binary());
    command
        .args(args)
        .env("CAIRN_DB", scratch_db())
        .env("CAIRN_AGENTS_DIR", no_user_agents())
        .env_remove("CAIRN_AGENT")
        .env_remove("CAIRN_MODEL")
        .env_remove("CAIRN_BASE_URL")
        .env_remove("CAIRN_DIALECT")
        .env_remove("CAIRN_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn events(&self) -> Vec<Event> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }
}

pub async fn output(command: Command) -> Output {
    output_within(command, Duration::from_secs(30)).await
}

/// What `command` printed and how it ended, once it has ended within `limit`.
pub async fn output_within(mut command: Command, limit: Duration) -> Output {
    let out = tokio::time::timeout(limit, command.output())
        .await
        .expect("cairn did not finish")
        .unwrap();
    let mut stderr = String::from_utf8(out.stderr).unwrap();
    if let Some(signal) = killed_by(&out.status) {
        // Code -1 alone would hide what ended it: the signal is half the diagnosis.
        stderr.push_str(&format!("[cairn was killed by signal {signal}]"));
    }
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr,
    }
}

#[cfg(unix)]
fn killed_by(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

#[cfg(not(unix))]
fn killed_by(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The message of the turn's `error` event.
pub fn error_message(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|event| match event {
            Event::Error(error) => Some(error.message.clone()),
            _ => None,
        })
        .expect("an error event")
}

pub fn done(events: &[Event]) -> &cairn_protocol::Done {
    match events.last().unwrap() {
        Event::Done(done) => done,
        other => panic!("the last event is not done: {other:?}"),
    }
}

/// Ctrl-C, as a terminal sends it to a running `cairn`.
pub fn interrupt(child: &Child) {
    let pid = child.id().expect("cairn is running").to_string();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

pub async fn spawn_json(
    args: &[&str],
) -> (
    Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let mut command = cairn(args);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdout)
}

pub async fn next_event(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) -> Event {
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("no event in time")
        .unwrap()
        .expect("stdout closed");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// A turn whose model calls a tool when only one model call is allowed.
pub async fn out_of_llm_calls(json: bool) -> Output {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("c1", "list_dir", json!({"path": "."}))])),
    );
    let workspace = tempfile::tempdir().unwrap();
    let url = server.url();
    let mut args = vec!["run", "--base-url", &url, "--model", "m", "--workspace"];
    args.push(workspace.path().to_str().unwrap());
    if json {
        args.push("--json");
    }
    args.push("look");
    let mut command = cairn(&args);
    command.env("CAIRN_MAX_TOTAL_LLM_CALLS", "1");
    output(command).await
}

pub fn closed_port_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

pub fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flat_map(|entry| {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

pub fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("threads.db").to_str().unwrap().to_owned()
}

/// The test MCP server of the tools crate, built beside `cairn` by a workspace build.
pub fn mcp_fixture() -> std::path::PathBuf {
    cairn_testkit::mcp::stdio_fixture()
}
