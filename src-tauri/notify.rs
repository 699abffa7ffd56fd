//! OS notifications when a turn finishes or needs approval while the user looks
//! elsewhere. A click opens the thread; an approval's Allow and Deny answer that one
//! approval without opening the window.
//!
//! On Linux they go to the notification service (`org.freedesktop.Notifications`)
//! over the session bus GTK already holds, and every call, reply and signal is
//! handled on the main loop. That one thread is the ordering the record of what is
//! on screen relies on: an approval answered in the window withdraws its
//! notification even when the service has not yet said which id it got.

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
    not(target_os = "linux"),
    allow(
        dead_code,
        reason = "only Linux shows notifications so far (README, Windows)"
    )
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
        not(target_os = "linux"),
        allow(
            dead_code,
            reason = "only Linux shows notifications so far (README, Windows)"
        )
    )]
    answer: Answer,
    #[cfg(target_os = "linux")]
    inner: platform::Shown,
}

impl Notifications {
    pub fn new(answer: Answer) -> Self {
        Self {
            answer,
            #[cfg(target_os = "linux")]
            inner: platform::Shown::default(),
        }
    }
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
    not(target_os = "linux"),
    allow(
        dead_code,
        reason = "only Linux shows notifications so far (README, Windows)"
    )
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
mod platform {
    use std::collections::{HashMap, HashSet};
    use std::sync::{Mutex, OnceLock, PoisonError};

    use gio::glib::{self, ToVariant, Variant};
    use gio::{DBusCallFlags, DBusConnection, DBusSignalFlags};
    use tauri::{AppHandle, Manager};

    use super::{About, Message, Notifications, respond, response};

    const SERVICE: &str = "org.freedesktop.Notifications";
    const PATH: &str = "/org/freedesktop/Notifications";
    /// How long a call to the service may take before it counts as gone.
    const TIMEOUT_MS: i32 = 5_000;

    /// The session bus, and what is on screen by the id the service gave it.
    #[derive(Default)]
    pub struct Shown {
        connection: OnceLock<Option<DBusConnection>>,
        on_screen: Mutex<HashMap<u32, About>>,
    }

    impl Shown {
        fn on_screen(&self) -> std::sync::MutexGuard<'_, HashMap<u32, About>> {
            self.on_screen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// The bus, connected and listening on first use. Main thread only: the signals
    /// are delivered to the context that subscribed.
    fn connection(app: &AppHandle) -> Option<DBusConnection> {
        let shown = &app.state::<Notifications>().inner;
        shown
            .connection
            .get_or_init(|| {
                let connection =
                    match gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE) {
                        Ok(connection) => connection,
                        Err(err) => {
                            tracing::warn!(%err, "no session bus: no notifications");
                            return None;
                        }
                    };
                listen(app, &connection);
                Some(connection)
            })
            .clone()
    }

    fn listen(app: &AppHandle, connection: &DBusConnection) {
        let clicked = app.clone();
        // Kept for the app's life: the subscription ends with the connection.
        let _ = connection.signal_subscribe(
            Some(SERVICE),
            Some(SERVICE),
            Some("ActionInvoked"),
            Some(PATH),
            None,
            DBusSignalFlags::NONE,
            move |_, _, _, _, _, params| {
                let Some((id, action)) = params.get::<(u32, String)>() else {
                    return;
                };
                let about = clicked
                    .state::<Notifications>()
                    .inner
                    .on_screen()
                    .remove(&id);
                if let Some(response) = about.and_then(|about| response(&about, &action)) {
                    respond(&clicked, response);
                }
            },
        );
        let closed = app.clone();
        let _ = connection.signal_subscribe(
            Some(SERVICE),
            Some(SERVICE),
            Some("NotificationClosed"),
            Some(PATH),
            None,
            DBusSignalFlags::NONE,
            move |_, _, _, _, _, params| {
                if let Some((id, _reason)) = params.get::<(u32, u32)>() {
                    closed
                        .state::<Notifications>()
                        .inner
                        .on_screen()
                        .remove(&id);
                }
            },
        );
    }

