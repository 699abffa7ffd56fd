//! `create_plan`: steps run as subtasks in dependency order (independent ones
//! together), a failed step skips what needs it, drafts wait for the user (always in
//! Plan mode), and a stored draft runs by its id.

use std::sync::Arc;

use cairn_core::plan::{MemoryPlans, PlanBook};
use cairn_protocol::{Event, ExecutionMode, PermissionMode, ToolCallStatus, TurnStatus};
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::support::{Harness, Probe, Run, assert_calls_paired};

fn step(id: &str, depends_on: &[&str]) -> Value {
    json!({"id": id, "title": id.to_uppercase(), "instructions": format!("do {id}"),
           "depends_on": depends_on})
}

fn plan(steps: Vec<Value>, mode: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_with_id(
        "plan_call",
        "create_plan",
        json!({"objective": "ship it", "steps": steps, "execution_mode": mode}),
    )
}

/// The `create_plan` call's result.
fn plan_result(run: &Run) -> String {
    run.tool_ends()
        .into_iter()
        .find(|(name, ..)| name == "create_plan")
        .map(|(_, result, _)| result.as_str().unwrap_or_default().to_owned())
        .unwrap()
}

/// The step cards as they ended: (step title, result, failed), in the order they ended.
/// (A planning round's or a reviewer's own calls sit under the plan's card too.)
fn step_ends(run: &Run) -> Vec<(String, String, bool)> {
    let titles: std::collections::HashMap<String, String> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(u) if u.status == ToolCallStatus::Start => {
                Some((u.tool_call_id.clone(), u.subtask_title()?))
            }
            _ => None,
        })
        .collect();
    run.events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(u)
                if u.status == ToolCallStatus::End
                    && u.name == "run_subtask"
                    && u.parent_id.as_deref() == Some("plan_call") =>
            {
                Some((
                    titles.get(&u.tool_call_id).cloned().unwrap_or_default(),
                    u.result.as_ref()?.as_str()?.to_owned(),
                    u.is_error?,
                ))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn steps_run_in_dependency_order_independent_ones_together() {
    let model = ScriptedModel::new();
    model.root([
        plan(
            vec![
                step("a", &[]),
                step("b", &["a"]),
                step("c", &["a"]),
                step("d", &["b", "c"]),
            ],
            "auto_execute",
        ),
        ScriptedTurn::text("All four done."),
    ]);
    model.subtask("A", [ScriptedTurn::text("a found 3 files")]);
    // B and C each wait for the other: run one after the other, they never finish.
    let barrier = Arc::new(Barrier::new(2));
    for title in ["B", "C"] {
        model.subtask(
            title,
            [
                ScriptedTurn::new()
                    .barrier(barrier.clone())
                    .tool("probe", json!({})),
                ScriptedTurn::text(format!("{title} ok")),
            ],
        );
    }
    model.subtask("D", [ScriptedTurn::text("d merged")]);
    let run = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        Harness::new(&model)
            .tool(Probe::new("probe"))
            .run("ship it"),
    )
    .await
    .expect("B and C ran one at a time");
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "All four done.");
    assert_calls_paired(&run.outcome.messages);
    // The plan is shown before its steps, each a run_subtask card under it.
    let created = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::PlanCreated(p) => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (
            created.plan_id.as_str(),
            created.execution_mode,
            created.steps.len()
        ),
        ("p1", ExecutionMode::AutoExecute, 4)
    );
    assert_eq!(created.tool_call_id, "plan_call");
    let ends = step_ends(&run);
    assert_eq!(ends.first().map(|e| e.0.as_str()), Some("A"));
    assert_eq!(ends.last().map(|e| e.0.as_str()), Some("D"));
    assert!(ends.iter().all(|(_, _, failed)| !failed), "{ends:?}");
    // D saw what B and C found.
    let d_request = model
        .requests()
        .into_iter()
        .find(|r| r.origin.subtask_title.as_deref() == Some("D"))
        .unwrap();
    let told = d_request.messages.last().unwrap().content().to_owned();
    assert!(
        told.starts_with("do d\n\nResults of the steps this one depends on:"),
        "{told}"
    );
    assert!(
        told.contains("[b] B:\nB ok") && told.contains("[c] C:\nC ok"),
        "{told}"
    );
    // The model reads every step in plan order.
    let result = plan_result(&run);
    assert_eq!(
        result,
        "Plan p1 (ship it): 4 of 4 steps done.\n1. [done] a A: a found 3 files\n\
         2. [done] b B: B ok\n3. [done] c C: C ok\n4. [done] d D: d merged"
    );
}

