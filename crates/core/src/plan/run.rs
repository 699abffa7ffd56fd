//! Making a plan and running it: each step a subtask shown as a `run_subtask` card
//! under the `create_plan` card, started as soon as the steps it depends on are done.

use std::collections::HashMap;

use cairn_protocol::{
    CallKind, Event, ExecutionMode, PermissionMode, PlanCreated, PlanStep, RUN_SUBTASK,
    ToolCallStatus, ToolCallUpdate, Verdict,
};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};

use super::check::check;
use super::draft::{draft_steps, review};
use super::{CreatePlanArgs, StoredPlan};
use crate::child::{Child, run_child, runnable_agent};
use crate::dispatch::Below;
use crate::engine_tools::{CallFailure, Success};
use crate::level::Scope;
use crate::tool::parse_args;
use crate::turn::Turn;

/// How a step ended.
#[derive(Debug, Clone)]
enum StepEnd {
    Done(String),
    Failed(String),
    Skipped(String),
}

/// `create_plan`: the plan made (or fetched), checked, kept, shown, then run or
/// kept as a draft.
pub(crate) async fn create_plan(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call_id: &str,
    args: Value,
) -> Result<Success, CallFailure> {
    let args: CreatePlanArgs = parse_args(args).map_err(|err| err.to_string())?;
    let mode = args.execution_mode.unwrap_or_default();
    let plan = match args
        .plan_id
        .as_deref()
        .map(str::trim)
        .filter(|id| !id.is_empty())
    {
        Some(id) => turn
            .keeps
            .plans
            .get(id)
            .await
            .map_err(|err| format!("the plan `{id}` could not be read: {err}"))?
            .ok_or_else(|| {
                format!(
                    "there is no plan `{id}` in this chat; make one with `objective` and \
                     `steps`"
                )
            })?,
        None => {
            let objective = args
                .objective
                .filter(|objective| !objective.trim().is_empty())
                .ok_or_else(|| {
                    "invalid arguments: `objective` is missing: say what the plan achieves"
                        .to_owned()
                })?;
            let steps = match args.steps {
                Some(steps) => steps,
                None => draft_steps(turn, below, scope, call_id, &objective).await?,
            };
            StoredPlan {
                plan_id: String::new(),
                objective,
                steps,
                requested_outputs: args.requested_outputs.unwrap_or_default(),
            }
        }
    };
    // A stored draft is checked again: the tools or the agents may have changed.
    check(
        &plan.steps,
        |name| scope.tools.contains(name),
        |id| runnable_agent(turn, id).map(drop),
    )
    .map_err(|problem| problem.to_string())?;
    let plan = if plan.plan_id.is_empty() {
        let plan_id = turn
            .keeps
            .plans
            .add(plan.clone())
            .await
            .map_err(|err| format!("the plan could not be kept: {err}"))?;
        StoredPlan { plan_id, ..plan }
    } else {
        plan
    };
    let mode = if turn.permissions.mode() == PermissionMode::Plan {
        ExecutionMode::DraftOnly
    } else {
        mode
    };
    turn.emitter.emit(Event::PlanCreated(PlanCreated {
        plan_id: plan.plan_id.clone(),
        objective: plan.objective.clone(),
        steps: plan.steps.clone(),
        execution_mode: mode,
        tool_call_id: call_id.to_owned(),
        parent_id: scope.parent_id.clone(),
        depth: scope.depth,
    }));
    match mode {
        ExecutionMode::DraftOnly => Ok(Success::text(keep_draft(turn, &plan))),
        ExecutionMode::AutoExecute => run_plan(turn, below, scope, call_id, &plan).await,
        ExecutionMode::AgentReview => match review(turn, below, scope, call_id, &plan).await? {
            (Verdict::Approved, notes) => {
                let ran = run_plan(turn, below, scope, call_id, &plan).await?;
                Ok(Success::text(format!(
                    "The reviewer approved plan {}: {notes}\n{}",
                    plan.plan_id, ran.content
                )))
            }
            (Verdict::NeedsChanges, notes) => Ok(Success::text(format!(
                "The reviewer asks for changes to plan {}, so nothing ran. Notes: {notes}\n\
                 Revise the steps and call {} again, or ask the user.",
                plan.plan_id,
                super::CREATE_PLAN
            ))),
        },
    }
}

