//! What every level of one turn shares: where it runs, what it may do, what it
//! spends, how it stops and what it says. The loop, the calls it dispatches and the
//! children they start are functions over it (`level/run.rs`, `dispatch.rs`,
//! `child.rs`, `plan/`); its parts own their data and their methods
//! (`accounts.rs`, `ending.rs`, `ids.rs`, `keeps.rs`, `permissions.rs`, `placement.rs`,
//! `slots.rs`).

use std::sync::Arc;

use cairn_protocol::{BudgetExceeded, ErrorEvent, Event};

use super::accounts::Accounts;
use super::ending::Ending;
use super::ids::Ids;
use super::keeps::Keeps;
use super::permissions::Permissions;
use super::placement::Placement;
use super::request::{TurnControl, TurnRequest};
use super::slots::Slots;
use crate::agent::AgentSetup;
use crate::budget::Budget;
use crate::context::ContextFit;
use crate::events::{Emitter, EventSink};
use crate::gate::Gate;
use crate::limits::Limits;
use crate::locks::NamedLocks;
use crate::plan::MemoryPlans;
use crate::workspace::Workspace;

/// State shared by every level of one turn.
pub(crate) struct Turn {
    /// Where it runs: servers, the thread's model, fitting to a window.
    pub(crate) placement: Placement,
    /// The engine's limits fitted to the model's context window.
    pub(crate) limits: Limits,
    /// What the turn's model calls spent.
    pub(crate) accounts: Accounts,
    pub(crate) budget: Budget,
    /// What it may do: the gate, the chat's grants, the approvals it waits on.
    pub(crate) permissions: Permissions,
    pub(crate) workspace: Option<Arc<Workspace>>,
    pub(crate) agents: AgentSetup,
    /// What it keeps: whole results, plans, its draft, the hand-over asked for.
    pub(crate) keeps: Keeps,
    /// How it stops, when it stops early: the whole tree watches it.
    pub(crate) ending: Ending,
    pub(crate) emitter: Emitter,
    pub(crate) locks: NamedLocks,
    /// Model requests and tool executions in flight, across every depth.
    pub(crate) slots: Slots,
    /// Its thread's and answer's names, and ids unique within it.
    pub(crate) ids: Ids,
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
            accounts: Accounts::default(),
            budget: Budget::start(fit.limits),
            permissions: Permissions::new(
                Gate::new(request.mode, Arc::clone(&request.rules)),
                Arc::clone(&control.grants),
                Arc::clone(&control.approvals),
            ),
            workspace: request.workspace.clone(),
            agents: request.agents.clone(),
            keeps: Keeps::new(
                request
                    .plans
                    .clone()
                    .unwrap_or_else(|| Arc::new(MemoryPlans::default())),
            ),
            ending: Ending::under(&control.cancel),
            emitter: Emitter::new(sink),
            locks: NamedLocks::default(),
            slots: Slots::new(fit.limits.max_parallel_per_turn),
            ids: Ids::new(&request.thread_id, &request.message_id, &request.history),
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.ending.is_stopping()
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
