//! OS notifications when a turn finishes or needs approval while the user looks
//! elsewhere. A click opens the thread; an approval's Allow and Deny answer that one
//! approval without opening the window. What they say and what a click does is here;
//! how they are shown is one module per system: the freedesktop notification service
//! on Linux, toasts on Windows.

use cairn_protocol::desktop::{CommandError, PendingApproval};
use cairn_protocol::{ApprovalDecision, ToolApprovalRequest, TurnStatus};
use tauri::{AppHandle, Manager};

use crate::state::AppState;
use crate::window;

/// The action keys the notification offers (`default` is a click on its body).
const OPEN: &str = "default";
const ALLOW: &str = "allow";
const DENY: &str = "deny";

/// What a notification is about, and so what its actions do.
#[derive(Debug, Clone, PartialEq, Eq)]
enum About {
    Finished {
        thread_id: String,
    },
    Approval {
        thread_id: String,
        approval_id: String,
    },
}

impl About {
    fn thread_id(&self) -> &str {
        match self {
            Self::Finished { thread_id } | Self::Approval { thread_id, .. } => thread_id,
        }
    }
}

/// What one notification says and offers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Message {
    summary: String,
    body: String,
    /// `(key, label)` pairs, in the order the service shows them.
    actions: Vec<(&'static str, &'static str)>,
}

fn approval_message(title: &str, tool: &str, buttons: bool) -> Message {
    let summary = format!("{title} needs your approval");
    if !buttons {
        return Message {
            summary,
            body: format!("Cairn wants to use {tool}. Open the chat to allow or deny it."),
            actions: vec![(OPEN, "Open")],
        };
    }
    Message {
        summary,
        body: format!("Cairn wants to use {tool}. Allow it once, deny it, or open the chat."),
        actions: vec![(OPEN, "Open"), (ALLOW, "Allow"), (DENY, "Deny")],
    }
}

fn finished_message(title: &str, status: TurnStatus) -> Message {
    let body = match status {
        TurnStatus::Completed => "The reply is ready.",
        TurnStatus::BudgetExceeded => "The reply stopped at its budget; open the chat to continue.",
        TurnStatus::Cancelled => "The reply was stopped.",
        TurnStatus::Failed => "The reply failed; open the chat to see why.",
    };
    Message {
        summary: title.to_owned(),
        body: body.to_owned(),
        actions: vec![(OPEN, "Open")],
    }
}

/// What a click on `action` does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Response {
    Open(String),
    Answer {
        approval_id: String,
        decision: ApprovalDecision,
    },
}

#[cfg_attr(
    not(any(target_os = "linux", windows)),
    allow(dead_code, reason = "macOS shows no notifications yet (README)")
)]
fn response(about: &About, action: &str) -> Option<Response> {
    let decision = match action {
        OPEN => return Some(Response::Open(about.thread_id().to_owned())),
        ALLOW => ApprovalDecision::Allow,
        DENY => ApprovalDecision::Deny,
        _ => return None,
    };
    match about {
        About::Approval { approval_id, .. } => Some(Response::Answer {
            approval_id: approval_id.clone(),
            decision,
        }),
        About::Finished { .. } => None,
    }
}

pub fn approval_needed(
    app: &AppHandle,
    thread_id: &str,
    title: &str,
    request: &ToolApprovalRequest,
) {
    if !wanted(app) {
        return;
    }
    let about = About::Approval {
        thread_id: thread_id.to_owned(),
        approval_id: request.approval_id.clone(),
    };
    let (title, tool) = (title.to_owned(), request.name.clone());
    platform::show(app, about, move |buttons| {
        approval_message(&title, &tool, buttons)
    });
}

pub fn turn_finished(app: &AppHandle, thread_id: &str, title: &str, status: TurnStatus) {
    if !wanted(app) {
        return;
    }
    let about = About::Finished {
        thread_id: thread_id.to_owned(),
    };
    let message = finished_message(title, status);
    platform::show(app, about, move |_| message);
}

/// Takes away the approval notifications whose approval no longer waits (answered in
/// the window, or its turn ended): their buttons would answer nothing.
pub fn withdraw_answered(app: &AppHandle, pending: &[PendingApproval]) {
    let waiting = pending
        .iter()
        .map(|p| p.request.approval_id.clone())
        .collect();
    platform::withdraw(app, waiting);
}

/// How a press on Allow or Deny is answered (the app's approvals, given at start so
/// notifications need not know them).
pub type Answer = fn(&AppHandle, &str, ApprovalDecision) -> Result<(), CommandError>;