/// Keeps `plan` as the turn's draft (its `plan_ready` names it) and says so.
fn keep_draft(turn: &Turn, plan: &StoredPlan) -> String {
    let why = if turn.permissions.mode() == PermissionMode::Plan {
        "the chat is in Plan mode, where nothing runs"
    } else {
        "it was asked for as a draft"
    };
    turn.keeps.note_draft(plan.clone());
    format!(
        "Plan {} is kept as a draft and nothing ran, since {why}. It is paused for the \
         user's review: show it to them in a few lines and ask. When they say to run it, \
         call {} with plan_id \"{}\" and execution_mode \"auto_execute\".",
        plan.plan_id,
        super::CREATE_PLAN,
        plan.plan_id
    )
}

/// Runs the steps of `plan`, each once the steps it depends on are done; a step
/// whose dependency failed is skipped. The result lists every step in plan order.
async fn run_plan(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call_id: &str,
    plan: &StoredPlan,
) -> Result<Success, CallFailure> {
    let mut ends: HashMap<&str, StepEnd> = HashMap::new();
    let mut running = FuturesUnordered::new();
    let mut started: Vec<&str> = Vec::new();
    loop {
        // Once the turn stops no step starts, and those running are let finish
        // their cards (cancelled) before the plan gives up.
        let stopping = turn.is_stopping();
        for step in plan.steps.iter().filter(|_| !stopping) {
            if started.contains(&step.id.as_str()) {
                continue;
            }
            let blocked = step.depends_on.iter().find(|id| {
                matches!(
                    ends.get(id.as_str()),
                    Some(StepEnd::Failed(_) | StepEnd::Skipped(_))
                )
            });
            if let Some(blocker) = blocked {
                started.push(&step.id);
                let reason = format!("step `{blocker}` did not finish");
                skip_step(turn, scope, call_id, step, &reason);
                ends.insert(&step.id, StepEnd::Skipped(reason));
                continue;
            }
            let ready = step
                .depends_on
                .iter()
                .all(|id| matches!(ends.get(id.as_str()), Some(StepEnd::Done(_))));
            if ready {
                started.push(&step.id);
                let inputs = inputs(step, plan, &ends);
                running.push(async move {
                    (
                        step,
                        run_step(turn, below, scope, call_id, step, inputs).await,
                    )
                });
            }
        }
        let Some((step, end)) = running.next().await else {
            break;
        };
        // `None`: stopped; the turn's reason says why.
        if let Some(end) = end {
            ends.insert(&step.id, end);
        }
    }
    if turn.is_stopping() {
        return Err(CallFailure::Stopped);
    }
    Ok(Success::text(summary(plan, &ends)))
}

/// One step as a subtask under its own card; `None` when the turn stops.
async fn run_step(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call_id: &str,
    step: &PlanStep,
    inputs: String,
) -> Option<StepEnd> {
    let card_id = step_card(turn, scope, call_id, step);
    let started = std::time::Instant::now();
    let result = run_child(
        turn,
        below,
        scope,
        Child {
            card_id: card_id.clone(),
            title: Some(step_title(step)),
            instructions: format!("{}{inputs}", step.instructions),
            agent: step
                .agent
                .as_deref()
                .and_then(|id| runnable_agent(turn, id).ok()),
            tools: step.tools.clone(),
            finish: crate::subtask::Finish::Subtask(None),
            operation: "subtask",
        },
    )
    .await;
    let end = match result {
        Ok(success) => StepEnd::Done(success.content),
        Err(CallFailure::RespondToModel(problem) | CallFailure::Denied(problem)) => {
            StepEnd::Failed(problem)
        }
        Err(CallFailure::Stopped) => {
            end_step_card(turn, scope, call_id, &card_id, "cancelled", true, started);
            return None;
        }
    };
    let (text, failed) = match &end {
        StepEnd::Done(text) => (text.as_str(), false),
        StepEnd::Failed(text) | StepEnd::Skipped(text) => (text.as_str(), true),
    };
    end_step_card(turn, scope, call_id, &card_id, text, failed, started);
    Some(end)
}