#[tokio::test]
async fn a_failed_step_skips_the_steps_that_need_it_and_the_rest_run() {
    let model = ScriptedModel::new();
    model.root([
        plan(
            vec![step("a", &[]), step("b", &["a"]), step("c", &[])],
            "auto_execute",
        ),
        ScriptedTurn::text("One failed."),
    ]);
    // A never finishes within its iterations.
    model.subtask(
        "A",
        [
            ScriptedTurn::call("probe", json!({"n": 1})),
            ScriptedTurn::call("probe", json!({"n": 2})),
        ],
    );
    model.subtask("C", [ScriptedTurn::text("c ok")]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .limits(|l| l.max_iterations_per_level = 2)
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let ends = step_ends(&run);
    let of = |title: &str| ends.iter().find(|e| e.0 == title).cloned().unwrap();
    assert!(
        of("A").2 && of("A").1.contains("used all 2 of its iterations"),
        "{ends:?}"
    );
    assert_eq!(
        of("B"),
        ("B".into(), "skipped: step `a` did not finish".into(), true)
    );
    assert_eq!(of("C"), ("C".into(), "c ok".into(), false));
    let result = plan_result(&run);
    assert!(
        result.starts_with("Plan p1 (ship it): 1 of 3 steps done."),
        "{result}"
    );
    assert!(
        result.contains("2. [skipped] b B: step `a` did not finish"),
        "{result}"
    );
    assert!(
        !model
            .requests()
            .iter()
            .any(|r| r.origin.subtask_title.as_deref() == Some("B"))
    );
}

#[tokio::test]
async fn a_draft_waits_for_the_user_and_runs_later_by_its_id() {
    let plans: Arc<dyn PlanBook> = Arc::new(MemoryPlans::default());
    let model = ScriptedModel::new();
    model.root([
        plan(vec![step("a", &[])], "draft_only"),
        ScriptedTurn::text("Here is the plan: 1. A. Shall I run it?"),
    ]);
    let run = Harness::new(&model)
        .plans(plans.clone())
        .run("plan it")
        .await;
    assert!(plan_result(&run).contains("paused for the user's review"));
    assert!(step_ends(&run).is_empty(), "nothing ran");
    let ready = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::PlanReady(p) => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(ready.plan_id.as_deref(), Some("p1"));
    assert_eq!(ready.steps.map(|s| s.len()), Some(1));
    assert_eq!(ready.plan, "Here is the plan: 1. A. Shall I run it?");

    // "Run it": the next turn runs the stored draft as it is.
    model.root([
        ScriptedTurn::new().tool_with_id(
            "plan_call",
            "create_plan",
            json!({"plan_id": "p1", "execution_mode": "auto_execute"}),
        ),
        ScriptedTurn::text("Done."),
    ]);
    model.subtask("A", [ScriptedTurn::text("a ok")]);
    let run = Harness::new(&model).plans(plans).run("run it").await;
    assert_eq!(
        plan_result(&run),
        "Plan p1 (ship it): 1 of 1 steps done.\n1. [done] a A: a ok"
    );
    assert!(run.of_type("plan_ready").is_empty());
}

#[tokio::test]
async fn in_plan_mode_every_plan_is_a_draft_and_says_why() {
    let model = ScriptedModel::new();
    model.root([
        plan(vec![step("a", &[])], "auto_execute"),
        ScriptedTurn::text("1. A"),
    ]);
    let run = Harness::new(&model)
        .mode(PermissionMode::Plan)
        .run("plan it")
        .await;
    assert!(plan_result(&run).contains("in Plan mode, where nothing runs"));
    assert!(step_ends(&run).is_empty());
    let created = run.of_type("plan_created");
    assert!(
        matches!(created[0], Event::PlanCreated(p) if p.execution_mode == ExecutionMode::DraftOnly)
    );
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::PlanReady(p) if p.plan_id.as_deref() == Some("p1")))
    );
    assert_eq!(model.requests().len(), 2, "no subtask ran");
}

#[tokio::test]
async fn a_plan_that_cannot_run_is_a_tool_error_the_model_fixes() {
    let model = ScriptedModel::new();
    model.root([
        plan(vec![step("a", &["b"]), step("b", &["a"])], "auto_execute"),
        ScriptedTurn::new().tool_with_id(
            "plan_call2",
            "create_plan",
            json!({"objective": "x", "steps": [], "plan_id": ""}),
        ),
        ScriptedTurn::new().tool_with_id("plan_call3", "create_plan", json!({"plan_id": "p9"})),
        ScriptedTurn::text("I will do it myself."),
    ]);
    let run = Harness::new(&model).run("go").await;
    let errors: Vec<String> = run
        .tool_ends()
        .into_iter()
        .map(|(_, result, failed)| {
            assert!(failed);
            result.as_str().unwrap().to_owned()
        })
        .collect();
    assert!(errors[0].contains("in a circle: a → b → a"), "{errors:?}");
    assert!(errors[1].contains("at least one step"), "{errors:?}");
    assert!(errors[2].contains("there is no plan `p9`"), "{errors:?}");
    assert!(run.of_type("plan_created").is_empty(), "no plan was made");
    assert_eq!(run.outcome.text, "I will do it myself.");
}