/// The notifications Cairn keeps track of; managed by the app.
pub struct Notifications {
    #[cfg_attr(
        not(any(target_os = "linux", windows)),
        allow(dead_code, reason = "macOS shows no notifications yet (README)")
    )]
    answer: Answer,
    #[cfg(any(target_os = "linux", windows))]
    inner: platform::Shown,
}

impl Notifications {
    pub fn new(answer: Answer) -> Self {
        Self {
            answer,
            #[cfg(any(target_os = "linux", windows))]
            inner: platform::Shown::default(),
        }
    }
}

/// Whether the approval a notification is about still waits: one answered while the
/// notification was on its way must not be shown (its buttons would answer nothing).
#[cfg_attr(
    not(any(target_os = "linux", windows)),
    allow(dead_code, reason = "macOS shows no notifications yet (README)")
)]
fn still_wanted(app: &AppHandle, about: &About) -> bool {
    let About::Approval { approval_id, .. } = about else {
        return true;
    };
    app.state::<AppState>().desk().is_ok_and(|desk| {
        desk.pending_approvals()
            .iter()
            .any(|p| p.request.approval_id == *approval_id)
    })
}

fn wanted(app: &AppHandle) -> bool {
    let enabled = app
        .state::<AppState>()
        .desk()
        .map(|desk| desk.settings().notifications)
        .unwrap_or(false);
    enabled && !window::is_watched(app)
}

#[cfg_attr(
    not(any(target_os = "linux", windows)),
    allow(dead_code, reason = "macOS shows no notifications yet (README)")
)]
fn respond(app: &AppHandle, response: Response) {
    match response {
        Response::Open(thread_id) => {
            window::summon(app);
            app.state::<AppState>()
                .tell(cairn_protocol::desktop::ShellEvent::OpenThread { thread_id });
        }
        Response::Answer {
            approval_id,
            decision,
        } => {
            // Answered from outside the window, it must still hear of it: its card
            // would otherwise keep offering the buttons.
            let answer = app.state::<Notifications>().answer;
            if let Err(err) = answer(app, &approval_id, decision) {
                app.state::<AppState>()
                    .tell(cairn_protocol::desktop::ShellEvent::Notice {
                        message: err.message,
                    });
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod freedesktop;
#[cfg(target_os = "linux")]
use freedesktop as platform;

#[cfg(windows)]
mod toast;
#[cfg(any(windows, test))]
mod toast_xml;
#[cfg(windows)]
use toast as platform;

#[cfg(not(any(target_os = "linux", windows)))]
mod platform {
    //! Other systems (macOS): no notification yet; the tray still shows the running
    //! count.
    use std::collections::HashSet;

    use tauri::AppHandle;

    use super::{About, Message};

    pub fn show(_: &AppHandle, _: About, _: impl FnOnce(bool) -> Message + Send + 'static) {}

    pub fn withdraw(_: &AppHandle, _: HashSet<String>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval() -> About {
        About::Approval {
            thread_id: "t1".into(),
            approval_id: "ap7".into(),
        }
    }

    #[test]
    fn allow_and_deny_answer_the_approval_the_notification_was_about() {
        assert_eq!(
            response(&approval(), "allow"),
            Some(Response::Answer {
                approval_id: "ap7".into(),
                decision: ApprovalDecision::Allow
            })
        );
        assert_eq!(
            response(&approval(), "deny"),
            Some(Response::Answer {
                approval_id: "ap7".into(),
                decision: ApprovalDecision::Deny
            })
        );
        assert_eq!(
            response(&approval(), "default"),
            Some(Response::Open("t1".into()))
        );
    }

    #[test]
    fn a_finished_turn_only_opens_and_unknown_actions_do_nothing() {
        let finished = About::Finished {
            thread_id: "t2".into(),
        };
        assert_eq!(
            response(&finished, "default"),
            Some(Response::Open("t2".into()))
        );
        assert_eq!(response(&finished, "allow"), None);
        assert_eq!(response(&approval(), "inline-reply"), None);
    }

    #[test]
    fn buttons_are_offered_only_where_the_service_shows_them() {
        let with = approval_message("Notes", "write_file", true);
        let keys: Vec<_> = with.actions.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["default", "allow", "deny"]);
        assert!(with.body.contains("write_file"), "{}", with.body);

        let without = approval_message("Notes", "write_file", false);
        assert_eq!(without.actions, [("default", "Open")]);
        assert!(without.body.contains("Open the chat to allow or deny it"));
        assert_eq!(without.summary, "Notes needs your approval");
    }
}
