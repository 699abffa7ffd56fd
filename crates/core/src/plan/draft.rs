//! The two rounds a plan may need before it runs: drafting its steps when the model
//! gave none (`submit_plan`), and a reviewer's verdict (`submit_review`).

use std::fmt::Write;

use cairn_protocol::{Event, PlanReview, PlanStep, Verdict};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{SUBMIT_PLAN, SUBMIT_REVIEW, StoredPlan};
use crate::agent::AgentRole;
use crate::child::{Child, run_child};
use crate::dispatch::Below;
use crate::engine_tools::CallFailure;
use crate::level::Scope;
use crate::subtask::{Finish, OutputSchema};
use crate::turn::Turn;

fn steps_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "instructions": {"type": "string"},
                        "tools": {"type": "array", "items": {"type": "string"}},
                        "agent": {"type": "string"},
                        "depends_on": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["id", "title", "instructions"]
                }
            }
        },
        "required": ["steps"]
    })
}

fn review_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["approved", "needs_changes"]},
            "notes": {"type": "string", "description": "What is good, and what to change"}
        },
        "required": ["verdict", "notes"]
    })
}

#[derive(Debug, Deserialize)]
struct Drafted {
    steps: Vec<PlanStep>,
}

#[derive(Debug, Deserialize)]
struct Reviewed {
    verdict: Verdict,
    #[serde(default)]
    notes: String,
}

fn compiled(schema: Value) -> Result<OutputSchema, CallFailure> {
    // Written here: a failure is Cairn's, reported to the model as any other.
    OutputSchema::compile(schema).map_err(CallFailure::from)
}

/// One planning round: a level whose only tool is `submit_plan`, which it must call.
pub(super) async fn draft_steps(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call_id: &str,
    objective: &str,
) -> Result<Vec<PlanStep>, CallFailure> {
    let tools: Vec<&str> = scope.tools.names().collect();
    let agents: Vec<&str> = turn.agents.runnable().map(|a| a.id.as_str()).collect();
    let mut instructions = format!(
        "Break this objective into steps, each one a subtask can carry out alone:\n\
         {objective}\n\n\
         Give each step a short id (s1, s2, …), a title and complete instructions: a step \
         sees only its instructions and the results of the steps in its depends_on. Steps \
         that do not need each other's results run at the same time."
    );
    if !tools.is_empty() {
        let _ = write!(
            instructions,
            "\nTools a step may use: {}.",
            tools.join(", ")
        );
    }
    if !agents.is_empty() {
        let _ = write!(
            instructions,
            "\nAgents a step may run as: {}.",
            agents.join(", ")
        );
    }
    let _ = write!(instructions, "\nCall {SUBMIT_PLAN} with the steps.");
    let drafted = run_child(
        turn,
        below,
        scope,
        Child {
            card_id: call_id.to_owned(),
            title: Some(format!("Plan: {objective}")),
            instructions,
            agent: None,
            tools: Some(Vec::new()),
            finish: Finish::Submit {
                name: SUBMIT_PLAN,
                description: "Hand back the plan's steps.",
                schema: compiled(steps_schema())?,
            },
            operation: "plan",
        },
    )
    .await?;
    let drafted: Drafted = serde_json::from_value(drafted.value).map_err(|err| {
        CallFailure::RespondToModel(format!("the planning round gave no usable steps: {err}"))
    })?;
    Ok(drafted.steps)
}

/// A reviewer's verdict on `plan`, told to the front ends as `plan_review`.
pub(super) async fn review(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call_id: &str,
    plan: &StoredPlan,
) -> Result<(Verdict, String), CallFailure> {
    let mut instructions = format!(
        "Review this plan before it runs.\nObjective: {}\nSteps:",
        plan.objective
    );
    for step in &plan.steps {
        let after = if step.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", step.depends_on.join(", "))
        };
        let _ = write!(
            instructions,
            "\n- {} {}{after}: {}",
            step.id, step.title, step.instructions
        );
    }
    let _ = write!(
        instructions,
        "\n\nCheck that the steps reach the objective, that each has what it needs, and \
         that the order is right; look at the files when that tells you more. Call \
         {SUBMIT_REVIEW} with verdict approved, or needs_changes and notes saying what to \
         change."
    );
    let reviewed = run_child(
        turn,
        below,
        scope,
        Child {
            card_id: call_id.to_owned(),
            title: Some(format!("Review: {}", plan.objective)),
            instructions,
            agent: turn.agents.with_role(AgentRole::Reviewer).cloned(),
            tools: None,
            finish: Finish::Submit {
                name: SUBMIT_REVIEW,
                description: "Hand back your verdict on the plan and your notes.",
                schema: compiled(review_schema())?,
            },
            operation: "review",
        },
    )
    .await?;
    let reviewed: Reviewed = serde_json::from_value(reviewed.value).map_err(|err| {
        CallFailure::RespondToModel(format!("the review gave no usable verdict: {err}"))
    })?;
    turn.emitter.emit(Event::PlanReview(PlanReview {
        plan_id: plan.plan_id.clone(),
        verdict: reviewed.verdict,
        notes: reviewed.notes.clone(),
        tool_call_id: call_id.to_owned(),
    }));
    Ok((reviewed.verdict, reviewed.notes))
}
