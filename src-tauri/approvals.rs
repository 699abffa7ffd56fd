//! Answering an approval, from the window or from its notification, and keeping both
//! in step with what still waits.

use cairn_protocol::ApprovalDecision;
use cairn_protocol::desktop::{CommandError, ShellEvent};
use tauri::{AppHandle, Manager};

use crate::desk::Desk;
use crate::notify;
use crate::state::AppState;

/// Answers one approval, from the window or from its notification, and tells the
/// window which: the card must stop asking even while its call runs on.
pub fn answer(
    app: &AppHandle,
    approval_id: &str,
    decision: ApprovalDecision,
) -> Result<(), CommandError> {
    let state = app.state::<AppState>();
    let desk = state.desk()?;
    desk.answer_approval(approval_id, decision)?;
    state.tell(ShellEvent::Answered {
        approval_id: approval_id.to_owned(),
    });
    changed(app, desk);
    Ok(())
}

/// Approvals were asked or answered: the window hears which still wait, and the
/// notifications of the ones that do not are taken away.
pub fn changed(app: &AppHandle, desk: &Desk) {
    let approvals = desk.pending_approvals();
    notify::withdraw_answered(app, &approvals);
    app.state::<AppState>()
        .tell(ShellEvent::Pending { approvals });
}
