//! Stop ends the whole tree promptly and keeps what was said; a failing provider
//! ends the turn with its error and keeps it too.

use std::sync::atomic::Ordering;
use std::time::Duration;

use cairn_protocol::{ErrorKind, Event, ToolCallStatus, TurnStatus};
use cairn_providers::ProviderError;
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;

use super::support::{Harness, Probe, Run, Running, assert_calls_paired};

/// The turn's result, which must come within two seconds of the stop.
async fn stopped_promptly(running: Running) -> Run {
    tokio::time::timeout(Duration::from_secs(2), running.handle)
        .await
        .expect("stop was not prompt")
        .unwrap()
}

#[tokio::test]
async fn stop_during_a_tool_cancels_it_and_every_call_keeps_a_result() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .say("On it.")
        .tool("slow", json!({}))
        .tool("slow", json!({}))]);
    let slow = Probe::new("slow").hang();
    let mut running = Harness::new(&model).tool(slow.clone()).start("go");
    running
        .wait_for(|e| matches!(e, Event::ToolCallUpdate(u) if u.status == ToolCallStatus::Start))
        .await;
    tokio::task::yield_now().await;
    running.control.cancel.cancel();
    let run = stopped_promptly(running).await;
    assert_eq!(run.outcome.status, TurnStatus::Cancelled);
    assert_eq!(run.outcome.text, "On it.");
    assert_eq!(slow.cancelled.load(Ordering::SeqCst), slow.calls());
    assert_calls_paired(&run.outcome.messages);
    assert!(
        run.tool_ends()
            .iter()
            .all(|(_, result, err)| *err && result.as_str().unwrap().contains("cancelled"))
    );
    assert!(run.of_type("budget_exceeded").is_empty());
    assert_eq!(run.events.last().unwrap().type_name(), "agent_state");
}

#[tokio::test]
async fn stop_reaches_model_streams_in_every_subtask() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .tool("run_subtask", json!({"title": "a", "instructions": "a"}))
        .tool("run_subtask", json!({"title": "b", "instructions": "b"}))]);
    model.subtask("a", [ScriptedTurn::new().say("a is thinking").hang()]);
    model.subtask("b", [ScriptedTurn::new().say("b is thinking").hang()]);
    let mut running = Harness::new(&model).start("go");
    let mut seen = 0;
    while seen < 2 {
        running
            .wait_for(|e| matches!(e, Event::Chunk(c) if c.depth == 1))
            .await;
        seen += 1;
    }
    running.control.cancel.cancel();
    let run = stopped_promptly(running).await;
    assert_eq!(run.outcome.status, TurnStatus::Cancelled);
    assert_calls_paired(&run.outcome.messages);
    assert_eq!(run.tool_ends().len(), 2);
}

#[tokio::test]
async fn a_provider_failure_mid_answer_keeps_the_partial_text() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .say("The answer is")
        .fail(ProviderError::StreamCut {
            server: "http://localhost:1234".into(),
            detail: "connection reset".into(),
        })]);
    let run = Harness::new(&model).run("go").await;
    assert_eq!(run.outcome.status, TurnStatus::Failed);
    assert_eq!(run.outcome.text, "The answer is");
    let error = run.outcome.error.clone().unwrap();
    assert_eq!(error.kind, ErrorKind::Provider);
    assert_eq!(
        error.message,
        "the stream from http://localhost:1234 broke off: connection reset"
    );
    assert_eq!(run.of_type("error").len(), 1);
}

#[tokio::test]
async fn a_provider_failure_in_a_child_ends_the_whole_turn() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .say("delegating")
        .tool("run_subtask", json!({"title": "c", "instructions": "c"}))]);
    model.subtask(
        "c",
        [ScriptedTurn::new().fail(ProviderError::Unreachable {
            server: "http://localhost:1234".into(),
            detail: "Connection refused".into(),
            hint: "Is the model server running at that address?".into(),
        })],
    );
    let run = Harness::new(&model).run("go").await;
    assert_eq!(run.outcome.status, TurnStatus::Failed);
    assert_eq!(run.outcome.text, "delegating");
    assert!(
        run.outcome
            .error
            .unwrap()
            .message
            .contains("Connection refused")
    );
    assert_calls_paired(&run.outcome.messages);
}