/// A step that will not run: its card opens and closes with the reason.
fn skip_step(turn: &Turn, scope: &Scope, call_id: &str, step: &PlanStep, reason: &str) {
    let card_id = step_card(turn, scope, call_id, step);
    let skipped = format!("skipped: {reason}");
    end_step_card(
        turn,
        scope,
        call_id,
        &card_id,
        &skipped,
        true,
        std::time::Instant::now(),
    );
}

/// Opens a step's `run_subtask` card under the `create_plan` card; its id.
fn step_card(turn: &Turn, scope: &Scope, call_id: &str, step: &PlanStep) -> String {
    let card_id = turn.ids.claim_call(&format!("{call_id}:{}", step.id));
    turn.emitter.emit(Event::ToolCallUpdate(ToolCallUpdate {
        args: Some(json!({
            "title": step_title(step),
            "instructions": step.instructions,
            "step_id": step.id,
        })),
        ..step_update(scope, call_id, &card_id, ToolCallStatus::Start)
    }));
    card_id
}

fn end_step_card(
    turn: &Turn,
    scope: &Scope,
    call_id: &str,
    card_id: &str,
    result: &str,
    failed: bool,
    started: std::time::Instant,
) {
    turn.emitter.emit(Event::ToolCallUpdate(ToolCallUpdate {
        result: Some(Value::String(result.to_owned())),
        is_error: Some(failed),
        duration_ms: Some(crate::budget::millis(started.elapsed())),
        ..step_update(scope, call_id, card_id, ToolCallStatus::End)
    }));
}

/// An update of a step's `run_subtask` card, under the `create_plan` card `call_id`.
fn step_update(
    scope: &Scope,
    call_id: &str,
    card_id: &str,
    status: ToolCallStatus,
) -> ToolCallUpdate {
    ToolCallUpdate {
        kind: Some(CallKind::Subtask),
        ..ToolCallUpdate::new(
            card_id,
            RUN_SUBTASK,
            Some(call_id.to_owned()),
            scope.depth + 1,
            status,
        )
    }
}

fn step_title(step: &PlanStep) -> String {
    if step.title.trim().is_empty() {
        crate::subtask::derive_title(&step.instructions)
    } else {
        step.title.clone()
    }
}

/// What a step is told of the steps it depends on.
fn inputs(step: &PlanStep, plan: &StoredPlan, ends: &HashMap<&str, StepEnd>) -> String {
    if step.depends_on.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n\nResults of the steps this one depends on:");
    for id in &step.depends_on {
        let title = plan
            .steps
            .iter()
            .find(|s| &s.id == id)
            .map(step_title)
            .unwrap_or_default();
        if let Some(StepEnd::Done(result)) = ends.get(id.as_str()) {
            text.push_str(&format!("\n[{id}] {title}:\n{result}"));
        }
    }
    text
}

/// The plan's outcome for the model, in plan order.
fn summary(plan: &StoredPlan, ends: &HashMap<&str, StepEnd>) -> String {
    let done = ends
        .values()
        .filter(|end| matches!(end, StepEnd::Done(_)))
        .count();
    let mut text = format!(
        "Plan {} ({}): {done} of {} steps done.",
        plan.plan_id,
        plan.objective,
        plan.steps.len()
    );
    for (n, step) in plan.steps.iter().enumerate() {
        let (state, detail) = match ends.get(step.id.as_str()) {
            Some(StepEnd::Done(result)) => ("done", result.as_str()),
            Some(StepEnd::Failed(problem)) => ("failed", problem.as_str()),
            Some(StepEnd::Skipped(reason)) => ("skipped", reason.as_str()),
            None => ("not run", ""),
        };
        text.push_str(&format!(
            "\n{}. [{}] {} {}: {detail}",
            n + 1,
            state,
            step.id,
            step_title(step)
        ));
    }
    if !plan.requested_outputs.is_empty() {
        text.push_str(&format!(
            "\nThe user asked for: {}.",
            plan.requested_outputs.join(", ")
        ));
    }
    text
}
