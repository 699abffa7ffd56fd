//! A turn as the outside world sees it: what it is asked ([`TurnRequest`]), how it
//! is steered while it runs ([`TurnControl`]) and what it hands back
//! ([`TurnOutcome`]).

use std::sync::Arc;

use cairn_protocol::{
    BudgetExceeded, ChatMessage, Cut, Done, ErrorEvent, Event, ExecutionTree, ModelCall,
    PermissionMode, TurnStatus, Usage,
};
use tokio_util::sync::CancellationToken;

use super::placement::model_for;
use crate::agent::{AgentSetup, AgentSwitch};
use crate::approvals::Approvals;
use crate::events::Journal;
use crate::gate::SessionGrants;
use crate::model::Sampling;
use crate::plan::PlanBook;
use crate::rules::RuleSet;
use crate::servers::ModelServer;
use crate::toolbelt::Toolbelt;
use crate::workspace::Workspace;

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
    pub(super) fn model_for_root(&self, server: &ModelServer) -> (String, Sampling) {
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
