//! Every turn budget trips deterministically, ends the whole turn, and keeps the
//! partial answer and the execution tree.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::TurnControl;
use cairn_protocol::{
    ApprovalDecision, BudgetExceeded, BudgetReason, ChatMessage, Event, TurnStatus,
};
use cairn_testkit::{ScriptedModel, ScriptedTurn};

use serde_json::json;

use super::support::{Harness, Probe, Run, assert_calls_paired};

fn exceeded(run: &Run) -> BudgetExceeded {
    let events = run.of_type("budget_exceeded");
    assert_eq!(
        events.len(),
        1,
        "exactly one budget_exceeded: {:?}",
        run.events
    );
    let Event::BudgetExceeded(exceeded) = events[0] else {
        unreachable!()
    };
    assert_eq!(run.outcome.status, TurnStatus::BudgetExceeded);
    assert_eq!(run.outcome.budget, Some(*exceeded));
    assert_calls_paired(&run.outcome.messages);
    *exceeded
}

/// A model that says something and calls the probe, forever.
fn chatty(model: &ScriptedModel, rounds: usize) {
    model.root((0..rounds).map(|n| {
        ScriptedTurn::new()
            .say(format!("step {n}"))
            .tool("probe", json!({}))
    }));
}

#[tokio::test]
async fn llm_calls() {
    let model = ScriptedModel::new();
    chatty(&model, 10);
    let run = Harness::new(&model)
        .limits(|l| l.max_total_llm_calls = 2)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(
        exceeded(&run),
        BudgetExceeded {
            reason: BudgetReason::LlmCalls,
            limit: 2,
            observed: 3
        }
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(run.outcome.text, "step 0\n\nstep 1");
    assert_eq!(run.outcome.tree.nodes.len(), 2);
}

#[tokio::test]
async fn tool_calls() {
    let model = ScriptedModel::new();
    let mut five = ScriptedTurn::new().say("many");
    for n in 0..5 {
        five = five.tool("probe", json!({"n": n}));
    }
    model.root([five]);
    let probe = Probe::new("probe").exclusive();
    let run = Harness::new(&model)
        .limits(|l| l.max_total_tool_calls = 3)
        .tool(probe.clone())
        .run("go")
        .await;
    assert_eq!(
        exceeded(&run),
        BudgetExceeded {
            reason: BudgetReason::ToolCalls,
            limit: 3,
            observed: 4
        }
    );
    assert_eq!(probe.calls(), 3);
    assert_eq!(run.outcome.text, "many");
    // All five calls have a card and a result; the last two say why they did not run.
    let ends = run.tool_ends();
    assert_eq!(ends.len(), 5);
    assert!(ends[3].2 && ends[4].2, "{ends:?}");
    assert!(ends[4].1.as_str().unwrap().contains("cancelled"));
}

#[tokio::test]
async fn subtasks() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .tool("run_subtask", json!({"title": "a", "instructions": "a"}))
        .tool("run_subtask", json!({"title": "b", "instructions": "b"}))]);
    model.subtask(
        "a",
        [ScriptedTurn::new()
            .delay(Duration::from_millis(50))
            .say("a done")],
    );
    model.subtask("b", [ScriptedTurn::text("b done")]);
    let run = Harness::new(&model)
        .limits(|l| l.max_total_subtasks = 1)
        .run("go")
        .await;
    assert_eq!(
        exceeded(&run),
        BudgetExceeded {
            reason: BudgetReason::Subtasks,
            limit: 1,
            observed: 2
        }
    );
    assert_eq!(run.outcome.tree.nodes.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn wall_clock_interrupts_a_running_tool() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new().say("working").tool("probe", json!({}))]);
    let probe = Probe::new("probe").delay(Duration::from_secs(5));
    let run = Harness::new(&model)
        .limits(|l| l.max_wall_clock = Duration::from_secs(1))
        .tool(probe.clone())
        .run("go")
        .await;
    let exceeded = exceeded(&run);
    assert_eq!(exceeded.reason, BudgetReason::WallClock);
    assert_eq!(exceeded.limit, 1000);
    assert_eq!(
        exceeded.observed, 1000,
        "paused clock: exactly at the deadline"
    );
    assert_eq!(probe.cancelled.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(run.outcome.text, "working");
    assert_eq!(run.outcome.tree.nodes[0].is_error, Some(true));
}

