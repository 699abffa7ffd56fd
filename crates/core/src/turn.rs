//! One root turn: what it was asked, what it shares across its depths, how it stops,
//! and what it hands back.
//!
//! request → the model's context window → limits fitted to it → root level (the
//! loop, recursing into subtasks) ⟂ wall-clock watchdog → stop reason (none, user,
//! budget, provider) → outcome + final events.

use std::sync::Arc;

use cairn_protocol::{
    ChatMessage, ErrorEvent, ErrorKind, Event, ExecutionTree, PermissionMode, PlanReady,
    ServerState, TurnStatus,
};
use serde_json::Value;

use crate::context::ContextFit;
use crate::disclosure::Disclosure;
use crate::dispatch::Below;
use crate::engine_tools::{CallFailure, Place, Success, registry};
use crate::events::EventSink;
use crate::level::{
    Level, LevelFailure, LevelPlan, Scope, first_request, fit_tiny_model, run_level,
};
use crate::limits::Limits;
use crate::model::ModelClient;
use crate::plan::CREATE_PLAN;
use crate::prompt::{self, PromptContext};
use crate::servers::{ModelServer, NoServers, ServerDirectory, ServerUnusable};
use crate::subtask::RUN_SUBTASK;
use crate::switch::SWITCH_AGENT;
use crate::toolbelt::Toolbelt;
use crate::workspace::Workspace;

mod accounts;
mod ending;
mod ids;
mod keeps;
mod permissions;
mod placement;
mod request;
mod shared;
mod slots;

use ending::Stop;
pub(crate) use placement::{Placement, TooSmall, server_for};
pub use request::{TurnControl, TurnOutcome, TurnRequest};
pub(crate) use shared::Turn;

/// The engine: the thread's model server, the others a profile may name, and the
/// limits every turn runs under.
#[derive(Clone)]
pub struct Engine {
    home: Arc<ModelServer>,
    servers: Arc<dyn ServerDirectory>,
    limits: Limits,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
impl Engine {
    /// An engine on one server, named `default`, with no others to pick from: as
    /// many requests in flight as the turn allows.
    pub fn new(model: Arc<dyn ModelClient>, limits: Limits) -> Self {
        Self {
            home: Arc::new(ModelServer::new(
                "default",
                model,
                limits.max_parallel_per_turn,
            )),
            servers: Arc::new(NoServers),
            limits,
        }
    }

