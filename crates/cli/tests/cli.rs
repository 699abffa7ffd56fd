//! The `cairn` binary against a fake OpenAI-compatible server on localhost: the
//! event lines, approvals over stdin, exit codes, Ctrl-C, the transcript.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use cairn_protocol::{Event, ToolCallStatus, TurnStatus};
use cairn_testkit::{FakeServer, Reply, fixture, sse};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const CHAT: &str = "POST /v1/chat/completions";

/// A database of its own for every command that does not name one, so tests never
/// share state or touch the user's real one.
fn scratch_db() -> std::path::PathBuf {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    dir.path()
        .join(format!("cairn-{}.db", NEXT.fetch_add(1, Ordering::Relaxed)))
}

fn cairn(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .args(args)
        .env("CAIRN_DB", scratch_db())
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

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    fn events(&self) -> Vec<Event> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }
}

async fn output(mut command: Command) -> Output {
    let out = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("cairn did not finish")
        .unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The message of the turn's `error` event.
fn error_message(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|event| match event {
            Event::Error(error) => Some(error.message.clone()),
            _ => None,
        })
        .expect("an error event")
}

fn done(events: &[Event]) -> &cairn_protocol::Done {
    match events.last().unwrap() {
        Event::Done(done) => done,
        other => panic!("the last event is not done: {other:?}"),
    }
}

#[tokio::test]
async fn json_mode_prints_exactly_the_event_lines_and_exits_0() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(fixture("openai/plain_stream_with_usage.sse")),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "gpt-4o",
        "--json",
        "what's",
        "the weather?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let kinds: Vec<_> = events.iter().map(Event::type_name).collect();
    assert_eq!(kinds.first(), Some(&"agent_state"));
    assert_eq!(&kinds[kinds.len() - 2..], ["agent_state", "done"]);
    assert!(
        kinds[1..kinds.len() - 2].iter().all(|k| *k == "chunk"),
        "{kinds:?}"
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Chunk(c) => Some(c.content.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.starts_with("I'm unable to provide real-time weather updates."));
    let done = done(&events);
    assert_eq!(done.status, TurnStatus::Completed);
    assert_eq!(
        (done.usage.prompt_tokens, done.usage.completion_tokens),
        (14, 30)
    );
    let sent = server.requests()[0].json();
    assert_eq!(sent["model"], "gpt-4o");
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": "what's the weather?"})
    );
}

#[tokio::test]
async fn the_model_defaults_to_the_servers_only_one() {
    let server = FakeServer::start().await;
    server.push(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"only-model","object":"model"}]}"#,
        ),
    );
    server.push(CHAT, Reply::sse(sse::text(&["hi"])));
    let url = server.url();
    let out = output(cairn(&["run", "--base-url", &url, "--json", "hello"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[1].json()["model"], "only-model");

    server.push(
        "GET /v1/models",
        Reply::json(200, r#"{"data":[{"id":"a"},{"id":"b"}]}"#),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&["run", "--db", &db, "--base-url", &url, "hello"])).await;
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        format!("cairn: {url} offers several models; choose one with --model: a, b")
    );
    let listed = output(cairn(&["threads", "list", "--db", &db])).await;
    assert_eq!(
        listed.stdout.trim(),
        "no threads yet",
        "a run that could not start leaves no empty thread"
    );
}

#[tokio::test]
async fn a_first_turn_that_fails_lists_as_failed_with_its_question() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 3);
    let listed = output(cairn(&["threads", "list", "--db", &db])).await;
    let row: Vec<&str> = listed.stdout.trim().split('\t').collect();
    assert_eq!(
        row[1..],
        ["hi", "2 messages", "default", "failed"],
        "{row:?}"
    );
}

#[tokio::test]
async fn answers_piped_into_stdin_wait_for_their_questions() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "kept"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Written."])));
    let workspace = tempfile::tempdir().unwrap();
    let url = server.url();
    let mut command = cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "write the notes",
    ]);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    // `echo y | cairn run …`: the answer is in, and stdin closed, before the question.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"y\n").await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes.md")).unwrap(),
        "kept"
    );
    assert!(
        stderr.contains("? write_file asks to write notes.md (1 line, 4 bytes) (write)"),
        "the question says what the call will do: {stderr}"
    );
}

