//! The turns running in this process: which threads answer, stopping one, and the
//! approvals they wait on.

use std::sync::Arc;

use cairn_core::LiveTurn;
use cairn_protocol::ApprovalDecision;
use cairn_protocol::desktop::PendingApproval;

use crate::{Runtime, RuntimeError};

impl Runtime {
    /// The threads with a turn running in this process.
    pub fn running(&self) -> Vec<String> {
        self.sessions.running()
    }

    pub fn is_running(&self, thread_id: &str) -> bool {
        self.sessions.get(thread_id).is_some()
    }

    /// The running turn of a thread, if it has one, to follow or to stop.
    pub fn live_turn(&self, thread_id: &str) -> Option<Arc<LiveTurn>> {
        self.sessions.get(thread_id)
    }

    /// Stops a thread's turn; its partial answer is kept.
    pub fn stop_turn(&self, thread_id: &str) -> Result<(), RuntimeError> {
        Ok(self.sessions.stop(thread_id)?)
    }

    /// Answers an approval, whichever turn asked for it.
    pub fn answer_approval(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), RuntimeError> {
        Ok(self.sessions.answer(approval_id, decision)?)
    }

    /// Every approval waiting for the user, with its thread.
    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        self.sessions
            .pending()
            .into_iter()
            .map(|(thread_id, request)| PendingApproval { thread_id, request })
            .collect()
    }
}
