//! What a turn may do: its mode and rules (the gate), what the user allowed for the
//! whole chat (grants), and the approvals it waits on; and what the user's answer to
//! one of them comes to for the call that asked.

use std::sync::Arc;

use cairn_protocol::{ApprovalDecision, PermissionMode, ToolApprovalRequest};

use crate::approvals::{ApprovalError, Approvals, Resolution, Ticket};
use crate::engine_tools::CallFailure;
use crate::gate::{Gate, GateDecision, GateRequest, SessionGrants};

pub(crate) struct Permissions {
    gate: Gate,
    grants: Arc<SessionGrants>,
    approvals: Arc<Approvals>,
}

impl Permissions {
    pub(crate) fn new(gate: Gate, grants: Arc<SessionGrants>, approvals: Arc<Approvals>) -> Self {
        Self {
            gate,
            grants,
            approvals,
        }
    }

    pub(crate) fn mode(&self) -> PermissionMode {
        self.gate.mode()
    }

    /// Whether a call runs, is blocked, or asks the user first.
    pub(crate) fn decide(&self, request: &GateRequest<'_>) -> GateDecision {
        self.gate.decide(request, &self.grants)
    }

    /// Puts the question to the user (the window, the CLI, a notification).
    pub(crate) fn ask(&self, request: ToolApprovalRequest) -> Result<Ticket, ApprovalError> {
        self.approvals.ask(request)
    }

    /// What the user's answer comes to for the call to `tool` that asked: it runs (and
    /// "for this chat" keeps `grants`), or the model reads why not.
    pub(crate) fn settle(
        &self,
        resolution: Resolution,
        tool: &str,
        grants: &[String],
    ) -> Result<(), CallFailure> {
        match (resolution.decision, resolution.reason) {
            (ApprovalDecision::Allow, _) => Ok(()),
            (ApprovalDecision::AllowSession, _) => {
                for grant in grants {
                    if let Err(err) = self.grants.grant(grant) {
                        // A tool that offers an unreadable grant still gets this one call.
                        tracing::warn!(%err, "a session grant could not be kept");
                    }
                }
                Ok(())
            }
            (ApprovalDecision::Deny, Some(reason)) => Err(CallFailure::Denied(format!(
                "not run: {reason}. Continue without it, or say what you would have done."
            ))),
            (ApprovalDecision::Deny, None) => Err(CallFailure::Denied(format!(
                "the user denied this call to `{tool}`. Do not retry it; adapt, or ask the user \
                 what they want."
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleSet;

    use super::*;

    fn answered(decision: ApprovalDecision, reason: Option<&str>) -> Resolution {
        Resolution {
            decision,
            reason: reason.map(str::to_owned),
        }
    }

    fn failure(settled: Result<(), CallFailure>) -> String {
        match settled {
            Err(CallFailure::Denied(why)) => why,
            other => panic!("not a denial: {other:?}"),
        }
    }

    #[test]
    fn an_answer_runs_the_call_keeps_its_grants_or_tells_the_model_why_not() {
        let grants = Arc::new(SessionGrants::new());
        let permissions = Permissions::new(
            Gate::new(PermissionMode::Default, Arc::new(RuleSet::new())),
            Arc::clone(&grants),
            Approvals::new(),
        );
        let offered = ["run_command(cargo test:*)".to_owned()];
        let allow = answered(ApprovalDecision::Allow, None);
        assert!(permissions.settle(allow, "run_command", &offered).is_ok());
        assert!(grants.list().is_empty(), "allowed once, nothing kept");

        let for_chat = answered(ApprovalDecision::AllowSession, None);
        assert!(
            permissions
                .settle(for_chat, "run_command", &offered)
                .is_ok()
        );
        assert_eq!(grants.list(), offered);

        let denied = answered(ApprovalDecision::Deny, None);
        assert_eq!(
            failure(permissions.settle(denied, "run_command", &offered)),
            "the user denied this call to `run_command`. Do not retry it; adapt, or ask the \
             user what they want."
        );
        let denied = answered(ApprovalDecision::Deny, Some("the tests are slow"));
        assert_eq!(
            failure(permissions.settle(denied, "run_command", &offered)),
            "not run: the tests are slow. Continue without it, or say what you would have done."
        );
    }
}