async fn spawn_json(
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

async fn next_event(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Event {
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("no event in time")
        .unwrap()
        .expect("stdout closed");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[tokio::test]
async fn approvals_are_answered_on_stdin() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "call_w",
            "write_file",
            json!({"path": "notes/plan.md", "content": "# Plan\n"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Written."])));
    let workspace = tempfile::tempdir().unwrap();
    let url = server.url();
    let (mut child, mut events) = spawn_json(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "write the plan",
    ])
    .await;
    let request = loop {
        if let Event::ToolApprovalRequest(request) = next_event(&mut events).await {
            break request;
        }
    };
    assert_eq!(request.name, "write_file");
    assert_eq!(
        request.args,
        json!({"path": "notes/plan.md", "content": "# Plan\n"})
    );
    assert_eq!(request.category, cairn_protocol::ToolCategory::Write);
    let mut stdin = child.stdin.take().unwrap();
    // A line that is not an answer is reported and skipped.
    stdin.write_all(b"garbage\n").await.unwrap();
    let answer = json!({"type": "approval_response", "approval_id": request.approval_id, "decision": "allow"});
    stdin
        .write_all(format!("{answer}\n").as_bytes())
        .await
        .unwrap();
    let mut last = None;
    while !matches!(last, Some(Event::Done(_))) {
        last = Some(next_event(&mut events).await);
    }
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes/plan.md")).unwrap(),
        "# Plan\n"
    );
    let followup = server.requests()[1].json();
    let result = followup["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        result,
        json!({"role": "tool", "tool_call_id": "call_w", "content": "created `notes/plan.md` (7 bytes)"})
    );
}

#[tokio::test]
async fn a_closed_stdin_denies_and_the_model_is_told_why() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "call_w",
            "write_file",
            json!({"path": "x.txt", "content": "x"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["I could not write it."])));
    let workspace = tempfile::tempdir().unwrap();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "write x",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!workspace.path().join("x.txt").exists());
    let end = out
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::ToolCallUpdate(u) if u.status == ToolCallStatus::End => Some(u),
            _ => None,
        })
        .unwrap();
    assert_eq!(end.is_error, Some(true));
    assert!(
        end.result
            .unwrap()
            .as_str()
            .unwrap()
            .contains("stdin is closed")
    );
}

#[tokio::test]
async fn an_unreachable_server_exits_3_with_the_reason() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 3);
    let events = out.events();
    let kinds: Vec<_> = events.iter().map(Event::type_name).collect();
    assert_eq!(&kinds[kinds.len() - 3..], ["error", "agent_state", "done"]);
    assert!(
        error_message(&events).contains(&format!("could not connect to {url}")),
        "{events:?}"
    );
    assert!(
        !out.stderr.contains("could not connect"),
        "said once, in the event stream, not again as a log line: {}",
        out.stderr
    );

    // For a person: the failure once, in plain text when stderr is not a terminal.
    let out = output(cairn(&["run", "--base-url", &url, "--model", "m", "hi"])).await;
    assert_eq!(out.code, 3);
    assert_eq!(
        out.stderr.matches("could not connect").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains('\x1b'),
        "no colour codes: {:?}",
        out.stderr
    );
    assert!(
        matches!(&events[events.len() - 3], Event::Error(e) if e.kind == cairn_protocol::ErrorKind::Provider)
    );
    assert_eq!(done(&events).status, TurnStatus::Failed);

    let out = output(cairn(&["run", "--base-url", &url, "hi"])).await;
    assert_eq!(
        out.code, 3,
        "listing models fails the same way: {}",
        out.stderr
    );
}

