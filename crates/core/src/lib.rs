//! The engine of Cairn: one agent loop at every depth.
//!
//! A [`TurnRequest`] runs on an [`Engine`]: the root level streams a model answer,
//! dispatches the tool calls it makes (every one through the permission [`Gate`]),
//! recurses into subtasks for `run_subtask`, and emits the event wire as it goes.
//! One [`Budget`] bounds the whole tree; one cancellation token stops it.
//!
//! This crate knows nothing of Tauri, terminals, databases or model servers: front
//! ends drive it through [`TurnControl`] and consume its events through an
//! [`EventSink`]; it owns the ports it is driven through, [`model::ModelClient`] and
//! [`tool::Tool`] (with the [`workspace::Workspace`] a call acts in), which the
//! providers and tools crates implement.

pub mod agent;
mod approvals;
mod budget;
mod callee;
mod child;
mod clip;
mod context;
mod copied;
pub mod disclosure;
mod dispatch;
mod engine_tools;
mod events;
mod gate;
pub mod history;
mod level;
mod limits;
mod locks;
pub mod model;
mod named_files;
mod pending;
pub mod plan;
mod port;
pub mod prompt;
mod repeats;
pub mod repetition;
mod results;
mod round;
pub mod rules;
mod schema;
pub mod servers;
mod session;
pub mod shell;
pub mod subtask;
pub mod switch;
pub mod tool;
mod toolbelt;
mod turn;
mod unasked;
mod whole_file;
pub mod workspace;

pub use agent::{Agent, AgentRole, AgentSetup, AgentSwitch, ToolSelection};
pub use approvals::{ApprovalError, Approvals, Resolution, Ticket};
pub use budget::Budget;
pub use context::ContextFit;
pub use events::{EventSink, Journal, TreeBuilder};
pub use gate::{Gate, GateDecision, GateRequest, SessionGrants};
pub use limits::{Limits, LimitsError};
pub use port::PortError;
pub use results::{MAX_KEPT_BYTES, READ_TOOL_RESULT};
pub use rules::{Rule, RuleError, RuleList, RuleSet};
pub use servers::{ModelServer, NoServers, ServerDirectory};
pub use session::{
    Claim, CommitError, Handover, LiveTurn, NextTurn, NoPersistence, SessionError, Sessions,
    TurnPersistence,
};
pub use toolbelt::{Toolbelt, ToolbeltError};
pub use turn::{Engine, RootView, ToolsShown, TurnControl, TurnOutcome, TurnRequest};
