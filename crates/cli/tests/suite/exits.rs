//! Exit codes and the one line on stderr that says why.

use super::support::*;

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

#[tokio::test]
async fn a_tripped_budget_exits_4_and_says_so() {
    let out = out_of_llm_calls(true).await;
    assert_eq!(out.code, 4, "{}", out.stderr);
    let events = out.events();
    assert!(events.iter().any(|e| matches!(e, Event::BudgetExceeded(b) if b.reason == cairn_protocol::BudgetReason::LlmCalls && b.limit == 1 && b.observed == 2)));
    assert_eq!(done(&events).status, TurnStatus::BudgetExceeded);
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

#[tokio::test]
async fn a_log_filter_that_cannot_be_read_is_said_and_the_command_still_runs() {
    let mut command = cairn(&["threads", "list"]);
    command.env("CAIRN_LOG", "cairn_core=loud");
    let out = output(command).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "no threads yet\n");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("cairn: CAIRN_LOG=\"cairn_core=loud\" is not a log filter (")
            && out.stderr.trim_end().ends_with(
                "showing warnings only. Write levels as `debug` or `cairn_core=info,warn`"
            ),
        "{}",
        out.stderr
    );
}