#[tokio::test]
async fn a_server_error_exits_3_with_its_message() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::json(
            404,
            r#"{"error":{"message":"model \"nope\" not found, try pulling it first"}}"#,
        ),
    );
    let url = server.url();
    let out = output(cairn(&["run", "--base-url", &url, "--model", "nope", "hi"])).await;
    assert_eq!(out.code, 3);
    assert!(
        out.stderr
            .contains("answered HTTP 404: model \"nope\" not found"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn bad_flags_and_configuration_exit_2_with_one_line() {
    for (args, expected) in [
        (
            vec!["run", "--frobnicate", "hi"],
            "unexpected argument '--frobnicate'",
        ),
        (
            vec!["run", "--mode", "yolo", "hi"],
            "unknown permission mode `yolo`: use plan, default or auto",
        ),
        (
            vec!["run", "--base-url", "localhost:1234", "--model", "m", "hi"],
            "is not a usable server address",
        ),
        (
            vec![
                "run",
                "--workspace",
                "/definitely/not/here",
                "--model",
                "m",
                "hi",
            ],
            "cannot be used",
        ),
        (vec!["run"], "required"),
        (vec!["fly"], "unrecognized subcommand 'fly'"),
    ] {
        let out = output(cairn(&args)).await;
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("cairn: ") && out.stderr.contains(expected),
            "{args:?}: {}",
            out.stderr
        );
    }
    let mut command = cairn(&["run", "--model", "m", "hi"]);
    command.env("CAIRN_MAX_TOTAL_LLM_CALLS", "many");
    let out = output(command).await;
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        "cairn: CAIRN_MAX_TOTAL_LLM_CALLS=\"many\" is not valid: expected a whole number"
    );
}

/// A turn whose model calls a tool when only one model call is allowed.
async fn out_of_llm_calls(json: bool) -> Output {
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

#[tokio::test]
async fn a_tripped_budget_exits_4_and_says_so() {
    let out = out_of_llm_calls(true).await;
    assert_eq!(out.code, 4, "{}", out.stderr);
    let events = out.events();
    assert!(events.iter().any(|e| matches!(e, Event::BudgetExceeded(b) if b.reason == cairn_protocol::BudgetReason::LlmCalls && b.limit == 1 && b.observed == 2)));
    assert_eq!(done(&events).status, TurnStatus::BudgetExceeded);
}

#[tokio::test]
async fn ctrl_c_stops_the_turn_keeps_the_partial_answer_and_exits_130() {
    let server = FakeServer::start().await;
    let words: Vec<String> = (0..200).map(|n| format!("word{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    server.push(
        CHAT,
        Reply::sse(sse::text(&words)).paced(200, Duration::from_millis(50)),
    );
    let url = server.url();
    let (mut child, mut events) =
        spawn_json(&["run", "--base-url", &url, "--model", "m", "--json", "count"]).await;
    let mut streamed = String::new();
    while streamed.is_empty() {
        if let Event::Chunk(chunk) = next_event(&mut events).await {
            streamed.push_str(&chunk.content);
        }
    }
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut last = None;
    while !matches!(last, Some(Event::Done(_))) {
        let event = next_event(&mut events).await;
        if let Event::Chunk(chunk) = &event {
            streamed.push_str(&chunk.content);
        }
        last = Some(event);
    }
    let Some(Event::Done(done)) = last else {
        unreachable!()
    };
    assert_eq!(done.status, TurnStatus::Cancelled);
    assert!(streamed.starts_with("word0 "), "{streamed}");
    assert!(!streamed.contains("word199"), "the stream was not stopped");
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(130));
}

#[tokio::test]
async fn the_transcript_shows_text_and_tool_cards_by_depth() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "run_subtask",
            json!({"title": "Survey", "instructions": "list the root"}),
        )])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("c2", "list_dir", json!({"path": "."}))])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["a.txt is there"])));
    server.push(
        CHAT,
        Reply::sse(sse::text(&["The folder holds ", "a.txt."])),
    );
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "hi").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cairn.db").display().to_string();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "what is here?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "  ▸ subtask “Survey”");
    assert_eq!(lines[1], r#"    ▸ list_dir {"path":"."}"#);
    assert!(
        lines[2].starts_with("    ✓ list_dir ") && lines[2].ends_with(" · a.txt"),
        "{lines:?}"
    );
    assert_eq!(
        lines[3], "    a.txt is there",
        "the subtask's own text, under it"
    );
    assert!(
        lines[4].starts_with("  ✓ run_subtask ") && lines[4].ends_with(" · a.txt is there"),
        "{lines:?}"
    );
    assert_eq!(lines[5], "The folder holds a.txt.");
    assert_eq!(lines.len(), 6, "{lines:?}");

    // The stored answer reads in the same order, the subtask's text under its card.
    let thread = out
        .stderr
        .split("--thread ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the thread id on stderr")
        .to_owned();
    let shown = output(cairn(&["threads", "show", &thread, "--db", &db])).await;
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let answer: Vec<&str> = shown
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("Cairn"))
        .skip(1)
        .filter(|line| !line.is_empty())
        .collect();
    assert!(answer[0].starts_with("  ✓ subtask “Survey” "), "{answer:?}");
    assert!(answer[1].starts_with("    ✓ list_dir "), "{answer:?}");
    assert_eq!(answer[2], "  a.txt is there", "{answer:?}");
    assert_eq!(answer[3], "The folder holds a.txt.", "{answer:?}");
    assert_eq!(answer.len(), 4, "{answer:?}");
}

