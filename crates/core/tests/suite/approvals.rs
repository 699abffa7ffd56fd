//! The approval round trip through the one gate, at every depth.

use cairn_core::TurnControl;
use cairn_protocol::{
    ApprovalDecision, Event, PermissionMode, ToolApprovalRequest, ToolCategory, TurnStatus,
};
use cairn_testkit::{ScriptedModel, ScriptedTurn};

use serde_json::json;

use super::support::{Harness, Probe, Running};

fn writer() -> Probe {
    Probe::new("writer")
        .category(ToolCategory::Write)
        .exclusive()
}

async fn next_request(running: &mut Running) -> ToolApprovalRequest {
    match running
        .wait_for(|e| matches!(e, Event::ToolApprovalRequest(_)))
        .await
    {
        Event::ToolApprovalRequest(request) => request,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn default_mode_asks_and_allow_runs_deny_refuses() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool("writer", json!({"n": 1}))
            .tool("writer", json!({"n": 2})),
        ScriptedTurn::text("ok"),
    ]);
    let writer = writer();
    let mut running = Harness::new(&model)
        .mode(PermissionMode::Default)
        .tool(writer.clone())
        .start("write twice");
    let first = next_request(&mut running).await;
    assert_eq!(first.name, "writer");
    assert_eq!(first.args, json!({"n": 1}));
    assert_eq!(first.category, ToolCategory::Write);
    assert_eq!((first.parent_id.clone(), first.depth), (None, 0));
    assert_eq!(first.session_grant.as_deref(), Some("writer"));
    assert_eq!(
        running.control.approvals.pending(),
        std::slice::from_ref(&first)
    );
    let state = running
        .wait_for(|e| matches!(e, Event::AgentState(_)))
        .await;
    assert!(
        matches!(state, Event::AgentState(s) if s.state == cairn_protocol::AgentStateKind::WaitingOnUser)
    );
    running
        .control
        .approvals
        .answer(&first.approval_id, ApprovalDecision::Allow)
        .unwrap();
    let second = next_request(&mut running).await;
    running
        .control
        .approvals
        .answer(&second.approval_id, ApprovalDecision::Deny)
        .unwrap();
    let run = running.handle.await.unwrap();
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(writer.calls(), 1);
    let ends = run.tool_ends();
    assert!(!ends[0].2);
    assert!(
        ends[1].2
            && ends[1]
                .1
                .as_str()
                .unwrap()
                .contains("the user denied this call"),
        "{ends:?}"
    );
    assert!(
        running
            .control
            .approvals
            .answer(&second.approval_id, ApprovalDecision::Allow)
            .is_err(),
        "an answered approval cannot be answered again"
    );
}

#[tokio::test]
async fn a_call_tells_how_long_it_waited_for_the_user_and_whether_they_denied_it() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("writer", json!({"n": 1})),
        ScriptedTurn::call("writer", json!({"n": 2})),
        ScriptedTurn::text("ok"),
    ]);
    let mut running = Harness::new(&model)
        .mode(PermissionMode::Default)
        .tool(writer())
        .start("write twice");
    for decision in [ApprovalDecision::Allow, ApprovalDecision::Deny] {
        let request = next_request(&mut running).await;
        tokio::time::sleep(std::time::Duration::from_millis(60)).await;
        running
            .control
            .approvals
            .answer(&request.approval_id, decision)
            .unwrap();
    }
    let run = running.handle.await.unwrap();
    let ends: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(u) if u.status == cairn_protocol::ToolCallStatus::End => Some((
                u.waited_ms.unwrap_or(0),
                u.denied,
                u.duration_ms.unwrap_or(0),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    for (waited, _, duration) in &ends {
        assert!(*waited >= 60 && *waited <= *duration, "{ends:?}");
    }
    assert_eq!(
        ends.iter().map(|end| end.1).collect::<Vec<_>>(),
        [false, true],
        "only the denied call says so"
    );
    // The stored tree keeps both, for the card after a restart.
    let nodes = &run.outcome.tree.nodes;
    assert_eq!(
        nodes
            .iter()
            .map(|n| (n.waited_ms, n.denied))
            .collect::<Vec<_>>(),
        ends.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn allow_for_this_chat_covers_later_calls_and_later_turns() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("writer", json!({"part": 1})),
        ScriptedTurn::call("writer", json!({"part": 2})),
        ScriptedTurn::text("ok"),
        ScriptedTurn::call("writer", json!({})),
        ScriptedTurn::text("again"),
    ]);
    let writer = writer();
    let harness = Harness::new(&model)
        .mode(PermissionMode::Default)
        .tool(writer.clone());
    let control = TurnControl::default();
    let mut running = harness.start_with("first", control.clone());
    let request = next_request(&mut running).await;
    control
        .approvals
        .answer(&request.approval_id, ApprovalDecision::AllowSession)
        .unwrap();
    let run = running.handle.await.unwrap();
    assert_eq!(run.of_type("tool_approval_request").len(), 1);
    assert_eq!(writer.calls(), 2);
    assert_eq!(control.grants.list(), ["writer"]);
    // The next turn of the thread shares the grants (fresh approvals).
    let next = TurnControl {
        approvals: cairn_core::Approvals::new(),
        ..control
    };
    let run = harness.run_with("second", next).await;
    assert!(run.of_type("tool_approval_request").is_empty());
    assert_eq!(writer.calls(), 3);
}

