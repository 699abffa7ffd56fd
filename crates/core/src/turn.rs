//! One root turn: what it was asked, what it shares across its depths, how it stops,
//! and what it hands back.
//!
//! request → the model's context window → limits fitted to it → root level (the
//! loop, recursing into subtasks) ⟂ wall-clock watchdog → stop reason (none, user,
//! budget, provider) → outcome + final events.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::model::{ModelClient, Sampling};
use crate::workspace::Workspace;
use cairn_protocol::{
    BudgetExceeded, ChatMessage, Cut, Done, ErrorEvent, ErrorKind, Event, ExecutionTree, ModelCall,
    PermissionMode, PlanReady, ServerState, TurnStatus, Usage,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentSetup, AgentSwitch};
use crate::approvals::Approvals;
use crate::budget::Budget;
use crate::context::ContextFit;
use crate::disclosure::Disclosure;
use crate::events::{Emitter, EventSink, Journal};
use crate::gate::{Gate, SessionGrants};
use crate::level::{Level, LevelFailure, LevelPlan, Scope};
use crate::limits::Limits;
use crate::locks::NamedLocks;
use crate::plan::{MemoryPlans, PlanBook, StoredPlan};
use crate::prompt::{self, PromptContext};
use crate::results::KeptResults;
use crate::rules::RuleSet;
use crate::servers::{ModelServer, NoServers, ServerDirectory, ServerUnusable};
use crate::toolbelt::Toolbelt;

mod accounts;
mod ending;
mod permissions;
mod placement;

use accounts::Accounts;
use ending::{Ending, Stop};
use permissions::Permissions;
use placement::model_for;
pub(crate) use placement::{Placement, TooSmall, server_for};

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

/// What one turn is asked to do.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub thread_id: String,
    pub message_id: String,
    pub model: String,
    /// The thread so far, ending with the new user message; no system prompt (the
    /// engine writes it from the mode and the tools).
    pub history: Vec<ChatMessage>,
    pub mode: PermissionMode,
    pub tools: Toolbelt,
    pub workspace: Option<Arc<Workspace>>,
    pub sampling: Sampling,
    /// The user's persistent permission rules.
    pub rules: Arc<RuleSet>,
    /// The project's own instructions (the workspace's `AGENTS.md`), if any.
    pub instructions: Option<String>,
    /// The profile the turn runs as (its instructions, tools and model), the others
    /// its subtasks may run as, and whether it may hand the thread over.
    pub agents: AgentSetup,
    /// Where the thread's plans are kept; without one, the turn keeps its own.
    pub plans: Option<Arc<dyn PlanBook>>,
    /// Tool groups the root shows from the start, folded or not (`plans` for a turn
    /// asked to run a stored plan).
    pub load_tools: Vec<String>,
}

impl TurnRequest {
    /// The model the root level asks on `server` and how it samples: the profile's
    /// where it names them, else the thread's (see [`model_for`]).
    fn model_for_root(&self, server: &ModelServer) -> (String, Sampling) {
        model_for(&self.agents.current, server, &self.model, self.sampling)
    }
}

/// How the outside world steers a running turn.
#[derive(Debug, Clone)]
pub struct TurnControl {
    /// Cancel to stop the whole tree; the partial answer is kept.
    pub cancel: CancellationToken,
    pub approvals: Arc<Approvals>,
    /// The thread's "allow for this chat" grants; they outlive the turn.
    pub grants: Arc<SessionGrants>,
    /// Told of every message the root level adds to the thread, as it adds it.
    pub journal: Option<Arc<dyn Journal>>,
}

impl std::fmt::Debug for dyn Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Journal")
    }
}

impl Default for TurnControl {
    fn default() -> Self {
        Self {
            cancel: CancellationToken::new(),
            approvals: Approvals::new(),
            grants: Arc::new(SessionGrants::new()),
            journal: None,
        }
    }
}