#[tokio::test]
async fn the_transcript_prints_a_one_line_budget_notice() {
    let out = out_of_llm_calls(false).await;
    assert_eq!(out.code, 4);
    assert_eq!(
        out.stdout.lines().last().unwrap(),
        "! budget exceeded: llm_calls (2 of 1); the answer above is partial"
    );
}

#[tokio::test]
async fn the_native_ollama_dialect_streams_the_same_events() {
    let server = FakeServer::start().await;
    server.push(
        "POST /api/show",
        Reply::json(200, r#"{"model_info":{"qwen35.context_length":32768}}"#),
    );
    server.push(
        "POST /api/chat",
        Reply::ndjson(fixture("ollama/chat_stream_thinking.ndjson")),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "ollama",
        "--model",
        "qwen3.5:2b",
        "--json",
        "say hello",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Reasoning(r) => Some(r.content.as_str()),
            _ => None,
        })
        .collect();
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Chunk(c) => Some(c.content.as_str()),
            _ => None,
        })
        .collect();
    assert!(reasoning.starts_with("Thinking Process:"));
    assert_eq!(text, "Hello");
    assert_eq!(
        (
            done(&events).usage.prompt_tokens,
            done(&events).usage.completion_tokens
        ),
        (18, 229)
    );
    let chat = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .unwrap()
        .json();
    assert_eq!(chat["think"], true);
    assert_eq!(chat["options"]["temperature"], 0.0);
}

#[tokio::test]
async fn ollama_not_running_says_how_to_start_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "ollama",
        "--model",
        "m",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 3);
    assert!(
        out.stderr
            .contains("Is Ollama running? Start it with `ollama serve`."),
        "{}",
        out.stderr
    );
}

fn closed_port_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