#[tokio::test(start_paused = true)]
async fn the_wall_clock_counts_the_turns_own_time_and_stops_it_there() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("probe", json!({"delay_ms": 600})),
        ScriptedTurn::call("probe", json!({"delay_ms": 600})),
        ScriptedTurn::text("late"),
    ]);
    let run = Harness::new(&model)
        .limits(|l| l.max_wall_clock = Duration::from_secs(1))
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    let exceeded = exceeded(&run);
    assert_eq!(exceeded.reason, BudgetReason::WallClock);
    assert_eq!(exceeded.limit, 1_000);
    assert_eq!(run.outcome.text, "", "the late answer never arrived");
}

#[tokio::test(start_paused = true)]
async fn a_slow_model_server_is_not_a_runaway_turn() {
    // Each answer takes longer than the whole wall clock: the server's time is not
    // the turn's, and the turn ends as answered.
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .delay(Duration::from_secs(5))
            .tool("probe", json!({})),
        ScriptedTurn::new()
            .delay(Duration::from_secs(5))
            .say("done"),
    ]);
    let run = Harness::new(&model)
        .limits(|l| l.max_wall_clock = Duration::from_secs(1))
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(
        run.outcome.status,
        TurnStatus::Completed,
        "{:?}",
        run.events
    );
    assert_eq!(run.outcome.text, "done");
    assert!(run.of_type("budget_exceeded").is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_time_the_user_takes_to_answer_is_not_the_turns() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("writer", json!({})),
        ScriptedTurn::text("written"),
    ]);
    let writer = Probe::new("writer").category(cairn_protocol::ToolCategory::Write);
    let control = TurnControl::default();
    let approvals = Arc::clone(&control.approvals);
    tokio::spawn(async move {
        // The user thinks it over for a minute against a one-second clock.
        loop {
            if let Some(pending) = approvals.pending().first() {
                tokio::time::sleep(Duration::from_secs(60)).await;
                approvals
                    .answer(&pending.approval_id, ApprovalDecision::Allow)
                    .unwrap();
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let run = Harness::new(&model)
        .mode(cairn_protocol::PermissionMode::Default)
        .limits(|l| l.max_wall_clock = Duration::from_secs(1))
        .tool(writer.clone())
        .run_with("go", control)
        .await;
    assert_eq!(
        run.outcome.status,
        TurnStatus::Completed,
        "{:?}",
        run.events
    );
    assert_eq!(writer.calls(), 1);
}

#[tokio::test]
async fn tokens_when_the_protected_history_alone_is_too_long() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("never asked")]);
    let run = Harness::new(&model)
        .limits(|l| l.max_history_tokens = 500)
        .run(&"word ".repeat(1000))
        .await;
    let exceeded = exceeded(&run);
    assert_eq!(exceeded.reason, BudgetReason::Tokens);
    assert_eq!(exceeded.limit, 500);
    assert!(exceeded.observed > 1250, "{exceeded:?}");
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn old_history_is_pruned_to_fit_and_the_turn_goes_on() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("fits")]);
    let mut harness = Harness::new(&model).limits(|l| l.max_history_tokens = 2000);
    harness.history = vec![
        ChatMessage::user("old ".repeat(2000)),
        ChatMessage::assistant("old answer"),
    ];
    let run = harness.run("new question").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let sent = &model.requests()[0].messages;
    assert!(matches!(sent[0], ChatMessage::System { .. }));
    // The thread's context goes on with the first message still there: the question.
    let last = sent.last().unwrap().content();
    assert!(
        last.starts_with(cairn_core::prompt::CONTEXT_OPEN) && last.ends_with("new question"),
        "{last}"
    );
    assert!(
        !sent.iter().any(|m| m.content().contains("old old")),
        "the oldest went first"
    );
}

#[tokio::test]
async fn a_budget_tripped_inside_parallel_children_is_reported_once() {
    let model = ScriptedModel::new();
    let mut fan = ScriptedTurn::new();
    for n in 0..4 {
        fan = fan.tool(
            "run_subtask",
            json!({"title": format!("c{n}"), "instructions": "loop"}),
        );
    }
    model.root([fan]);
    for n in 0..4 {
        model.subtask(
            &format!("c{n}"),
            (0..10).map(|_| ScriptedTurn::call("probe", json!({}))),
        );
    }
    let run = Harness::new(&model)
        .limits(|l| l.max_total_llm_calls = 6)
        .tool(Probe::new("probe").delay(Duration::from_millis(1)))
        .run("go")
        .await;
    let exceeded = exceeded(&run);
    assert_eq!(exceeded.reason, BudgetReason::LlmCalls);
    assert_eq!(model.requests().len(), 6);
    // Every started call ended, at every depth.
    let starts = run.events.iter().filter(|e| matches!(e, Event::ToolCallUpdate(u) if u.status == cairn_protocol::ToolCallStatus::Start)).count();
    assert_eq!(starts, run.tool_ends().len());
}