/// What a turn produced, however it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub thread_id: String,
    pub message_id: String,
    pub status: TurnStatus,
    /// The root level's answer text (partial if the turn was cut short).
    pub text: String,
    pub reasoning: String,
    /// The messages the root level added to the thread, in order, each tool call
    /// paired with its result: exactly what the next turn replays.
    pub messages: Vec<ChatMessage>,
    pub tree: ExecutionTree,
    pub usage: Usage,
    /// Every model call the turn made, at every depth, in the order they ended.
    pub calls: Vec<ModelCall>,
    pub error: Option<ErrorEvent>,
    pub budget: Option<BudgetExceeded>,
    /// Set when the turn ended by handing the thread to another profile.
    pub switch: Option<AgentSwitch>,
    /// Why the answer was cut before the model finished it, if it was.
    pub cut: Option<Cut>,
}

impl TurnOutcome {
    /// The closing `done` event, sent once the outcome is committed.
    pub fn done_event(&self) -> Event {
        Event::Done(Done {
            thread_id: self.thread_id.clone(),
            message_id: self.message_id.clone(),
            usage: self.usage,
            status: self.status,
            cut: self.cut,
        })
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
        let turn = Turn::new(self, &fit, &request, &control, sink);
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
        if let Some(window) = fit.too_small() {
            turn.fail(too_small(window));
        }
        let result = {
            let run = turn.run_level(&mut root);
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
        turn.finish(root, result)
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
        let turn = Turn::new(self, &fit, &request, &TurnControl::default(), quiet);
        let mut root = self.open_root(&fit, request, Arc::clone(&server));
        if let Some(first) = turn.first_request(&mut root) {
            server.client.warm(first).await;
        }
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
        let root = RootView::new(&request, self.limits, server.client.can_call_tools(&model));
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
                can_spawn: root.can_spawn,
                switch: root.switch.clone(),
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
        level.context = Some(context);
        level
    }
}

/// What the root level of a turn is shown: its profile's tools, whether it may
/// spawn or hand over, and (from these) its system prompt. Front ends ask for it too,
/// to say before a turn runs whether its tools will fit.
#[derive(Debug)]
pub struct RootView {
    pub tools: Toolbelt,
    pub can_spawn: bool,
    pub can_plan: bool,
    pub(crate) switch: Option<cairn_protocol::ToolSpec>,
}

impl RootView {
    /// The root of `request` as its profile shapes it; a model that cannot call tools
    /// (`can_call_tools` false) is offered none.
    pub fn new(request: &TurnRequest, limits: Limits, can_call_tools: bool) -> Self {
        let agent = &request.agents.current;
        let can_spawn = can_call_tools
            && limits.max_depth > 0
            && agent.tools.allows(crate::subtask::RUN_SUBTASK);
        Self {
            tools: request.tools.select(agent.offered(can_call_tools)),
            can_spawn,
            can_plan: crate::level::plans_here(agent, can_spawn),
            switch: request
                .agents
                .switches_left
                .filter(|_| can_call_tools)
                .map(|_| crate::switch::switch_agent_spec(&request.agents)),
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
        PromptContext {
            compact,
            mode: request.mode,
            tools: &self.tools,
            workspace: request.workspace.as_deref().map(Workspace::root),
            can_spawn: self.can_spawn,
            can_plan: self.can_plan,
            agent: &request.agents.current,
            agents: &request.agents,
            can_switch: self.switch.is_some(),
        }
    }
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

impl RootView {
    /// How, fitted as `fit` says, the root shows its tools.
    pub fn tools_shown(&self, request: &TurnRequest, fit: &ContextFit) -> ToolsShown {
        let offers = crate::level::level_offers(
            &self.tools,
            &crate::engine_tools::Site {
                can_spawn: self.can_spawn,
                can_plan: self.can_plan,
                switch: self.switch.as_ref(),
                finish: None,
            },
        );
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

/// The error a turn ends with before any model call when the window cannot hold one.
fn too_small(window: &crate::model::ContextWindow) -> ErrorEvent {
    ErrorEvent {
        message: TooSmall(window.clone()).to_string(),
        kind: ErrorKind::Config,
    }
}

/// State shared by every level of one turn.
pub(crate) struct Turn {
    /// Where it runs: servers, the thread's model, fitting to a window.
    pub(crate) placement: Placement,
    /// The engine's limits fitted to the model's context window.
    pub(crate) limits: Limits,
    /// The whole of every result cut for the model, for `read_tool_result`.
    pub(crate) kept: KeptResults,
    /// What the turn's model calls spent.
    pub(crate) accounts: Accounts,
    pub(crate) budget: Budget,
    /// What it may do: the gate, the chat's grants, the approvals it waits on.
    pub(crate) permissions: Permissions,
    pub(crate) workspace: Option<Arc<Workspace>>,
    pub(crate) agents: AgentSetup,
    pub(crate) plans: Arc<dyn PlanBook>,
    /// The plan kept as a draft this turn: the turn's `plan_ready` names it.
    draft: Mutex<Option<StoredPlan>>,
    /// The hand-over a `switch_agent` call asked for; the first one wins.
    pub(crate) switch: OnceLock<AgentSwitch>,
    /// How it stops, when it stops early: the whole tree watches it.
    pub(crate) ending: Ending,
    pub(crate) emitter: Emitter,
    pub(crate) locks: NamedLocks,
    /// Model requests and tool executions in flight, across every depth: at most
    /// `max_parallel_per_turn`. A subtask waiting on its child holds none, so nesting
    /// cannot starve itself.
    slots: Semaphore,
    pub(crate) ids: Ids,
    thread_id: String,
    /// The answer's message id: the turn's name for tools that count per turn.
    pub(crate) message_id: String,
}

impl Turn {
    fn new(
        engine: &Engine,
        fit: &ContextFit,
        request: &TurnRequest,
        control: &TurnControl,
        sink: Arc<dyn EventSink>,
    ) -> Self {
        Self {
            placement: Placement::new(
                Arc::clone(&engine.home),
                Arc::clone(&engine.servers),
                (request.model.clone(), request.sampling),
                engine.limits,
            ),
            limits: fit.limits,
            kept: KeptResults::default(),
            accounts: Accounts::default(),
            budget: Budget::start(fit.limits),
            permissions: Permissions::new(
                Gate::new(request.mode, Arc::clone(&request.rules)),
                Arc::clone(&control.grants),
                Arc::clone(&control.approvals),
            ),
            workspace: request.workspace.clone(),
            agents: request.agents.clone(),
            plans: request
                .plans
                .clone()
                .unwrap_or_else(|| Arc::new(MemoryPlans::default())),
            draft: Mutex::new(None),
            switch: OnceLock::new(),
            ending: Ending::under(&control.cancel),
            emitter: Emitter::new(sink),
            locks: NamedLocks::default(),
            slots: Semaphore::new(fit.limits.max_parallel_per_turn.max(1)),
            ids: Ids::new(&request.message_id, &request.history),
            thread_id: request.thread_id.clone(),
            message_id: request.message_id.clone(),
        }
    }

    /// Keeps `plan` as the turn's draft.
    pub(crate) fn note_draft(&self, plan: StoredPlan) {
        *self.draft.lock().unwrap_or_else(PoisonError::into_inner) = Some(plan);
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.ending.is_stopping()
    }

    /// The slots one model request of the level `scope` holds: one of its server's
    /// first (said on the wire while it waits), then one of the turn's. Waiting for
    /// the server holds nothing of the turn's, so requests to other servers go on.
    /// `None` when the turn stops first.
    pub(crate) async fn model_slots(
        &self,
        scope: &Scope,
    ) -> Option<(OwnedSemaphorePermit, SemaphorePermit<'_>)> {
        let server = &scope.server;
        let held = match server.try_slot() {
            Some(permit) => permit,
            None => {
                let state = |waiting| {
                    Event::ServerState(ServerState {
                        parent_id: scope.parent_id.clone(),
                        depth: scope.depth,
                        server: server.name.clone(),
                        waiting,
                    })
                };
                self.emitter.emit(state(true));
                let permit = tokio::select! {
                    biased;
                    () = self.ending.stopped() => None,
                    permit = server.slot() => permit,
                };
                self.emitter.emit(state(false));
                permit?
            }
        };
        Some((held, self.slot().await?))
    }

    /// A slot for one model request or tool execution, once one is free; none when
    /// the turn stops first.
    pub(crate) async fn slot(&self) -> Option<SemaphorePermit<'_>> {
        tokio::select! {
            biased;
            () = self.ending.stopped() => None,
            permit = self.slots.acquire() => permit.ok(),
        }
    }

    /// Ends the turn because a budget ran out. The first reason wins; a turn the
    /// user already stopped stays cancelled.
    pub(crate) fn trip(&self, exceeded: BudgetExceeded) {
        if self.ending.trip(exceeded) {
            self.emitter.emit(Event::BudgetExceeded(exceeded));
        }
    }

    /// Ends the turn because something it depends on failed.
    pub(crate) fn fail(&self, error: ErrorEvent) {
        self.ending.fail(error);
    }

    fn finish(
        &self,
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
            Err(LevelFailure::Stopped) => match self.ending.reason() {
                Some(Stop::Budget(exceeded)) => (TurnStatus::BudgetExceeded, None, Some(*exceeded)),
                Some(Stop::Failed(error)) => (TurnStatus::Failed, Some(error.clone()), None),
                None => (TurnStatus::Cancelled, None, None),
            },
        };
        if let Some(error) = &error {
            self.emitter.emit(Event::Error(error.clone()));
        }
        let cut = root.cut.filter(|_| status == TurnStatus::Completed);
        let (text, reasoning, messages) = root.into_parts();
        let draft = self
            .draft
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if status == TurnStatus::Completed {
            let ready = match draft {
                Some(plan) => Some(PlanReady {
                    thread_id: self.thread_id.clone(),
                    message_id: self.message_id.clone(),
                    plan: if text.is_empty() {
                        plan.objective.clone()
                    } else {
                        text.clone()
                    },
                    plan_id: Some(plan.plan_id),
                    steps: Some(plan.steps),
                }),
                None if self.permissions.mode() == PermissionMode::Plan && !text.is_empty() => {
                    Some(PlanReady {
                        thread_id: self.thread_id.clone(),
                        message_id: self.message_id.clone(),
                        plan: text.clone(),
                        plan_id: None,
                        steps: None,
                    })
                }
                None => None,
            };
            if let Some(ready) = ready {
                self.emitter.emit(Event::PlanReady(ready));
            }
        }
        self.emitter.idle();
        let (usage, calls) = self.accounts.close();
        TurnOutcome {
            thread_id: self.thread_id.clone(),
            message_id: self.message_id.clone(),
            status,
            text,
            reasoning,
            messages,
            tree: ExecutionTree {
                cut,
                ..self.emitter.tree()
            },
            usage,
            calls,
            error,
            budget,
            switch: match status {
                TurnStatus::Completed => self.switch.get().cloned(),
                _ => None,
            },
            cut,
        }
    }
}

/// Ids unique within a turn. Tool-call ids come from the model when it gives usable
/// ones; the tree and the approvals need them unique, so empty or repeated ids
/// (some servers count from zero every answer) are replaced.
pub(crate) struct Ids {
    seen: Mutex<HashSet<String>>,
    calls: AtomicU64,
    approvals: AtomicU64,
    prefix: String,
}

impl Ids {
    fn new(message_id: &str, history: &[ChatMessage]) -> Self {
        let seen = history
            .iter()
            .flat_map(ChatMessage::tool_calls)
            .map(|call| call.id.clone())
            .collect();
        Self {
            seen: Mutex::new(seen),
            calls: AtomicU64::new(0),
            approvals: AtomicU64::new(0),
            prefix: message_id.to_owned(),
        }
    }

    pub(crate) fn claim_call(&self, proposed: &str) -> String {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if !proposed.is_empty() && seen.insert(proposed.to_owned()) {
            return proposed.to_owned();
        }
        loop {
            let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
            let id = format!("call_{n}");
            if seen.insert(id.clone()) {
                return id;
            }
        }
    }

    pub(crate) fn approval(&self) -> String {
        let n = self.approvals.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{}:approval:{n}", self.prefix)
    }
}
