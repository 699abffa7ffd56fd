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
    let db = db_in(&workspace);
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
    let db = db_in(&workspace);

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
    let db = db_in(&workspace);
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
