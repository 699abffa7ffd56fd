//! OS notifications when a turn finishes or needs approval while the user looks
//! elsewhere; clicking one opens its thread.
//!
//! On Linux they go straight to the notification daemon over D-Bus (notify-rust), so
//! a missing daemon is an error we log rather than a silent success.

use cairn_protocol::TurnStatus;
use cairn_protocol::desktop::ShellEvent;
use tauri::{AppHandle, Manager};

use crate::app::AppState;
use crate::window;

pub fn approval_needed(app: &AppHandle, thread_id: &str, title: &str, tool: &str) {
    send(
        app,
        thread_id,
        &format!("{title} needs your approval"),
        &format!("Cairn wants to use {tool}. Open the chat to allow or deny it."),
    );
}

pub fn turn_finished(app: &AppHandle, thread_id: &str, title: &str, status: TurnStatus) {
    let body = match status {
        TurnStatus::Completed => "The reply is ready.",
        TurnStatus::BudgetExceeded => "The reply stopped at its budget; open the chat to continue.",
        TurnStatus::Cancelled => "The reply was stopped.",
        TurnStatus::Failed => "The reply failed; open the chat to see why.",
    };
    send(app, thread_id, title, body);
}

fn send(app: &AppHandle, thread_id: &str, summary: &str, body: &str) {
    let enabled = app
        .state::<AppState>()
        .desk()
        .map(|desk| desk.settings().notifications)
        .unwrap_or(false);
    if !enabled || window::is_watched(app) {
        return;
    }
    show(
        app.clone(),
        thread_id.to_owned(),
        summary.to_owned(),
        body.to_owned(),
    );
}

#[cfg(target_os = "linux")]
fn show(app: AppHandle, thread_id: String, summary: String, body: String) {
    // Showing blocks on D-Bus and waiting for the click blocks until the
    // notification goes away: both off the event loop.
    std::thread::spawn(move || {
        let shown = notify_rust::Notification::new()
            .appname("Cairn")
            .summary(&summary)
            .body(&body)
            .action("default", "Open")
            .hint(notify_rust::Hint::Category("im.received".into()))
            .show();
        match shown {
            Ok(handle) => handle.wait_for_action(|action| {
                if action == "default" {
                    open_thread(&app, thread_id);
                }
            }),
            Err(err) => tracing::warn!(error = %err, "the notification could not be shown"),
        }
    });
}

#[cfg(not(target_os = "linux"))]
fn show(app: AppHandle, thread_id: String, summary: String, body: String) {
    // Other systems: no notification yet; the tray still shows the running count.
    let _ = (app, thread_id, summary, body);
}

fn open_thread(app: &AppHandle, thread_id: String) {
    let app_for_main = app.clone();
    let _ = app.run_on_main_thread(move || {
        window::summon(&app_for_main);
        app_for_main
            .state::<AppState>()
            .tell(ShellEvent::OpenThread { thread_id });
    });
}