#[tokio::test]
async fn models_lists_a_server_or_finds_the_running_ones() {
    let ollama = FakeServer::start().await;
    ollama.fallback(
        "GET /api/tags",
        Reply::json(200, fixture("ollama/docs_tags.json")),
    );
    let llamacpp = FakeServer::start().await;
    llamacpp.fallback(
        "GET /v1/models",
        Reply::json(200, fixture("openai/llamacpp_v1_models.json")),
    );
    let (ollama_url, llamacpp_url) = (ollama.url(), llamacpp.url());

    let out = output(cairn(&[
        "models",
        "--base-url",
        &ollama_url,
        "--dialect",
        "ollama",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!("{ollama_url}\tdeepseek-r1:latest\n{ollama_url}\tllama3.2:latest\n")
    );

    let mut command = cairn(&["models", "--json"]);
    command
        .env("CAIRN_OLLAMA_URL", &ollama_url)
        .env("CAIRN_LMSTUDIO_URL", closed_port_url())
        .env("CAIRN_VLLM_URL", closed_port_url())
        .env("CAIRN_LLAMACPP_URL", &llamacpp_url);
    let out = output(command).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let found: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<_> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Ollama", "llama.cpp server"]);
    assert_eq!(
        found[0]["models"],
        json!(["deepseek-r1:latest", "llama3.2:latest"])
    );

    let mut command = cairn(&["models"]);
    for preset in ["OLLAMA", "LMSTUDIO", "VLLM", "LLAMACPP"] {
        command.env(format!("CAIRN_{preset}_URL"), closed_port_url());
    }
    let out = output(command).await;
    assert_eq!(out.code, 3);
    assert!(
        out.stderr.contains("Start Ollama with `ollama serve`"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn pull_shows_progress_and_fails_clearly() {
    let server = FakeServer::start().await;
    server.push(
        "POST /api/pull",
        Reply::ndjson(cairn_testkit::ndjson_from_pretty(
            "ollama/docs_pull_progress.json",
        )),
    );
    server.push(
        "POST /api/pull",
        Reply::json(500, fixture("ollama/pull_error_stream_false.json")),
    );
    let url = server.url();
    let out = output(cairn(&["pull", "llama3.2", "--base-url", &url])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "pulled llama3.2\n");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines[0], "pulling manifest");
    assert!(
        lines[1].starts_with("pulling digestname [")
            && lines[1].ends_with("0% (242.0 KB / 2.1 GB)"),
        "{lines:?}"
    );
    assert_eq!(lines.last(), Some(&"success"));

    let out = output(cairn(&["pull", "bad_model", "--base-url", &url])).await;
    assert_eq!(out.code, 3);
    assert!(
        out.stderr
            .contains("pull model manifest: file does not exist"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn without_a_keychain_a_key_is_refused_not_written_anywhere() {
    let home = tempfile::tempdir().unwrap();
    let mut command = cairn(&["keys", "set", "--base-url", "https://api.example.com/v1"]);
    command
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .env("HOME", home.path())
        .stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"sk-should-not-land\n")
        .await
        .unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no keychain is available"), "{stderr}");
    let written: Vec<_> = walk(home.path());
    assert!(written.is_empty(), "nothing may be written: {written:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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

#[tokio::test]
#[ignore = "needs an unlocked Secret Service; scripts/test provides one"]
async fn a_key_in_the_keychain_is_sent_as_a_bearer_token() {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["hi"])));
    let url = format!("{}/v1", server.url());
    let mut set = cairn(&["keys", "set", "--base-url", &url]);
    set.stdin(Stdio::piped());
    let mut child = set.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"sk-from-keychain\n")
        .await
        .unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-from-keychain")
    );
    assert!(
        !out.stdout.contains("sk-from-keychain"),
        "the key never reaches the events"
    );

    let out = output(cairn(&["keys", "delete", "--base-url", &url])).await;
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("deleted the API key"));
}

#[tokio::test]
async fn a_stalled_stream_gives_up_after_the_idle_timeout() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(
            &b"data: {\"choices\":[{\"delta\":{\"content\":\"Thinking about it\"}}]}\n\n"[..],
        )
        .then(cairn_testkit::Piece::Hang),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--idle-timeout",
        "1",
        "--json",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    let events = out.events();
    assert!(
        matches!(&events[1], Event::Chunk(c) if c.content == "Thinking about it"),
        "the partial text came first"
    );
    assert!(
        error_message(&events).contains("sent nothing for 1 s"),
        "{events:?}"
    );
}

fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("threads.db").to_str().unwrap().to_owned()
}

