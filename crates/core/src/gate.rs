//! The one permission gate every tool call passes, at every depth.
//!
//! call → deny rules → plan mode → ask rules → allow rules and this thread's grants
//! → the mode's default for the category. The first stage that speaks decides.

use std::sync::{Arc, Mutex, PoisonError};

use crate::tool::{Leave, Subject, Tool};
use crate::workspace::Workspace;
use cairn_protocol::{PermissionMode, ToolCategory};
use serde_json::Value;

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
    /// What it asks for beyond its sandbox; see `Tool::leaves_sandbox`.
    pub leaves: Option<Leave>,
}

/// What a call of `tool` with `args` acts on, as the gate reads it: a path as the
/// workspace reads it, so that a rule on `secrets/*` holds for the absolute path of
/// the same file too.
pub(crate) fn subjects(
    workspace: Option<&Workspace>,
    tool: &dyn Tool,
    args: &Value,
) -> Vec<Subject> {
    tool.subjects(args)
        .into_iter()
        .map(|subject| match (subject, workspace) {
            (Subject::Path(path), Some(workspace)) => Subject::Path(workspace.subject(&path)),
            (subject, _) => subject,
        })
        .collect()
}

/// What `decide` says of `tool` called with `args` in `workspace`, the call as the
/// gate sees it: for what the engine does on the model's behalf before any call (a
/// tiny model's files read with its request, its change asked whole).
pub(crate) fn judge<T>(
    workspace: &Workspace,
    tool: &dyn Tool,
    args: &Value,
    decide: impl FnOnce(&GateRequest<'_>) -> T,
) -> T {
    let subjects = subjects(Some(workspace), tool, args);
    decide(&GateRequest {
        tool: tool.name(),
        category: tool.category(),
        subjects: &subjects,
        leaves: tool.leaves_sandbox(args),
    })
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
            leaves,
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
        // Leaving the sandbox is the user's decision in every mode: only a rule (or
        // this chat's grant) naming that way out lets it run unasked.
        if let Some(leave) = leaves {
            return if covers_all(&allowed, &leave.rule_tool(tool), subjects) {
                GateDecision::Run
            } else {
                GateDecision::Ask
            };
        }
        if covers_all(&allowed, tool, subjects) {
            return GateDecision::Run;
        }
        match (category, self.mode) {
            (ToolCategory::Read, _) | (_, PermissionMode::Auto) => GateDecision::Run,
            (_, PermissionMode::Default | PermissionMode::Plan) => GateDecision::Ask,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(mode: PermissionMode, allow: &[&str], leaves: Option<Leave>) -> GateDecision {
        let mut rules = RuleSet::new();
        for rule in allow {
            rules.add(RuleList::Allow, Rule::parse(rule).unwrap());
        }
        let subjects = [Subject::Command("cargo build --release".into())];
        Gate::new(mode, Arc::new(rules)).decide(
            &GateRequest {
                tool: "run_command",
                category: ToolCategory::Execute,
                subjects: &subjects,
                leaves,
            },
            &SessionGrants::new(),
        )
    }

    #[test]
    fn leaving_the_sandbox_asks_in_every_mode_unless_a_rule_names_that_way_out() {
        use GateDecision::{Ask, Run};
        use PermissionMode::{Auto, Default};
        assert_eq!(
            decide(Auto, &[], None),
            Run,
            "inside the sandbox, auto runs"
        );
        assert_eq!(decide(Auto, &[], Some(Leave::Network)), Ask);
        assert_eq!(decide(Auto, &[], Some(Leave::Unconfined)), Ask);
        let plain = ["run_command(cargo build:*)"];
        assert_eq!(decide(Default, &plain, None), Run);
        assert_eq!(
            decide(Default, &plain, Some(Leave::Network)),
            Ask,
            "a rule for the command is not one for its network"
        );
        let network = ["run_command.network(cargo build:*)"];
        assert_eq!(decide(Auto, &network, Some(Leave::Network)), Run);
        assert_eq!(decide(Default, &network, Some(Leave::Network)), Run);
        assert_eq!(
            decide(Auto, &network, Some(Leave::Unconfined)),
            Ask,
            "network is not the whole way out"
        );
        assert_eq!(
            decide(
                Auto,
                &["run_command.unconfined(cargo build:*)"],
                Some(Leave::Unconfined)
            ),
            Run
        );
        assert!(matches!(
            decide(PermissionMode::Plan, &network, Some(Leave::Network)),
            GateDecision::Block(_)
        ));
    }
}
