//! The one permission gate every tool call passes, at every depth.
//!
//! call → grant already given for this thread? → mode × category → run / ask / block.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use cairn_protocol::{PermissionMode, ToolCategory};
use serde_json::Value;

/// What the gate decided for one call, with the reason a refusal gives the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    Run,
    Ask,
    Block(String),
}

/// A call as the gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    pub tool: &'a str,
    pub category: ToolCategory,
    pub args: &'a Value,
}

/// "Allow for this chat" answers given in one thread, kept for its later turns.
#[derive(Debug, Default)]
pub struct SessionGrants {
    granted: Mutex<HashSet<String>>,
}

impl SessionGrants {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn grant(&self, key: impl Into<String>) {
        self.lock().insert(key.into());
    }

    pub fn contains(&self, key: &str) -> bool {
        self.lock().contains(key)
    }

    /// The grants, sorted, for display.
    pub fn list(&self) -> Vec<String> {
        let mut keys: Vec<_> = self.lock().iter().cloned().collect();
        keys.sort();
        keys
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.granted.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The gate of one thread's turn: its mode, fixed for the turn, and its grants.
#[derive(Debug)]
pub struct Gate {
    mode: PermissionMode,
}

impl Gate {
    pub fn new(mode: PermissionMode) -> Self {
        Self { mode }
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    pub fn decide(&self, request: &GateRequest<'_>, grants: &SessionGrants) -> GateDecision {
        match (request.category, self.mode) {
            (ToolCategory::Read, _) => GateDecision::Run,
            (_, PermissionMode::Auto) => GateDecision::Run,
            (category, PermissionMode::Plan) => GateDecision::Block(format!(
                "`{}` is a {category} tool and this thread is in plan mode, where only reading \
                 is allowed. Do not retry it: finish your plan, and the user can switch modes \
                 to carry it out.",
                request.tool
            )),
            (_, PermissionMode::Default) => {
                if grants.contains(&self.session_grant(request)) {
                    GateDecision::Run
                } else {
                    GateDecision::Ask
                }
            }
        }
    }

    /// What "allow for this chat" grants for this call: the tool, for now.
    pub fn session_grant(&self, request: &GateRequest<'_>) -> String {
        request.tool.to_owned()
    }
}
