//! Child levels: what `run_subtask` starts, and what each step of a plan runs as.
//! A child is a fresh level at depth + 1 sharing the turn's budget, gate and slots;
//! its profile picks its instructions, model and tools (never more than its parent's).

use std::sync::Arc;

use cairn_protocol::{ChatMessage, Event, ServerState};
use serde_json::Value;

use crate::agent::Agent;
use crate::dispatch::Below;
use crate::engine_tools::{CallFailure, Success};
use crate::events::value_text;
use crate::level::run_level;
use crate::level::{Level, LevelEnd, LevelFailure, LevelPlan, Scope};
use crate::prompt::{self, PromptContext};
use crate::subtask::{self, Finish, OutputSchema, RunSubtaskArgs};
use crate::tool::parse_args;
use crate::turn::Turn;

/// A child level to run.
pub(crate) struct Child {
    /// The card it runs under: its events' `parent_id`.
    pub card_id: String,
    pub title: Option<String>,
    pub instructions: String,
    /// The profile it runs as; by default its parent's.
    pub agent: Option<Arc<Agent>>,
    /// The only tools it may use (a subset of its parent's).
    pub tools: Option<Vec<String>>,
    /// How it hands its result back.
    pub finish: Finish,
    /// What its model calls are for, in the usage log.
    pub operation: &'static str,
}

/// No profile a subtask can run as has that id; the model reads which ones do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("there is no agent `{id}` a subtask can run as. Choose one of: {}", .runnable.join(", "))]
pub(crate) struct NotRunnable {
    pub id: String,
    pub runnable: Vec<String>,
}

/// `run_subtask`: its arguments checked, then the child run.
pub(crate) async fn spawn(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call_id: &str,
    args: Value,
) -> Result<Success, CallFailure> {
    let args: RunSubtaskArgs = parse_args(args).map_err(|err| err.to_string())?;
    if args.instructions.trim().is_empty() {
        return Err(CallFailure::RespondToModel(
            "invalid arguments: `instructions` is empty; say what the subtask should do".into(),
        ));
    }
    let schema = args.output_schema.map(OutputSchema::compile).transpose()?;
    let agent = match args.agent.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(id) => {
            Some(runnable_agent(turn, id).map_err(|err| format!("invalid arguments: {err}"))?)
        }
    };
    run_child(
        turn,
        below,
        scope,
        Child {
            card_id: call_id.to_owned(),
            title: args.title,
            instructions: args.instructions,
            agent,
            tools: args.tools,
            finish: Finish::Subtask(schema),
            operation: "subtask",
        },
    )
    .await
}

/// The profile `id` names for a child, or the error listing the ones it may use.
pub(crate) fn runnable_agent(turn: &Turn, id: &str) -> Result<Arc<Agent>, NotRunnable> {
    turn.agents
        .find(id)
        .filter(|agent| agent.runnable)
        .cloned()
        .ok_or_else(|| NotRunnable {
            id: id.to_owned(),
            runnable: turn
                .agents
                .runnable()
                .map(|agent| agent.id.clone())
                .collect(),
        })
}