    /// The engine with `home` as the thread's server and `servers` for the profiles
    /// that name their own.
    pub fn with_servers(self, home: Arc<ModelServer>, servers: Arc<dyn ServerDirectory>) -> Self {
        Self {
            home,
            servers,
            ..self
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Runs one turn to its end. Emits every event except `done`, which the caller
    /// sends (from [`TurnOutcome::done_event`]) once it has committed the outcome.
    pub async fn run_turn(
        &self,
        request: TurnRequest,
        control: TurnControl,
        sink: Arc<dyn EventSink>,
    ) -> TurnOutcome {
        let server = self.root_server(&request).await;
        let window = match &server {
            Ok(server) => {
                let model = request.model_for_root(server).0;
                tokio::select! {
                    biased;
                    () = control.cancel.cancelled() => None,
                    window = server.client.context_window(&model) => window,
                }
            }
            Err(_) => None,
        };
        let params = server
            .as_ref()
            .ok()
            .and_then(|server| server.client.params(&request.model_for_root(server).0));
        let fit =
            ContextFit::new(self.limits, window, request.sampling.max_tokens).for_model(params);
        let turn = Turn::new(self.placement(&request), &fit, &request, &control, sink);
        let server = server.unwrap_or_else(|problem| {
            turn.fail(ErrorEvent {
                message: problem.to_string(),
                kind: ErrorKind::Config,
            });
            Arc::clone(&self.home)
        });
        if !turn.placement.is_home(&server) {
            turn.emitter.emit(Event::ServerState(ServerState {
                parent_id: None,
                depth: 0,
                server: server.name.clone(),
                waiting: false,
            }));
        }
        let mut root = self.open_root(&fit, request, server);
        root.journal = control.journal.clone();
        if fit.tiny_model {
            fit_tiny_model(&turn, &mut root);
        }
        if let Some(window) = fit.too_small() {
            turn.fail(too_small(window));
        }
        let result = {
            let run = run_level(&turn, &Recursion, &mut root);
            tokio::pin!(run);
            // The deadline moves on while the clock is paused: wake at it, and trip
            // only once the clock has really run out.
            loop {
                tokio::select! {
                    result = &mut run => break result,
                    () = tokio::time::sleep_until(turn.budget.deadline()) => {
                        if let Err(exceeded) = turn.budget.check_wall_clock() {
                            turn.trip(exceeded);
                            break run.await;
                        }
                    }
                }
            }
        };
        finish(&turn, root, result)
    }

    /// Has the server read the prompt a turn of `request` would open with, so that the
    /// question, once asked, is all it has left to read: `request.history` is the
    /// thread so far, without the question. Only where the client says the server
    /// keeps a prompt's prefix at no cost; errors are the client's to log.
    pub async fn warm(&self, request: TurnRequest) {
        let Ok(server) = self.root_server(&request).await else {
            return;
        };
        let model = request.model_for_root(&server).0;
        // Asked first: what the server says of its window is what says it is local.
        let window = server.client.context_window(&model).await;
        if !server.client.keeps_prefix(&model) {
            return;
        }
        let fit = ContextFit::new(self.limits, window, request.sampling.max_tokens)
            .for_model(server.client.params(&model));
        if fit.too_small().is_some() {
            return;
        }
        let quiet: Arc<dyn EventSink> = Arc::new(|_: Event| {});
        let turn = Turn::new(
            self.placement(&request),
            &fit,
            &request,
            &TurnControl::default(),
            quiet,
        );
        let mut root = self.open_root(&fit, request, Arc::clone(&server));
        if let Some(first) = first_request(&turn, &mut root) {
            server.client.warm(first).await;
        }
    }

    /// Where a turn of `request` runs: this engine's servers, the thread's model.
    fn placement(&self, request: &TurnRequest) -> Placement {
        Placement::new(
            Arc::clone(&self.home),
            Arc::clone(&self.servers),
            (request.model.clone(), request.sampling),
            self.limits,
        )
    }

    /// The server the root runs on: its profile's where it names one, else the
    /// thread's.
    async fn root_server(&self, request: &TurnRequest) -> Result<Arc<ModelServer>, ServerUnusable> {
        server_for(&request.agents.current, &self.home, self.servers.as_ref()).await
    }

    /// The root level of `request` as a turn opens it: its scope laid out for the
    /// window, its history the system prompt and then the thread's.
    fn open_root(&self, fit: &ContextFit, request: TurnRequest, server: Arc<ModelServer>) -> Level {
        let agent = Arc::clone(&request.agents.current);
        let agent_is_router = agent.routes();
        let (model, sampling) = request.model_for_root(&server);
        tracing::info!(%model, agent = %agent.id, server = %server.name, "{}", fit.describe());
        let root = RootView::new(
            &request,
            self.limits,
            server.client.can_call_tools(&model),
            fit,
        );
        let (scope, system) = Scope::lay_out(
            LevelPlan {
                depth: 0,
                parent_id: None,
                title: None,
                agent,
                model,
                server,
                sampling,
                tools: root.tools.clone(),
                named: None,
                can_call_tools: root.can_call_tools,
                agents: request.agents.clone(),
                max_depth: root.max_depth,
                finish: None,
                operation: if agent_is_router { "router" } else { "turn" },
            },
            fit,
            |_, compact| root.system_prompt(&request, compact),
        );
        if let Some(disclosure) = scope.disclosure() {
            disclosure.preload(&request.load_tools);
        }
        let context = root.thread_context(&request, scope.compact);
        let mut history = Vec::with_capacity(request.history.len() + 1);
        history.push(ChatMessage::system(system));
        history.extend(request.history);
        let mut level = Level::new(scope, history);
        level.context = (!context.is_empty()).then_some(context);
        level
    }
}

/// What the root level of a turn is shown: its profile's tools, and (from these and
/// what the engine's tools decide of the root) its system prompt. Front ends ask for
/// it too, to say before a turn runs whether its tools will fit.
#[derive(Debug)]
pub struct RootView {
    pub tools: Toolbelt,
    can_call_tools: bool,
    max_depth: u32,
}

impl RootView {
    /// The root of `request` as its profile shapes it, fitted as `fit` says; a model
    /// that cannot call tools (`can_call_tools` false) is offered none, nor is a small
    /// one in a plain chat (see [`plain_chat`]); a small one elsewhere is offered no
    /// subtasks and no tool that is not for small models
    /// ([`crate::tool::Tool::for_small_models`]).
    pub fn new(
        request: &TurnRequest,
        limits: Limits,
        can_call_tools: bool,
        fit: &ContextFit,
    ) -> Self {
        let can_call_tools = can_call_tools && !plain_chat(request, fit);
        let agent = &request.agents.current;
        let tools = request.tools.select(agent.offered(can_call_tools));
        if fit.small_model {
            // Only the tools meant for one, and no subtasks: the 1.5B asked for them
            // with tool groups' names as their tools and repeated the error until the
            // turn failed.
            return Self {
                tools: tools.for_small_model(),
                can_call_tools,
                max_depth: 0,
            };
        }
        Self {
            tools,
            can_call_tools,
            max_depth: limits.max_depth,
        }
    }

    /// The root as the engine's tools see it, to decide which of them it offers.
    fn place<'a>(&self, request: &'a TurnRequest) -> Place<'a> {
        Place {
            depth: 0,
            max_depth: self.max_depth,
            agent: &request.agents.current,
            agents: &request.agents,
            can_call_tools: self.can_call_tools,
            named: None,
            finish: None,
            disclosure: None,
        }
    }

