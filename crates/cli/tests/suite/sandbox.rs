//! Commands in the sandbox as a user meets them: `cairn run --mode auto` against a
//! scripted model whose commands try to write outside the workspace, reach the
//! network, and ask to leave the sandbox; a rule that lets one out; a system without
//! a sandbox.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use cairn_protocol::ToolApprovalRequest;
use serde_json::Value;

use super::support::*;

/// A folder outside the temp folder (which commands may write to): the target
/// directory's own temp space. It stands for the user's home and another project.
fn outside_temp(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("sandbox-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path
}

fn run_command(id: &str, args: Value) -> (String, String, Value) {
    (id.to_owned(), "run_command".to_owned(), args)
}

/// A scripted model that makes `calls` one after the other, then says "Done.".
async fn model_running(calls: Vec<(String, String, Value)>) -> FakeServer {
    let server = FakeServer::start().await;
    for (id, name, args) in calls {
        server.push(CHAT, Reply::sse(sse::tool_calls(&[(&id, &name, args)])));
    }
    server.push(CHAT, Reply::sse(sse::text(&["Done."])));
    server
}

/// `cairn run --mode auto --json` in `workspace`, with `home` as its HOME and `db` as
/// its database; stdin closed, so any question is denied.
fn auto_run(url: &str, workspace: &Path, home: &Path, db: &str) -> Command {
    let mut command = cairn(&[
        "run",
        "--base-url",
        url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--workspace",
        workspace.to_str().unwrap(),
        "tidy up",
    ]);
    command.env("HOME", home).env("CAIRN_DB", db);
    command
}

/// Each call's result, by its id.
fn results(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(update) if update.status == ToolCallStatus::End => Some((
                update.tool_call_id.clone(),
                update
                    .result
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            )),
            _ => None,
        })
        .collect()
}

fn approval_asked(events: &[Event]) -> Option<ToolApprovalRequest> {
    events.iter().find_map(|event| match event {
        Event::ToolApprovalRequest(request) => Some(request.clone()),
        _ => None,
    })
}

fn approvals_asked(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|event| matches!(event, Event::ToolApprovalRequest(_)))
        .count()
}

#[tokio::test]
async fn in_auto_mode_a_models_commands_write_only_inside_and_reach_no_network() {
    let workspace = tempfile::tempdir().unwrap();
    let home = outside_temp("home");
    let other = outside_temp("other-project");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = model_running(vec![
        run_command("c1", json!({"command": "mkdir -p ~/.cache/x && echo w1 > ~/.cache/x/w1.txt"})),
        run_command("c2", json!({"command": "mkdir ~/made"})),
        run_command("c3", json!({"command": format!("echo x > {}/stolen.txt", other.display())})),
        run_command(
            "c4",
            json!({"command": format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"")}),
        ),
        run_command("c5", json!({"command": "echo inside > inside.txt"})),
    ])
    .await;
    let db = scratch_db().to_str().unwrap().to_owned();
    let out = output(auto_run(&server.url(), workspace.path(), &home, &db)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(
        approvals_asked(&events),
        0,
        "auto mode asks nothing inside the sandbox"
    );

    assert_eq!(
        walk(&home),
        Vec::<PathBuf>::new(),
        "nothing written in the home folder"
    );
    assert_eq!(
        walk(&other),
        Vec::<PathBuf>::new(),
        "nor in another project"
    );
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("inside.txt")).unwrap(),
        "inside\n"
    );

    let results = results(&events);
    assert_eq!(results.len(), 5, "{events:?}");
    for (id, result) in &results[..4] {
        assert!(
            result.contains("Permission denied") && result.contains("[sandbox]"),
            "{id} reads as a refusal the model can act on: {result}"
        );
    }
    assert!(results[4].1.contains("exit code: 0"), "{}", results[4].1);
    assert!(
        results
            .iter()
            .all(|(_, result)| result.contains("(sandboxed: writes only in the workspace")),
        "every card says it ran sandboxed"
    );
}

