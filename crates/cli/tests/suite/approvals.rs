//! Approvals answered on stdin: piped answers, interactive ones, a closed stdin.

use super::support::*;

/// `cairn run PROMPT` as a transcript, with `answers` piped into its stdin and closed.
async fn run_piped(
    server: &FakeServer,
    workspace: &std::path::Path,
    prompt: &str,
    answers: &[u8],
) -> std::process::Output {
    let url = server.url();
    let mut command = cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--workspace",
        workspace.to_str().unwrap(),
        prompt,
    ]);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answers).await.unwrap();
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap()
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
    // `echo y | cairn run …`: the answer is in, and stdin closed, before the question.
    let out = run_piped(&server, workspace.path(), "write the notes", b"y\n").await;
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
    assert!(
        stderr.contains("(write)\n  new file notes.md:\n    +kept\n  [y] allow"),
        "the new file is shown between the question and its choices: {stderr}"
    );
}

#[tokio::test]
async fn the_question_shows_the_change_a_write_would_make() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "alpha\nBETA\ngamma\n"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Left as it was."])));
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.md"), "alpha\nbeta\ngamma\n").unwrap();
    let out = run_piped(&server, workspace.path(), "shout the second line", b"n\n").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Not a terminal: plain text, the diff's lines as `git diff` prints them.
    assert!(
        stderr.contains(
            "  change to notes.md:\n    @@ -1,3 +1,3 @@\n     alpha\n    -beta\n    +BETA\n     gamma\n  [y] allow"
        ),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes.md")).unwrap(),
        "alpha\nbeta\ngamma\n",
        "denied: the file is as it was"
    );
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
    let followup = server.requests_to(CHAT)[1].json();
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