    /// The system prompt, in full or `compact`: what threads of its kind share.
    pub fn system_prompt(&self, request: &TurnRequest, compact: bool) -> String {
        prompt::root(&self.prompt_context(request, compact))
    }

    /// What the thread's first message opens with: its mode, folder and `AGENTS.md`.
    pub fn thread_context(&self, request: &TurnRequest, compact: bool) -> String {
        prompt::thread_context(
            &self.prompt_context(request, compact),
            request.instructions.as_deref(),
        )
    }

    fn prompt_context<'a>(&'a self, request: &'a TurnRequest, compact: bool) -> PromptContext<'a> {
        let place = self.place(request);
        PromptContext {
            compact,
            mode: request.mode,
            tools: &self.tools,
            workspace: request.workspace.as_deref().map(Workspace::root),
            can_spawn: registry::offered(&place, RUN_SUBTASK),
            can_plan: registry::offered(&place, CREATE_PLAN),
            agent: &request.agents.current,
            agents: &request.agents,
            can_switch: registry::offered(&place, SWITCH_AGENT),
        }
    }

    /// How, fitted as `fit` says, the root shows its tools.
    pub fn tools_shown(&self, request: &TurnRequest, fit: &ContextFit) -> ToolsShown {
        let offers = crate::level::level_offers(&self.tools, &self.place(request));
        let layout = fit.lay_out(offers, fit.limits.max_visible_tools, |compact| {
            self.system_prompt(request, compact)
        });
        ToolsShown {
            on_demand: layout.on_demand,
            groups: layout
                .offered
                .disclosure()
                .map(Disclosure::group_names)
                .unwrap_or_default(),
        }
    }
}

/// A small model in a chat without a folder, and without tools of the user's own (an
/// MCP server's), is a plain chat: shown only `load_tools`, the 1.5B called it for
/// "Say hi." and then asked for a subtask, and invented tools (`multiply`,
/// `translate`) for questions it answers well with nothing to call (README "Small
/// models"). Its memory, web and subtask tools are what it loses.
fn plain_chat(request: &TurnRequest, fit: &ContextFit) -> bool {
    fit.small_model
        && request.workspace.is_none()
        && !request
            .tools
            .names()
            .any(|name| crate::disclosure::group_of(name).is_some())
}

/// What a root shows the model at first, for a front end to say before a turn runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolsShown {
    /// Tools usually shown wait in their groups: the window is small, or they are
    /// too many.
    pub on_demand: bool,
    /// The groups the model loads when it needs them, by name.
    pub groups: Vec<String>,
}

