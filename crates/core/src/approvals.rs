//! Approvals waiting on the user, keyed by id.
//!
//! ask → (pending, listed for late front ends) → answer by id | human detached → the
//! waiting call resumes. Each answer finds its own request, whatever the order;
//! nothing waits on a shared channel that could drop an answer it did not expect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use cairn_protocol::{ApprovalDecision, ToolApprovalRequest};
use tokio::sync::oneshot;

/// The outcome of an ask, and why when it was not the user's own answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub decision: ApprovalDecision,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no approval `{0}` is pending: it was answered already or its turn ended")]
    Unknown(String),
    #[error("approval id `{0}` is already pending")]
    Duplicate(String),
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<String, Pending>,
    registered: u64,
    /// Set when no human can answer any more; every ask then resolves to deny.
    detached: Option<String>,
}

#[derive(Debug)]
struct Pending {
    /// Registration order, so the pending list reads oldest first.
    order: u64,
    request: ToolApprovalRequest,
    reply: oneshot::Sender<Resolution>,
}

/// The approvals of one running turn (and its subtasks).
#[derive(Debug, Default)]
pub struct Approvals {
    state: Mutex<State>,
}

/// A registered ask. Dropping it (the call was cancelled) withdraws the request.
#[derive(Debug)]
pub struct Ticket {
    approvals: Arc<Approvals>,
    id: String,
    reply: Option<oneshot::Receiver<Resolution>>,
    resolved: Option<Resolution>,
}

impl Ticket {
    pub async fn resolution(mut self) -> Resolution {
        if let Some(resolved) = self.resolved.take() {
            return resolved;
        }
        let Some(reply) = self.reply.take() else {
            return deny("the approval was withdrawn");
        };
        reply
            .await
            .unwrap_or_else(|_| deny("the approval was withdrawn"))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.approvals.lock().pending.remove(&self.id);
    }
}

fn deny(reason: &str) -> Resolution {
    Resolution {
        decision: ApprovalDecision::Deny,
        reason: Some(reason.to_owned()),
    }
}

impl Approvals {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Registers a request before it is shown, so an answer can never outrun it.
    pub fn ask(self: &Arc<Self>, request: ToolApprovalRequest) -> Result<Ticket, ApprovalError> {
        let id = request.approval_id.clone();
        let mut state = self.lock();
        if state.pending.contains_key(&id) {
            return Err(ApprovalError::Duplicate(id));
        }
        let mut ticket = Ticket {
            approvals: Arc::clone(self),
            id: id.clone(),
            reply: None,
            resolved: None,
        };
        if let Some(reason) = &state.detached {
            ticket.resolved = Some(deny(reason));
            return Ok(ticket);
        }
        let (reply, receiver) = oneshot::channel();
        ticket.reply = Some(receiver);
        state.registered += 1;
        let order = state.registered;
        state.pending.insert(
            id,
            Pending {
                order,
                request,
                reply,
            },
        );
        Ok(ticket)
    }

    /// The user's answer to one request.
    pub fn answer(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), ApprovalError> {
        let pending = self
            .lock()
            .pending
            .remove(approval_id)
            .ok_or_else(|| ApprovalError::Unknown(approval_id.to_owned()))?;
        // The waiting call may have been cancelled just now; then nobody needs it.
        let _ = pending.reply.send(Resolution {
            decision,
            reason: None,
        });
        Ok(())
    }

    pub fn is_pending(&self, approval_id: &str) -> bool {
        self.lock().pending.contains_key(approval_id)
    }

    /// What is waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<ToolApprovalRequest> {
        let state = self.lock();
        let mut pending: Vec<_> = state.pending.values().collect();
        pending.sort_by_key(|pending| pending.order);
        pending
            .iter()
            .map(|pending| pending.request.clone())
            .collect()
    }

    /// No human can answer any more (headless, stdin closed): deny what is pending
    /// and every later ask, telling the model why.
    pub fn detach_human(&self, reason: impl Into<String>) {
        let reason = reason.into();
        let mut state = self.lock();
        for (_, pending) in state.pending.drain() {
            let _ = pending.reply.send(deny(&reason));
        }
        state.detached = Some(reason);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