    /// Shows a notification; `message` is told whether the service shows buttons.
    pub fn show(
        app: &AppHandle,
        about: About,
        message: impl FnOnce(bool) -> Message + Send + 'static,
    ) {
        let app = app.clone();
        let on_main = app.clone();
        let ran = on_main.run_on_main_thread(move || {
            let Some(connection) = connection(&app) else {
                return;
            };
            glib::MainContext::default().spawn_local(async move {
                let buttons = offers_actions(&connection).await;
                match notify(&connection, &message(buttons)).await {
                    Ok(id) => keep(&app, &connection, id, about),
                    Err(err) => tracing::warn!(%err, "the notification could not be shown"),
                }
            });
        });
        if let Err(err) = ran {
            tracing::warn!(%err, "the notification could not be sent to the main loop");
        }
    }

    /// Remembers a shown notification, unless its approval was answered while the
    /// service was still answering `Notify`: then it goes at once.
    fn keep(app: &AppHandle, connection: &DBusConnection, id: u32, about: About) {
        if let About::Approval { approval_id, .. } = &about {
            let waiting = app
                .state::<crate::state::AppState>()
                .desk()
                .is_ok_and(|desk| {
                    desk.pending_approvals()
                        .iter()
                        .any(|p| p.request.approval_id == *approval_id)
                });
            if !waiting {
                close(connection, id);
                return;
            }
        }
        app.state::<Notifications>()
            .inner
            .on_screen()
            .insert(id, about);
    }

    pub fn withdraw(app: &AppHandle, waiting: HashSet<String>) {
        let app = app.clone();
        let on_main = app.clone();
        let _ = on_main.run_on_main_thread(move || {
            let shown = &app.state::<Notifications>().inner;
            let Some(Some(connection)) = shown.connection.get() else {
                return;
            };
            let mut on_screen = shown.on_screen();
            on_screen.retain(|id, about| match about {
                About::Approval { approval_id, .. } if !waiting.contains(approval_id) => {
                    close(connection, *id);
                    false
                }
                _ => true,
            });
        });
    }

    /// A service that does not list `actions` would drop the buttons silently, and
    /// the text must then say where to answer.
    async fn offers_actions(connection: &DBusConnection) -> bool {
        let reply = connection
            .call_future(
                Some(SERVICE),
                PATH,
                SERVICE,
                "GetCapabilities",
                None,
                None,
                DBusCallFlags::NONE,
                TIMEOUT_MS,
            )
            .await;
        reply
            .ok()
            .and_then(|reply| reply.get::<(Vec<String>,)>())
            .is_some_and(|(capabilities,)| capabilities.iter().any(|c| c == "actions"))
    }

    async fn notify(connection: &DBusConnection, message: &Message) -> Result<u32, glib::Error> {
        let actions: Vec<&str> = message
            .actions
            .iter()
            .flat_map(|(key, label)| [*key, *label])
            .collect();
        let hints: HashMap<&str, Variant> =
            HashMap::from([("category", "im.received".to_variant())]);
        let args = (
            "Cairn",
            0_u32,
            "",
            message.summary.as_str(),
            message.body.as_str(),
            actions,
            hints,
            -1_i32,
        )
            .to_variant();
        let reply = connection
            .call_future(
                Some(SERVICE),
                PATH,
                SERVICE,
                "Notify",
                Some(&args),
                None,
                DBusCallFlags::NONE,
                TIMEOUT_MS,
            )
            .await?;
        Ok(reply.get::<(u32,)>().map_or(0, |(id,)| id))
    }

    fn close(connection: &DBusConnection, id: u32) {
        connection.call(
            Some(SERVICE),
            PATH,
            SERVICE,
            "CloseNotification",
            Some(&(id,).to_variant()),
            None,
            DBusCallFlags::NONE,
            TIMEOUT_MS,
            gio::Cancellable::NONE,
            move |reply| {
                if let Err(err) = reply {
                    tracing::debug!(%err, id, "a notification could not be withdrawn");
                }
            },
        );
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    //! Other systems: no notification yet; the tray still shows the running count.
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