/// The error a turn ends with before any model call when the window cannot hold one.
fn too_small(window: &crate::model::ContextWindow) -> ErrorEvent {
    ErrorEvent {
        message: TooSmall(window.clone()).to_string(),
        kind: ErrorKind::Config,
    }
}

/// The turn's outcome, once its root level has ended with `result`.
fn finish(
    turn: &Turn,
    root: Level,
    result: Result<crate::level::LevelEnd, LevelFailure>,
) -> TurnOutcome {
    let (status, error, budget) = match result {
        Ok(_) => (TurnStatus::Completed, None, None),
        Err(LevelFailure::IterationLimit(iterations)) => (
            TurnStatus::Failed,
            Some(ErrorEvent {
                message: format!(
                    "the model used all {iterations} iterations of this turn without \
                     finishing; ask again, or raise CAIRN_MAX_ITERATIONS_PER_LEVEL"
                ),
                kind: ErrorKind::IterationLimit,
            }),
            None,
        ),
        Err(LevelFailure::Loop(call)) => (
            TurnStatus::Failed,
            Some(ErrorEvent {
                message: format!(
                    "the model kept repeating `{call}` after it was told the call \
                     repeats itself; stopped. Ask again in other words, or try \
                     another model"
                ),
                kind: ErrorKind::Loop,
            }),
            None,
        ),
        // Only a subtask's level ends so; the root's server failing fails the turn.
        Err(LevelFailure::Server(message)) => (
            TurnStatus::Failed,
            Some(ErrorEvent {
                message,
                kind: ErrorKind::Provider,
            }),
            None,
        ),
        Err(LevelFailure::Stopped) => match turn.ending.reason() {
            Some(Stop::Budget(exceeded)) => (TurnStatus::BudgetExceeded, None, Some(*exceeded)),
            Some(Stop::Failed(error)) => (TurnStatus::Failed, Some(error.clone()), None),
            None => (TurnStatus::Cancelled, None, None),
        },
    };
    if let Some(error) = &error {
        turn.emitter.emit(Event::Error(error.clone()));
    }
    let cut = root.cut.filter(|_| status == TurnStatus::Completed);
    let (text, reasoning, messages) = root.into_parts();
    let draft = turn.keeps.take_draft();
    if status == TurnStatus::Completed {
        let ready = match draft {
            Some(plan) => Some(PlanReady {
                thread_id: turn.ids.thread_id.clone(),
                message_id: turn.ids.message_id.clone(),
                plan: if text.is_empty() {
                    plan.objective.clone()
                } else {
                    text.clone()
                },
                plan_id: Some(plan.plan_id),
                steps: Some(plan.steps),
            }),
            None if turn.permissions.mode() == PermissionMode::Plan && !text.is_empty() => {
                Some(PlanReady {
                    thread_id: turn.ids.thread_id.clone(),
                    message_id: turn.ids.message_id.clone(),
                    plan: text.clone(),
                    plan_id: None,
                    steps: None,
                })
            }
            None => None,
        };
        if let Some(ready) = ready {
            turn.emitter.emit(Event::PlanReady(ready));
        }
    }
    turn.emitter.idle();
    let (usage, calls) = turn.accounts.close();
    TurnOutcome {
        thread_id: turn.ids.thread_id.clone(),
        message_id: turn.ids.message_id.clone(),
        status,
        text,
        reasoning,
        messages,
        tree: ExecutionTree {
            cut,
            ..turn.emitter.tree()
        },
        usage,
        calls,
        error,
        budget,
        switch: match status {
            TurnStatus::Completed => turn.keeps.switch(),
            _ => None,
        },
        cut,
    }
}

/// The one way down: a subtask or a plan's steps, run as child levels.
struct Recursion;

#[async_trait::async_trait]
impl Below for Recursion {
    async fn subtask(
        &self,
        turn: &Turn,
        scope: &Scope,
        call_id: &str,
        args: Value,
    ) -> Result<Success, CallFailure> {
        crate::child::spawn(turn, self, scope, call_id, args).await
    }

    async fn plan(
        &self,
        turn: &Turn,
        scope: &Scope,
        call_id: &str,
        args: Value,
    ) -> Result<Success, CallFailure> {
        crate::plan::create_plan(turn, self, scope, call_id, args).await
    }
}
