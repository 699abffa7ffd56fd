//! The tools the engine answers itself, because they need the turn (its depth, its
//! budgets, the results it kept, the plans, the hand-over) rather than the world:
//! subtasks, plans, the hand-over, the tool groups, the pager.
//!
//! A new one is a module here with a type implementing [`EngineTool`], and one line
//! in [`registry::REGISTRY`]: the loop offers it where [`EngineTool::offer`] says,
//! resolves calls to it, gates them like any call, runs them beside others when it is
//! [`EngineTool::parallel_safe`], and keeps its names from the toolbelt. What it may
//! ask of the turn is [`TurnServices`]; it never sees the turn itself.

use async_trait::async_trait;
use cairn_protocol::describe::CallAbout;
use cairn_protocol::{ApprovalPreview, CallKind, Image, ToolCategory};
use serde_json::Value;

use crate::agent::{Agent, AgentSetup, AgentSwitch};
use crate::disclosure::{Disclosure, Offer};
use crate::results::{ReadArgs, Unreadable};
use crate::servers::ServerUnusable;
use crate::subtask::Finish;
use crate::switch::NoHandOver;

mod create_plan;
#[cfg(test)]
mod echo;
mod finish_subtask;
mod read_tool_result;
pub(crate) mod registry;
mod run_subtask;
mod switch_agent;
mod tool_groups;

/// Where a level sits, as an engine tool reads it to decide whether it is offered
/// there and answers calls made there. Facts of the level, not flags for any one
/// tool: each tool's rule is its own (`run_subtask`'s depth and profile, the
/// hand-over's root), written in its module.
#[derive(Clone, Copy)]
pub(crate) struct Place<'a> {
    pub depth: u32,
    /// How deep subtasks may nest.
    pub max_depth: u32,
    /// The profile the level runs as, whose rules say which tools it may have.
    pub agent: &'a Agent,
    /// The profiles the turn can reach, and whether the thread may be handed over.
    pub agents: &'a AgentSetup,
    /// Its model can call tools at all.
    pub can_call_tools: bool,
    /// The tools the level was limited to by name (a subtask given `tools`).
    pub named: Option<&'a [String]>,
    /// How a subtask hands its result back; `None` at the root.
    pub finish: Option<&'a Finish>,
    /// The tool groups, where some tools wait in them (known once it is laid out).
    pub disclosure: Option<&'a Disclosure>,
}

/// One call to an engine tool.
pub(crate) struct EngineCall<'a> {
    pub place: Place<'a>,
    /// The call's `tool_call_id`.
    pub id: &'a str,
    pub args: Value,
    /// The bytes its result may take in the model's context.
    pub room: usize,
}

/// What an engine tool may ask of the turn it runs in, at the level it was called.
#[async_trait]
pub(crate) trait TurnServices: Send + Sync {
    /// Runs a child level for `run_subtask` call `id`.
    async fn run_subtask(&self, id: &str, args: Value) -> Result<Success, CallFailure>;

    /// Makes (or fetches), checks, keeps and runs or drafts a plan for `create_plan`
    /// call `id`.
    async fn create_plan(&self, id: &str, args: Value) -> Result<Success, CallFailure>;

    /// The profiles the turn can reach.
    fn agents(&self) -> &AgentSetup;

    /// Asks for the thread to be handed over once this turn ends; the first request
    /// wins, and a later one gets back the profile the first one named.
    fn hand_over(&self, switch: AgentSwitch) -> Result<(), NoHandOver>;

    /// Whether the server `agent` runs on can be used now: a profile on another
    /// machine is only handed the thread while that machine answers.
    async fn server_answers(&self, agent: &crate::agent::Agent) -> Result<(), ServerUnusable>;

    /// A page of a result the turn cut, at most `room` bytes.
    fn read_kept(&self, args: &ReadArgs, room: usize) -> Result<String, Unreadable>;
}

/// Why a call to an engine tool cannot be answered at the level it was made, in the
/// tool's own words: the model reads them as the call's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub(crate) struct NotHere {
    pub why: String,
}

impl NotHere {
    pub fn because(why: impl Into<String>) -> Self {
        Self { why: why.into() }
    }
}

/// A tool the loop answers itself.
#[async_trait]
pub(crate) trait EngineTool: Send + Sync {
    /// Every name it may answer to; no toolbelt tool may take one.
    fn names(&self) -> &'static [&'static str];

    /// What a level at `place` offers of it, with its group; `None`: not offered
    /// there (a tool the layout shows itself, or one only called by name).
    fn offer(&self, place: &Place<'_>) -> Option<Offer>;

    /// Whether a call to `name` at `place` is this tool's: `None` when it is not,
    /// `Some(Err(why))` when it is but cannot be answered there (the model is told
    /// why).
    fn resolve(&self, place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>>;

    /// Whether its calls may run at the same time as their neighbours in a round.
    fn parallel_safe(&self) -> bool;

    /// What kind of call it makes, for front ends: `None`, a call with a result.
    fn kind(&self) -> Option<CallKind> {
        None
    }

    /// How the gate sees it: the engine's tools only read, and a subtask's own calls
    /// are gated on their own.
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    /// How a call reads to the user (see `Tool::describe`).
    fn describe(&self, name: &str, args: &Value) -> CallAbout {
        CallAbout::generic(name, args)
    }

    /// Whether its result is already sized to the room it was given (a page), and
    /// must not be cut again.
    fn sizes_itself(&self) -> bool {
        false
    }

    async fn run(
        &self,
        turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure>;
}

/// Why a call did not produce a result.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The call failed in a way the model can read and act on: its result says so.
    RespondToModel(String),
    /// The user denied it: the model reads why, the user's card says they did.
    Denied(String),
    /// The turn is stopping (Stop, or a budget ran out): the call is cancelled.
    Stopped,
}

impl From<String> for CallFailure {
    fn from(message: String) -> Self {
        Self::RespondToModel(message)
    }
}

/// Failures the model reads, in their own words, as its call's result.
macro_rules! read_by_the_model {
    ($($failure:ty),+ $(,)?) => {$(
        impl From<$failure> for CallFailure {
            fn from(failure: $failure) -> Self {
                Self::RespondToModel(failure.to_string())
            }
        }
    )+};
}

read_by_the_model!(
    crate::disclosure::NoSuchGroup,
    crate::subtask::BadSchema,
    crate::subtask::Unaccepted,
    NoHandOver,
    ServerUnusable,
    Unreadable,
);

impl CallFailure {
    /// A failure the model reads as its call's result, from a module the engine's
    /// tools do not see (who answers a call, what its arguments are).
    pub fn told(failure: impl std::fmt::Display) -> Self {
        Self::RespondToModel(failure.to_string())
    }
}

/// What a call that worked means for its level beyond its result.
#[derive(Debug, Default)]
pub(crate) enum Signal {
    #[default]
    None,
    Finished(Value),
    Switched,
}

/// A call that worked: what the model reads, and what the event carries.
pub(crate) struct Success {
    pub content: String,
    pub value: Value,
    pub signal: Signal,
    pub images: Vec<Image>,
    pub change: Option<ApprovalPreview>,
    /// Files changed besides `change`, which Restore can put back.
    pub changed: Vec<String>,
    /// It ran and failed by its own account (`ToolOutput::failed`).
    pub failed: bool,
}

impl Success {
    pub(crate) fn text(content: String) -> Self {
        Self {
            value: Value::String(content.clone()),
            content,
            signal: Signal::None,
            images: Vec::new(),
            change: None,
            changed: Vec::new(),
            failed: false,
        }
    }
}
