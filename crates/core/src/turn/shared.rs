//! What every level of one turn shares: where it runs, what it may do, what it
//! spends, how it stops and what it says. The loop, the calls it dispatches and the
//! children they start are functions over it (`level/run.rs`, `dispatch.rs`,
//! `child.rs`, `plan/`); its parts own their data and their methods
//! (`accounts.rs`, `ending.rs`, `permissions.rs`, `placement.rs`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cairn_protocol::{BudgetExceeded, ChatMessage, ErrorEvent, Event, ServerState};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

use super::accounts::Accounts;
use super::ending::Ending;
use super::permissions::Permissions;
use super::placement::Placement;
use super::request::{TurnControl, TurnRequest};
use crate::agent::{AgentSetup, AgentSwitch};
use crate::budget::Budget;
use crate::context::ContextFit;
use crate::events::{Emitter, EventSink};
use crate::gate::Gate;
use crate::level::Scope;
use crate::limits::Limits;
use crate::locks::NamedLocks;
use crate::plan::{MemoryPlans, PlanBook, StoredPlan};
use crate::results::KeptResults;
use crate::workspace::Workspace;

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
    pub(crate) thread_id: String,
    /// The answer's message id: the turn's name for tools that count per turn.
    pub(crate) message_id: String,
}

impl Turn {
    pub(super) fn new(
        placement: Placement,
        fit: &ContextFit,
        request: &TurnRequest,
        control: &TurnControl,
        sink: Arc<dyn EventSink>,
    ) -> Self {
        Self {
            placement,
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

    /// The plan kept as the turn's draft, taken as the turn ends.
    pub(super) fn take_draft(&self) -> Option<StoredPlan> {
        self.draft
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
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