#[tokio::test]
async fn runs_are_stored_and_a_thread_continues_where_it_left_off() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "call_l",
            "list_dir",
            json!({"path": "."}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["One file: a.txt"])));
    server.push(CHAT, Reply::sse(sse::text(&["It says hi."])));
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "hi").unwrap();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "What files\nare here?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let thread_id = done(&out.events()).thread_id.clone();

    let out = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    let threads: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(threads[0]["id"], thread_id.as_str());
    assert_eq!(threads[0]["title"], "What files");
    assert_eq!(threads[0]["mode"], "auto");
    assert_eq!(threads[0]["model"], "m");
    assert_eq!(threads[0]["message_count"], 2);

    let out = output(cairn(&[
        "threads", "show", &thread_id, "--db", &db, "--json",
    ]))
    .await;
    let shown: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let answer = &shown["messages"][1];
    assert_eq!(answer["content"], "One file: a.txt");
    assert_eq!(answer["status"], "complete");
    assert_eq!(answer["execution_tree"]["version"], 1);
    assert_eq!(answer["execution_tree"]["nodes"][0]["name"], "list_dir");

    // Continued without naming the server, model, mode or workspace: the thread's own.
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--thread",
        &thread_id,
        "--json",
        "What does it say?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let third = server.requests()[2].json();
    let messages = third["messages"].as_array().unwrap();
    let roles: Vec<_> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(messages[1]["content"], "What files\nare here?");
    assert_eq!(messages[3]["tool_call_id"], "call_l");
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("Permission mode: auto")
    );
    assert_eq!(third["model"], "m");
}

#[tokio::test]
async fn threads_are_searched_exported_renamed_imported_and_deleted() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::text(&["Saffron gives paella its colour."])),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "why is paella yellow?",
    ]))
    .await;
    let id = done(&out.events()).thread_id.clone();

    let out = output(cairn(&["threads", "search", "saffron", "--db", &db])).await;
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains(&id) && out.stdout.contains("[Saffron]"),
        "{}",
        out.stdout
    );

    let out = output(cairn(&[
        "threads", "rename", &id, "Paella", "colour", "--db", &db,
    ]))
    .await;
    assert!(out.stdout.contains("\tPaella colour\t"), "{}", out.stdout);

    let markdown = output(cairn(&["threads", "export", &id, "--db", &db]))
        .await
        .stdout;
    assert!(
        markdown.starts_with("# Paella colour\n") && markdown.contains("## Cairn\n\nSaffron gives"),
        "{markdown}"
    );
    let file = dir.path().join("paella.json");
    let out = output(cairn(&[
        "threads",
        "export",
        &id,
        "--format",
        "json",
        "-o",
        file.to_str().unwrap(),
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    let out = output(cairn(&["threads", "delete", &id, "--db", &db])).await;
    assert_eq!(out.stdout, format!("deleted {id}\n"));
    let out = output(cairn(&["threads", "delete", &id, "--db", &db])).await;
    assert_eq!(
        (out.code, out.stderr.trim()),
        (2, format!("cairn: no thread `{id}`").as_str())
    );
    assert_eq!(
        output(cairn(&["threads", "search", "saffron", "--db", &db]))
            .await
            .stdout,
        "no messages match\n"
    );

    let out = output(cairn(&[
        "threads",
        "import",
        file.to_str().unwrap(),
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let again = output(cairn(&["threads", "export", &id, "--db", &db]))
        .await
        .stdout;
    assert_eq!(again, markdown, "the import brought back the same thread");
}

#[tokio::test]
async fn a_database_cairn_cannot_read_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    std::fs::write(&path, b"plain text, not a database at all, really").unwrap();
    let out = output(cairn(&["threads", "list", "--db", path.to_str().unwrap()])).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("is not a Cairn database or is damaged")
            && out.stderr.contains("It was not changed"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"plain text, not a database at all, really"
    );
}

#[tokio::test]
async fn kill_9_mid_answer_leaves_a_sound_file_with_the_question_and_the_partial_answer() {
    let server = FakeServer::start().await;
    let words: Vec<String> = (0..400).map(|n| format!("w{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    server.push(
        CHAT,
        Reply::sse(sse::text(&words)).paced(120, Duration::from_millis(20)),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let (mut child, mut events) = spawn_json(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "count slowly",
    ])
    .await;
    let mut streamed = String::new();
    while streamed.len() < 200 {
        if let Event::Chunk(chunk) = next_event(&mut events).await {
            streamed.push_str(&chunk.content);
        }
    }
    // Past one text flush, so the file holds some of what streamed.
    tokio::time::sleep(Duration::from_millis(400)).await;
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), None, "killed by a signal");

    let store = cairn_store::Store::open(&db).await.unwrap();
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
    let thread = &store
        .list_threads(cairn_store::Page::default())
        .await
        .unwrap()[0];
    let messages = store.messages(&thread.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].content, "count slowly");
    assert_eq!(messages[1].status, cairn_protocol::MessageStatus::Partial);
    assert!(
        messages[1].content.starts_with("w0 w1 w2 "),
        "{:?}",
        messages[1].content
    );
    assert!(
        messages[1].content.len() >= 100,
        "at most the last moments were lost: {:?}",
        messages[1].content
    );
}

#[tokio::test]
async fn rules_are_kept_with_the_threads_and_deny_holds_even_in_auto() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&[
        "rules",
        "add",
        "deny",
        "run_command(rm:*)",
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.ends_with("\tdeny\trun_command(rm:*)\n"));
    let out = output(cairn(&["rules", "add", "allow", "rm -rf", "--db", &db])).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`rm -rf` is not a rule"),
        "{}",
        out.stderr
    );
    let listed = output(cairn(&["rules", "list", "--json", "--db", &db]))
        .await
        .stdout;
    let rules: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(
        rules,
        json!([{"id": 1, "list": "deny", "rule": "run_command(rm:*)"}])
    );

    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "run_command",
            json!({"command": "ls && rm -rf keep"}),
        )])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::text(&["I was not allowed to delete it."])),
    );
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("keep")).unwrap();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "clean up",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        workspace.path().join("keep").exists(),
        "the deny rule held in auto mode"
    );
    let result = server.requests()[1].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert!(
        result
            .as_str()
            .unwrap()
            .contains("the user's rule `run_command(rm:*)` refuses this call"),
        "{result}"
    );

    assert_eq!(
        output(cairn(&["rules", "remove", "1", "--db", &db]))
            .await
            .stdout,
        "removed rule 1\n"
    );
    let out = output(cairn(&["rules", "remove", "1", "--db", &db])).await;
    assert_eq!(out.code, 2);
}