#[tokio::test]
async fn with_no_human_attached_an_ask_is_denied_with_the_reason() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("writer", json!({})),
        ScriptedTurn::text("could not write"),
    ]);
    let control = TurnControl::default();
    control
        .approvals
        .detach_human("no one is attached to approve it (stdin is closed)");
    let writer = writer();
    let run = Harness::new(&model)
        .mode(PermissionMode::Default)
        .tool(writer.clone())
        .run_with("go", control)
        .await;
    assert_eq!(writer.calls(), 0);
    let (_, result, is_error) = &run.tool_ends()[0];
    assert!(is_error);
    assert_eq!(
        result.as_str().unwrap(),
        "Error: not run: no one is attached to approve it (stdin is closed). Continue without \
         it, or say what you would have done."
    );
}

#[tokio::test]
async fn asks_from_parallel_subtasks_at_depth_two_are_answered_out_of_order() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "outer", "instructions": "x"}),
        ),
        ScriptedTurn::text("done"),
    ]);
    model.subtask(
        "outer",
        [
            ScriptedTurn::new()
                .tool("run_subtask", json!({"title": "left", "instructions": "x"}))
                .tool(
                    "run_subtask",
                    json!({"title": "right", "instructions": "x"}),
                ),
            ScriptedTurn::text("outer done"),
        ],
    );
    for side in ["left", "right"] {
        model.subtask(
            side,
            [
                ScriptedTurn::call("writer", json!({"side": side})),
                ScriptedTurn::text(format!("{side} done")),
            ],
        );
    }
    let writer = Probe::new("writer").category(ToolCategory::Write);
    let mut running = Harness::new(&model)
        .mode(PermissionMode::Default)
        .tool(writer.clone())
        .start("go");
    let a = next_request(&mut running).await;
    let b = next_request(&mut running).await;
    assert_eq!((a.depth, b.depth), (2, 2));
    assert_eq!(running.control.approvals.pending().len(), 2);
    let (left, right) = if a.subtask_title.as_deref() == Some("left") {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(right.subtask_title.as_deref(), Some("right"));
    // Answer the later one first, and deny the other.
    running
        .control
        .approvals
        .answer(&right.approval_id, ApprovalDecision::Allow)
        .unwrap();
    running
        .control
        .approvals
        .answer(&left.approval_id, ApprovalDecision::Deny)
        .unwrap();
    let run = running.handle.await.unwrap();
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(writer.calls(), 1);
    let ends = run.tool_ends();
    let writes: Vec<_> = ends.iter().filter(|e| e.0 == "writer").collect();
    assert_eq!(writes.len(), 2);
    assert_eq!(writes.iter().filter(|e| e.2).count(), 1, "{writes:?}");
}

#[tokio::test]
async fn stop_while_waiting_for_approval_withdraws_it() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::call("writer", json!({}))]);
    let mut running = Harness::new(&model)
        .mode(PermissionMode::Default)
        .tool(writer())
        .start("go");
    let request = next_request(&mut running).await;
    running.control.cancel.cancel();
    let run = running.handle.await.unwrap();
    assert_eq!(run.outcome.status, TurnStatus::Cancelled);
    assert!(running.control.approvals.pending().is_empty());
    assert!(
        running
            .control
            .approvals
            .answer(&request.approval_id, ApprovalDecision::Allow)
            .is_err()
    );
}

/// A tiny model asked for a file whole (`whole_file`): the user approves its text as
/// any write, sees it first, and a denial ends the turn with the file unwritten
/// (asked again, the 0.5B wrote the same text again).
#[tokio::test]
async fn a_tiny_models_whole_file_is_asked_for_and_a_denial_ends_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(494_032_768);
    model.root([
        ScriptedTurn::text("```python\nprint(\"Hi!\")\n```"),
        ScriptedTurn::text("```python\nprint(\"Hi!\")\n```"),
    ]);
    let mut running = Harness::new(&model)
        .workspace(dir.path())
        .mode(PermissionMode::Default)
        .start("Write a Python script hi.py that prints Hi!");
    let asked = next_request(&mut running).await;
    assert_eq!(asked.name, "write_file");
    assert_eq!(
        asked.action.as_deref(),
        Some("write hi.py (1 line, 13 bytes)")
    );
    running
        .control
        .approvals
        .answer(&asked.approval_id, ApprovalDecision::Deny)
        .unwrap();
    let run = running.handle.await.unwrap();
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert!(!dir.path().join("hi.py").exists());
    assert_eq!(model.requests().len(), 1, "not asked again");
    let ends = run.tool_ends();
    assert_eq!(ends.len(), 1);
    assert!(ends[0].2, "the write is an error: {ends:?}");
    assert_eq!(
        run.outcome.text,
        "```python\nprint(\"Hi!\")\n```\n\n`hi.py` was not written (the user denied this \
         call to `write_file`)."
    );
}