#[tokio::test]
async fn without_steps_one_planning_round_drafts_them_and_they_run() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().tool_with_id(
            "plan_call",
            "create_plan",
            json!({"objective": "ship it"}),
        ),
        ScriptedTurn::text("Shipped."),
    ]);
    model.subtask(
        "Plan: ship it",
        [
            // Prose first: reminded, it calls submit_plan.
            ScriptedTurn::text("I would build then test."),
            ScriptedTurn::call(
                "submit_plan",
                json!({"steps": [step("a", &[]), step("b", &["a"])]}),
            ),
        ],
    );
    model.subtask("A", [ScriptedTurn::text("built")]);
    model.subtask("B", [ScriptedTurn::text("tested")]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("ship")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let planning: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.origin.subtask_title.as_deref() == Some("Plan: ship it"))
        .collect();
    assert_eq!(planning.len(), 2);
    let tools: Vec<&str> = planning[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["submit_plan"], "its only tool");
    let asked = planning[0].messages.last().unwrap().content().to_owned();
    assert!(
        asked.contains("ship it") && asked.contains("Tools a step may use: probe."),
        "{asked}"
    );
    assert!(
        planning[1]
            .messages
            .last()
            .unwrap()
            .content()
            .contains("must end by calling submit_plan")
    );
    assert_eq!(
        plan_result(&run),
        "Plan p1 (ship it): 2 of 2 steps done.\n1. [done] a A: built\n2. [done] b B: tested"
    );
    let operations: Vec<&str> = run
        .outcome
        .calls
        .iter()
        .map(|c| c.operation.as_str())
        .collect();
    assert_eq!(
        operations,
        ["turn", "plan", "plan", "subtask", "subtask", "turn"]
    );
}

#[tokio::test]
async fn a_reviewer_approves_a_plan_that_then_runs_or_asks_for_changes_and_nothing_runs() {
    let reviewer = Arc::new(cairn_core::Agent {
        description: "reviews plans".into(),
        instructions: "You review plans.".into(),
        hidden: true,
        runnable: false,
        role: Some(cairn_core::AgentRole::Reviewer),
        ..cairn_core::Agent::plain("review")
    });
    let agents = cairn_core::AgentSetup {
        roster: vec![reviewer].into(),
        ..cairn_core::AgentSetup::default()
    };
    for (verdict, notes) in [
        ("needs_changes", "test before you ship"),
        ("approved", "fine"),
    ] {
        let model = ScriptedModel::new();
        model.root([
            plan(vec![step("a", &[])], "agent_review"),
            ScriptedTurn::text("Over."),
        ]);
        model.subtask(
            "Review: ship it",
            [ScriptedTurn::call(
                "submit_review",
                json!({"verdict": verdict, "notes": notes}),
            )],
        );
        model.subtask("A", [ScriptedTurn::text("a ok")]);
        let run = Harness::new(&model).agents(agents.clone()).run("go").await;
        let review = run
            .events
            .iter()
            .find_map(|e| match e {
                Event::PlanReview(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (review.plan_id.as_str(), review.notes.as_str()),
            ("p1", notes)
        );
        assert_eq!(review.tool_call_id, "plan_call");
        let reviewed = model
            .requests()
            .into_iter()
            .find(|r| r.origin.subtask_title.as_deref() == Some("Review: ship it"))
            .unwrap();
        assert!(reviewed.messages[0].content().contains("You review plans."));
        assert!(reviewed.messages[1].content().contains("- a A: do a"));
        assert!(run.outcome.calls.iter().any(|c| c.operation == "review"));
        let result = plan_result(&run);
        if verdict == "approved" {
            assert!(
                result.starts_with("The reviewer approved plan p1: fine\nPlan p1"),
                "{result}"
            );
            assert_eq!(step_ends(&run).len(), 1);
        } else {
            assert!(
                result.contains("asks for changes to plan p1, so nothing ran"),
                "{result}"
            );
            assert!(result.contains("test before you ship"), "{result}");
            assert!(step_ends(&run).is_empty());
        }
    }
}

#[tokio::test]
async fn stop_ends_every_running_step_card_and_starts_no_more() {
    let model = ScriptedModel::new();
    model.root([plan(
        vec![step("a", &[]), step("b", &[]), step("c", &["a"])],
        "auto_execute",
    )]);
    for title in ["A", "B"] {
        model.subtask(title, [ScriptedTurn::new().say("working").hang()]);
    }
    let mut running = Harness::new(&model).start("go");
    let mut writing = 0;
    while writing < 2 {
        if let Event::Chunk(chunk) = running.wait_for(|e| matches!(e, Event::Chunk(_))).await
            && chunk.content == "working"
        {
            writing += 1;
        }
    }
    running.control.cancel.cancel();
    let run = running.handle.await.unwrap();
    assert_eq!(run.outcome.status, TurnStatus::Cancelled);
    let starts: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallUpdate(u) if u.status == ToolCallStatus::Start => {
                Some(u.tool_call_id.as_str())
            }
            _ => None,
        })
        .collect();
    for id in &starts {
        let ends = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallUpdate(u) if u.status == ToolCallStatus::End && u.tool_call_id == *id))
            .count();
        assert_eq!(ends, 1, "card {id} ended {ends} times: {:?}", run.events);
    }
    assert!(
        !model
            .requests()
            .iter()
            .any(|r| r.origin.subtask_title.as_deref() == Some("C"))
    );
    assert_calls_paired(&run.outcome.messages);
}