/// Runs `child` under `scope` to its end.
pub(crate) async fn run_child(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    child: Child,
) -> Result<Success, CallFailure> {
    let agent = child.agent.unwrap_or_else(|| Arc::clone(&scope.agent));
    // The child's profile picks its model and server; one that names none asks the
    // thread's.
    let (model, sampling, server) = if Arc::ptr_eq(&agent, &scope.agent) {
        (
            scope.model.clone(),
            scope.sampling,
            Arc::clone(&scope.server),
        )
    } else {
        let server =
            turn.placement.server_for(&agent).await.map_err(|why| {
                CallFailure::RespondToModel(format!("the subtask cannot run: {why}"))
            })?;
        let (model, sampling) = turn.placement.model_for(&agent, &server);
        (model, sampling, server)
    };
    // The same model on the same server fits as its parent does; any other asks
    // its own window.
    let fit = if Arc::ptr_eq(&server, &scope.server) && model == scope.model {
        scope.fit.clone()
    } else {
        turn.placement
            .fit_on(&turn.ending, &server, &model, sampling)
            .await
            .map_err(|why| format!("the subtask cannot run on `{}`: {why}", server.name))?
    };
    let callable = server.client.can_call_tools(&model);
    let tools = match &child.tools {
        Some(names) => scope.tools.subset(names).map_err(|unknown| {
            format!(
                "invalid arguments: a subtask can only have tools you have, and you do not \
                 have {}. Yours: {}",
                unknown.join(", "),
                scope.callable_names().join(", ")
            )
        })?,
        None => scope.tools.clone(),
    }
    // Never more than the parent has, whatever the profile adds; none for a model
    // that cannot call them.
    .select(agent.offered(callable));
    let depth = scope.depth + 1;
    if let Err(exceeded) = turn.budget.charge_subtask() {
        turn.trip(exceeded);
        return Err(CallFailure::Stopped);
    }
    let title = child
        .title
        .filter(|title| !title.trim().is_empty())
        .unwrap_or_else(|| subtask::derive_title(&child.instructions));
    let workspace = turn
        .workspace
        .as_deref()
        .map(crate::workspace::Workspace::root);
    // The prompt says how to end; the level checks the ending.
    let ending = child.finish.clone();
    let (child_scope, system) = Scope::lay_out(
        LevelPlan {
            depth,
            parent_id: Some(child.card_id),
            title: Some(title.clone()),
            agent,
            model,
            server,
            sampling,
            tools,
            named: child.tools,
            can_call_tools: callable,
            agents: turn.agents.clone(),
            max_depth: turn.limits.max_depth,
            finish: Some(child.finish),
            operation: child.operation,
        },
        &fit,
        |plan, compact| {
            let ctx = PromptContext {
                mode: turn.permissions.mode(),
                tools: &plan.tools,
                workspace,
                can_spawn: plan.offers(subtask::RUN_SUBTASK),
                can_plan: plan.offers(crate::plan::CREATE_PLAN),
                agent: &plan.agent,
                agents: &turn.agents,
                can_switch: plan.offers(crate::switch::SWITCH_AGENT),
                compact,
            };
            prompt::subtask(&ctx, &title, depth, &ending)
        },
    );
    if !turn.placement.is_home(&child_scope.server) {
        turn.emitter.emit(Event::ServerState(ServerState {
            parent_id: child_scope.parent_id.clone(),
            depth,
            server: child_scope.server.name.clone(),
            waiting: false,
        }));
    }
    let history = vec![
        ChatMessage::system(system),
        ChatMessage::user(child.instructions),
    ];
    let mut level = Level::new(child_scope, history);
    match run_level(turn, below, &mut level).await {
        Ok(LevelEnd::Answer(text)) => Ok(Success::text(match level.cut {
            // The parent reads the result as the subtask's whole answer otherwise.
            Some(cut) => format!("{text}\n[cut: {}]", cut.said()),
            None => text,
        })),
        Ok(LevelEnd::Structured(value)) => {
            let text = value_text(&value);
            Ok(Success {
                value,
                ..Success::text(text)
            })
        }
        // Only the root is offered the hand-over.
        Ok(LevelEnd::Switched) => Err(CallFailure::RespondToModel(format!(
            "the subtask `{title}` ended without a result"
        ))),
        Err(LevelFailure::IterationLimit(iterations)) => Err(format!(
            "the subtask `{title}` used all {iterations} of its iterations without \
             finishing"
        )
        .into()),
        Err(LevelFailure::Loop(call)) => {
            Err(format!("the subtask `{title}` kept repeating `{call}` and was stopped").into())
        }
        Err(LevelFailure::Stopped) => Err(CallFailure::Stopped),
        Err(LevelFailure::Server(why)) => {
            Err(format!("the subtask `{title}` could not finish: {why}").into())
        }
    }
}
