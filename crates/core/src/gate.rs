//! The one permission gate every tool call passes, at every depth.
//!
//! call → deny rules → plan mode → ask rules → allow rules and this thread's grants
//! → the mode's default for the category. The first stage that speaks decides.

use std::sync::{Arc, Mutex, PoisonError};

use crate::tool::Subject;
use cairn_protocol::{PermissionMode, ToolCategory};

use crate::rules::{Rule, RuleError, RuleList, RuleSet, covers_all};

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
    /// What rules match against (paths, commands, addresses); see `Tool::subjects`.
    pub subjects: &'a [Subject],
}

/// "Allow for this chat" answers given in one thread, kept (as rules) for its later
/// turns while the app runs.
#[derive(Debug, Default)]
pub struct SessionGrants {
    granted: Mutex<Vec<Rule>>,
}

impl SessionGrants {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn grant(&self, rule: &str) -> Result<(), RuleError> {
        let rule = Rule::parse(rule)?;
        let mut granted = self.lock();
        if !granted.contains(&rule) {
            granted.push(rule);
        }
        Ok(())
    }

    /// The grants, in the order given.
    pub fn list(&self) -> Vec<String> {
        self.lock()
            .iter()
            .map(|rule| rule.as_str().to_owned())
            .collect()
    }

    fn snapshot(&self) -> Vec<Rule> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.granted.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The gate of one turn: the thread's mode (fixed for the turn) and the rules.
#[derive(Debug)]
pub struct Gate {
    mode: PermissionMode,
    rules: Arc<RuleSet>,
}

impl Gate {
    pub fn new(mode: PermissionMode, rules: Arc<RuleSet>) -> Self {
        Self { mode, rules }
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    pub fn decide(&self, request: &GateRequest<'_>, grants: &SessionGrants) -> GateDecision {
        let GateRequest {
            tool,
            category,
            subjects,
        } = *request;
        if let Some(rule) = self.rules.any_match(RuleList::Deny, tool, subjects) {
            return GateDecision::Block(format!(
                "the user's rule `{rule}` refuses this call to `{tool}`. Do not retry it; find \
                 another way or tell the user."
            ));
        }
        if self.mode == PermissionMode::Plan && category != ToolCategory::Read {
            return GateDecision::Block(format!(
                "`{tool}` is a {category} tool and this thread is in plan mode, where only \
                 reading is allowed. Do not retry it: finish your plan, and the user can \
                 switch modes to carry it out."
            ));
        }
        if self
            .rules
            .any_match(RuleList::Ask, tool, subjects)
            .is_some()
        {
            return GateDecision::Ask;
        }
        let mut allowed = self.rules.rules(RuleList::Allow).to_vec();
        allowed.extend(grants.snapshot());
        if covers_all(&allowed, tool, subjects) {
            return GateDecision::Run;
        }
        match (category, self.mode) {
            (ToolCategory::Read, _) | (_, PermissionMode::Auto) => GateDecision::Run,
            (_, PermissionMode::Default | PermissionMode::Plan) => GateDecision::Ask,
        }
    }
}
