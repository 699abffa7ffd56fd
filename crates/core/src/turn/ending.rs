//! How a turn stops before its root level finishes on its own: the user stops it, a
//! budget runs out, or something it depends on fails. The whole tree watches one
//! cancellation token; the first reason given is the one the turn ends with.

use std::sync::OnceLock;

use cairn_protocol::{BudgetExceeded, ErrorEvent};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Why a turn is stopping before its root level finished on its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    Budget(BudgetExceeded),
    Failed(ErrorEvent),
}

pub(crate) struct Ending {
    /// Cancelled by the user (its parent, the turn's control), a tripped budget or a
    /// failure.
    cancel: CancellationToken,
    reason: OnceLock<Stop>,
}

impl Ending {
    /// An ending that also comes when `stopped_by` (the user's Stop) is cancelled.
    pub(crate) fn under(stopped_by: &CancellationToken) -> Self {
        Self {
            cancel: stopped_by.child_token(),
            reason: OnceLock::new(),
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes once the turn is stopping.
    pub(crate) fn stopped(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// The token a tool's call watches.
    pub(crate) fn token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Stops the turn because a budget ran out; whether that is the reason it ends
    /// with (none was given before, and the user had not stopped it).
    pub(crate) fn trip(&self, exceeded: BudgetExceeded) -> bool {
        let first = !self.is_stopping() && self.reason.set(Stop::Budget(exceeded)).is_ok();
        self.cancel.cancel();
        first
    }

    /// Stops the turn because something it depends on failed, unless it is stopping
    /// already.
    pub(crate) fn fail(&self, error: ErrorEvent) {
        if !self.is_stopping() {
            let _ = self.reason.set(Stop::Failed(error));
        }
        self.cancel.cancel();
    }

    /// Why it stopped, when not (only) by the user.
    pub(crate) fn reason(&self) -> Option<&Stop> {
        self.reason.get()
    }
}

#[cfg(test)]
mod tests {
    use cairn_protocol::{BudgetReason, ErrorKind};

    use super::*;

    fn exceeded(reason: BudgetReason) -> BudgetExceeded {
        BudgetExceeded {
            reason,
            limit: 1,
            observed: 2,
        }
    }

    #[test]
    fn the_first_reason_stands_and_a_users_stop_keeps_none() {
        let user = CancellationToken::new();
        let ending = Ending::under(&user);
        assert!(ending.trip(exceeded(BudgetReason::ToolCalls)));
        assert!(!ending.trip(exceeded(BudgetReason::WallClock)));
        ending.fail(ErrorEvent {
            message: "late".into(),
            kind: ErrorKind::Provider,
        });
        assert_eq!(
            ending.reason(),
            Some(&Stop::Budget(exceeded(BudgetReason::ToolCalls)))
        );

        let user = CancellationToken::new();
        let ending = Ending::under(&user);
        user.cancel();
        assert!(ending.is_stopping(), "the user's stop reaches the turn");
        assert!(!ending.trip(exceeded(BudgetReason::Tokens)));
        assert_eq!(ending.reason(), None, "stopped by the user: cancelled");
    }
}
