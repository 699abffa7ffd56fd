//! The wire types every part of Cairn shares: the event stream a turn emits, the
//! messages a front end sends back, the model conversation a thread stores, and the
//! execution-tree snapshot that brings nested tool cards back after a restart.
//!
//! This crate is serde only and builds for `wasm32-unknown-unknown`: the Leptos UI
//! imports it. Field names are a contract (see docs/design.md, "The event wire"): add fields, never
//! rename them.

pub mod accounting;
pub mod agent;
pub mod chat;
pub mod client;
pub mod describe;
pub mod desktop;
mod dialect;
pub mod event;
pub mod llm;
pub mod permission;
pub mod plan;
pub mod restore;
pub mod thread;
pub mod tree;

pub use accounting::{
    AnswerUsage, CallTotals, LoggedCall, ModelCall, ModelPrice, ServerTotals, ThreadUsage, cost_of,
    split_by_server,
};
pub use agent::{AgentInfo, AgentSource};
pub use chat::{ChatMessage, Image, ToolCall, ToolSpec};
pub use client::{ApprovalResponse, ClientMessage};
pub use dialect::{Dialect, UnknownDialect};
pub use event::{
    AgentState, AgentStateKind, AgentSwitched, ApprovalPreview, BudgetExceeded, BudgetReason,
    CallKind, Chunk, Cut, Done, ErrorEvent, ErrorKind, Event, PlanReady, PromptCut, PromptProgress,
    RUN_SUBTASK, Reasoning, ServerState, ToolApprovalRequest, ToolCallStatus, ToolCallUpdate,
    TurnStatus, Usage, thousands,
};
pub use llm::{LLM_KEYS, LlmError, LlmParams, LlmSource, LlmView};
pub use permission::{ApprovalDecision, PermissionMode, RuleList, ToolCategory};
pub use plan::{
    CREATE_PLAN, ExecutionMode, PlanCreated, PlanReview, PlanStep, StoredPlan, Verdict,
};
pub use restore::{FileRestore, RestoreAction, RestorePlan};
pub use thread::{Handover, MessageStatus, MessageView, Role, SearchHit, SnippetPart, ThreadInfo};
pub use tree::{
    ExecutionTree, ExecutionTreeNode, PREVIEW_MAX_CHARS, Piece, TimelineBuilder, TimelineEntry,
    TreePlan, pieces, preview, preview_cuts,
};