#[tokio::test]
async fn a_command_asking_to_leave_the_sandbox_asks_even_in_auto_and_a_rule_lets_it_out() {
    let workspace = tempfile::tempdir().unwrap();
    let home = outside_temp("asking-home");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = json!({
        "command": format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""),
        "network": true
    });
    let db = scratch_db().to_str().unwrap().to_owned();

    let asking = model_running(vec![run_command("n1", connect.clone())]).await;
    let out = output(auto_run(&asking.url(), workspace.path(), &home, &db)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let request = approval_asked(&events).expect("asked in auto mode");
    assert!(
        request
            .action
            .as_deref()
            .unwrap()
            .ends_with("with network access"),
        "{request:?}"
    );
    assert_eq!(
        request.session_grant.as_deref(),
        Some("run_command.network(python3:*)")
    );
    assert!(results(&events)[0].1.contains("stdin is closed"), "not run");

    let mut add = cairn(&["rules", "add", "allow", "run_command.network(python3:*)"]);
    add.env("CAIRN_DB", &db);
    let added = output(add).await;
    assert_eq!(added.code, 0, "{}", added.stderr);
    let allowed = model_running(vec![run_command("n2", connect)]).await;
    let out = output(auto_run(&allowed.url(), workspace.path(), &home, &db)).await;
    let events = out.events();
    assert_eq!(approvals_asked(&events), 0, "the rule lets it run unasked");
    let result = &results(&events)[0].1;
    assert!(result.contains("exit code: 0"), "{result}");
    assert!(result.contains("(sandboxed, with the network"), "{result}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "it connected");
}

#[tokio::test]
async fn without_a_sandbox_every_command_asks_even_in_auto() {
    let workspace = tempfile::tempdir().unwrap();
    let home = outside_temp("unsandboxed-home");
    let server = model_running(vec![run_command(
        "u1",
        json!({"command": "echo hi > hi.txt"}),
    )])
    .await;
    let db = scratch_db().to_str().unwrap().to_owned();
    let mut command = auto_run(&server.url(), workspace.path(), &home, &db);
    command.env(cairn_sandbox::PRETEND_MISSING, "1");
    let out = output(command).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let request = approval_asked(&events).expect("asked in auto mode");
    assert_eq!(
        request.action.as_deref(),
        Some("run `echo hi > hi.txt` unconfined (no sandbox on this system)")
    );
    assert!(!workspace.path().join("hi.txt").exists(), "denied, not run");
}

/// A workspace with `notes.md` ("draft") and `old.txt`, and the thread of an auto-mode
/// answer whose one command edited the first, made `made.txt` and removed the second.
async fn a_command_changed_files() -> (tempfile::TempDir, String, String) {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.md"), "a draft\n").unwrap();
    std::fs::write(workspace.path().join("old.txt"), "old\n").unwrap();
    let home = outside_temp("restoring-home");
    let server = model_running(vec![run_command(
        "r1",
        json!({"command": "sed -i s/draft/final/ notes.md && printf made > made.txt && rm old.txt"}),
    )])
    .await;
    // Outside the workspace: the database's own files are not the command's changes.
    let db = scratch_db().to_str().unwrap().to_owned();
    let out = output(auto_run(&server.url(), workspace.path(), &home, &db)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let result = &results(&events)[0].1;
    assert!(
        result.ends_with(
            "[restore] It changed `made.txt`, `notes.md`, `old.txt`: Restore can take them back.\n"
        ),
        "the card says what Restore can take back: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes.md")).unwrap(),
        "a final\n"
    );
    let changed = events.iter().find_map(|event| match event {
        Event::ToolCallUpdate(update) if update.status == ToolCallStatus::End => {
            Some(update.changed.clone())
        }
        _ => None,
    });
    assert_eq!(
        changed.unwrap(),
        ["made.txt", "notes.md", "old.txt"],
        "on the wire: the window offers Restore at once"
    );
    let thread = done(&events).thread_id.clone();
    (workspace, thread, db)
}

#[tokio::test]
async fn restore_takes_back_what_a_command_made_changed_and_removed() {
    let (workspace, thread, db) = a_command_changed_files().await;
    // Another process, as after a restart: all it has is the database.
    let restored = output(cairn(&["threads", "restore", &thread, "--db", &db])).await;
    assert_eq!(restored.code, 0, "{}", restored.stderr);
    assert!(
        restored
            .stdout
            .contains("  made.txt: removed (the answer created it)\n")
            && restored.stdout.contains("  notes.md: put back as it was\n")
            && restored.stdout.contains("  old.txt: put back as it was\n")
            && restored.stdout.ends_with("restored 3 files\n"),
        "{}",
        restored.stdout
    );
    let read = |name: &str| std::fs::read_to_string(workspace.path().join(name)).ok();
    assert_eq!(read("notes.md").as_deref(), Some("a draft\n"));
    assert_eq!(read("old.txt").as_deref(), Some("old\n"));
    assert_eq!(read("made.txt"), None);
}

#[tokio::test]
async fn restore_refuses_over_a_later_change_to_what_a_command_left() {
    let (workspace, thread, db) = a_command_changed_files().await;
    std::fs::write(workspace.path().join("made.txt"), "mine").unwrap();
    std::fs::write(workspace.path().join("old.txt"), "made again\n").unwrap();
    let refused = output(cairn(&["threads", "restore", &thread, "--db", &db])).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stdout
            .contains("  ✗ made.txt: changed after this answer wrote it")
            && refused
                .stdout
                .contains("  ✗ old.txt: was made again after this answer removed it"),
        "{}",
        refused.stdout
    );
    let read = |name: &str| std::fs::read_to_string(workspace.path().join(name)).unwrap();
    assert_eq!(read("made.txt"), "mine", "nothing changed");
    assert_eq!(read("notes.md"), "a final\n");
    assert_eq!(read("old.txt"), "made again\n");
}