/// The test MCP server of the tools crate, built beside `cairn` by a workspace build.
fn mcp_fixture() -> std::path::PathBuf {
    cairn_testkit::mcp::stdio_fixture()
}

#[tokio::test]
async fn mcp_servers_start_only_when_allowed_and_their_tools_are_gated() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let config = dir.path().join("mcp.json");
    let fixture = mcp_fixture();
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "fixture": {"command": fixture, "args": []},
            "ghost": {"command": "/nonexistent/server"}
        }})
        .to_string(),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let listed = output(cairn(&["mcp", "list", "--db", &db, "--mcp-config", cfg]))
        .await
        .stdout;
    assert!(
        listed.contains("fixture\tnot allowed\tnot trusted\t")
            && listed.contains("ghost\tnot allowed\tnot trusted\t/nonexistent/server"),
        "{listed}"
    );
    let out = output(cairn(&[
        "mcp",
        "allow",
        "nobody",
        "--db",
        &db,
        "--mcp-config",
        cfg,
    ]))
    .await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("the configured ones are: fixture, ghost"),
        "{}",
        out.stderr
    );

    let server = FakeServer::start().await;
    let url = server.url();
    let run = |prompt: &'static str| {
        let (db, url, cfg) = (db.clone(), url.clone(), cfg.to_owned());
        async move {
            output(cairn(&[
                "run",
                "--db",
                &db,
                "--base-url",
                &url,
                "--model",
                "m",
                "--mode",
                "default",
                "--json",
                "--mcp-config",
                &cfg,
                prompt,
            ]))
            .await
        }
    };
    // Not allowed yet: the model sees no MCP tools.
    server.push(CHAT, Reply::sse(sse::text(&["no tools"])));
    assert_eq!(run("hi").await.code, 0);
    let tools = server.requests()[0].json()["tools"].clone();
    assert!(!tools.to_string().contains("mcp__"), "{tools}");

    assert_eq!(
        output(cairn(&[
            "mcp",
            "allow",
            "fixture",
            "--db",
            &db,
            "--mcp-config",
            cfg
        ]))
        .await
        .stdout,
        "fixture may start\n"
    );
    assert_eq!(
        output(cairn(&[
            "mcp",
            "allow",
            "ghost",
            "--db",
            &db,
            "--mcp-config",
            cfg
        ]))
        .await
        .code,
        0
    );
    let both_tools = || {
        Reply::sse(sse::tool_calls(&[
            (
                "c1",
                "mcp__fixture__echo",
                json!({"text": "read-only runs"}),
            ),
            (
                "c2",
                "mcp__fixture__shout",
                json!({"text": "external asks"}),
            ),
        ]))
    };
    let tool_results = |request: usize| -> Vec<String> {
        server.requests()[request].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    };
    // Allowed but not trusted: the server's read-only mark is only its claim.
    server.push(CHAT, both_tools());
    server.push(CHAT, Reply::sse(sse::text(&["done"])));
    assert_eq!(run("use the tools").await.code, 0);
    let untrusted = tool_results(2);
    assert!(
        untrusted
            .iter()
            .all(|result| result.contains("stdin is closed")),
        "every MCP tool asks first: {untrusted:?}"
    );
    let trust = output(cairn(&[
        "mcp",
        "trust",
        "fixture",
        "--db",
        &db,
        "--mcp-config",
        cfg,
    ]))
    .await;
    assert_eq!(trust.code, 0, "{}", trust.stderr);
    let listed = output(cairn(&["mcp", "list", "--db", &db, "--mcp-config", cfg]))
        .await
        .stdout;
    assert!(listed.contains("fixture\tallowed\ttrusted\t"), "{listed}");

    server.push(CHAT, both_tools());
    server.push(CHAT, Reply::sse(sse::text(&["done"])));
    let out = run("use the tools").await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("MCP server `ghost` could not start")
            && out.stderr.contains("its tools are not available"),
        "{}",
        out.stderr
    );
    let offered = server.requests()[3].json()["tools"].to_string();
    assert!(
        offered.contains("mcp__fixture__echo") && offered.contains("mcp__fixture__crash"),
        "{offered}"
    );
    let contents = tool_results(4);
    assert_eq!(
        contents[0], "read-only runs",
        "a trusted server marked echo read-only"
    );
    assert!(
        contents[1].contains("stdin is closed"),
        "an external MCP tool asks first: {contents:?}"
    );
}

#[tokio::test]
async fn a_misbehaving_mcp_server_costs_tool_errors_not_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"bad": {"command": mcp_fixture(), "timeout_ms": 5000}}}).to_string(),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let allowed = output(cairn(&[
        "mcp",
        "allow",
        "bad",
        "--db",
        &db,
        "--mcp-config",
        cfg,
    ]))
    .await;
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);

    let server = FakeServer::start().await;
    // Calls to one server run side by side: the crash gets a round of its own.
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[
            ("c1", "mcp__bad__big", json!({"bytes": 10_000_000})),
            ("c2", "mcp__bad__hang", json!({})),
        ])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("c3", "mcp__bad__crash", json!({}))])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c4",
            "mcp__bad__echo",
            json!({"text": "still here"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Coped."])));
    let url = server.url();
    let started = std::time::Instant::now();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--mcp-config",
        cfg,
        "use the bad tools",
    ]))
    .await;
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        took < Duration::from_secs(30),
        "a hung call costs its 5 s timeout, not the wall-clock budget: {took:?}"
    );
    let results: Vec<String> = server.requests()[3].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 4);
    assert!(
        results[0].len() < 60_000 && results[0].contains("truncated"),
        "10 MB arrive and are cut like any result: {} bytes: {}",
        results[0].len(),
        &results[0][..results[0].len().min(300)]
    );
    assert!(
        results[1].contains("did not answer `hang` within 5 s"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("started again for the next call"),
        "{}",
        results[2]
    );
    assert_eq!(results[3], "still here", "the server was started again");
}
