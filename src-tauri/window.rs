//! The main window: summoned, hidden to the tray, put back where it was.

use std::sync::atomic::Ordering;

use cairn_protocol::desktop::ShellEvent;
use tauri::{AppHandle, CloseRequestApi, Manager, PhysicalPosition, PhysicalSize, Window};
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};

use crate::desk::{Desk, WindowGeometry};
use crate::state::AppState;

pub const MAIN: &str = "main";

/// Shows, raises and focuses the window, and puts the cursor in the composer.
pub fn summon(app: &AppHandle) {
    if let Some(window) = app.get_webview_window(MAIN) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    app.state::<AppState>().tell(ShellEvent::FocusComposer);
}

/// Applies a page zoom (percent) to the window's webview.
pub fn apply_zoom(app: &AppHandle, percent: u16) {
    if let Some(window) = app.get_webview_window(MAIN)
        && let Err(err) = window.set_zoom(f64::from(percent) / 100.0)
    {
        tracing::warn!(error = %err, percent, "the zoom could not be applied");
    }
}

pub fn hide(app: &AppHandle) {
    save_geometry(app);
    if let Some(window) = app.get_webview_window(MAIN) {
        let _ = window.hide();
    }
}

/// Whether the user is looking at the window (then no notification is needed).
pub fn is_watched(app: &AppHandle) -> bool {
    app.get_webview_window(MAIN).is_some_and(|window| {
        window.is_visible().unwrap_or(false) && window.is_focused().unwrap_or(false)
    })
}

/// Puts the window where it was last time, then shows it.
pub fn restore(app: &AppHandle, desk: &Desk) {
    let Some(window) = app.get_webview_window(MAIN) else {
        return;
    };
    let geometry = tauri::async_runtime::block_on(desk.window_geometry()).unwrap_or_else(|err| {
        tracing::warn!(error = %err, "the window's last place could not be read");
        None
    });
    if let Some(geometry) = geometry.filter(|g| fits_a_monitor(&window, g)) {
        let _ = window.set_size(PhysicalSize::new(geometry.width, geometry.height));
        let _ = window.set_position(PhysicalPosition::new(geometry.x, geometry.y));
        if geometry.maximized {
            let _ = window.maximize();
        }
    }
    // Started from an autostart entry with --hidden: stay in the tray, if there is
    // one to stay in (else the app would run with no way to reach it).
    let hidden = std::env::args().any(|arg| arg == crate::autostart::HIDDEN);
    if !hidden || crate::tray_host::problem().is_some() {
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// A saved place is used only if some monitor still shows the window's title bar.
fn fits_a_monitor(window: &tauri::WebviewWindow, geometry: &WindowGeometry) -> bool {
    let Ok(monitors) = window.available_monitors() else {
        return false;
    };
    monitors.iter().any(|monitor| {
        let (pos, size) = (monitor.position(), monitor.size());
        let right = pos
            .x
            .saturating_add(i32::try_from(size.width).unwrap_or(i32::MAX));
        let bottom = pos
            .y
            .saturating_add(i32::try_from(size.height).unwrap_or(i32::MAX));
        geometry.x >= pos.x - 50
            && geometry.x < right - 50
            && geometry.y >= pos.y
            && geometry.y < bottom - 30
    })
}

pub fn save_geometry(app: &AppHandle) {
    let Some(window) = app.get_webview_window(MAIN) else {
        return;
    };
    if !window.is_visible().unwrap_or(false) || window.is_minimized().unwrap_or(false) {
        return;
    }
    let (Ok(position), Ok(size)) = (window.outer_position(), window.inner_size()) else {
        return;
    };
    let geometry = WindowGeometry {
        x: position.x,
        y: position.y,
        width: size.width,
        height: size.height,
        maximized: window.is_maximized().unwrap_or(false),
    };
    let Ok(desk) = app.state::<AppState>().desk().cloned() else {
        return;
    };
    if let Err(err) = tauri::async_runtime::block_on(desk.save_window_geometry(geometry)) {
        tracing::warn!(error = %err, "the window's place could not be saved");
    }
}

/// Closing the window hides it to the tray (turns keep running), unless the user
/// turned that off or the desktop shows no tray (the app would vanish): then it quits,
/// asking first if turns are running.
pub fn close_requested(window: &Window, api: &CloseRequestApi) {
    let app = window.app_handle();
    let state = app.state::<AppState>();
    if state.quitting.load(Ordering::SeqCst) {
        return;
    }
    api.prevent_close();
    let close_to_tray = state
        .desk()
        .map(|desk| desk.settings().close_to_tray)
        .unwrap_or(true);
    // Asked again now: a panel may have started (or stopped) since the app did.
    let tray_problem = crate::tray_host::problem();
    let tray_shown = tray_problem.is_none();
    *state
        .tray_problem
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = tray_problem;
    tracing::debug!(close_to_tray, tray_shown, "the window was asked to close");
    if close_to_tray && tray_shown {
        hide(app);
    } else {
        quit(app);
    }
}

/// Quits; when turns are running the user confirms first (they would be stopped,
/// their partial answers kept).
pub fn quit(app: &AppHandle) {
    let running = app
        .state::<AppState>()
        .desk()
        .map(|desk| desk.running().len())
        .unwrap_or(0);
    if running == 0 {
        return exit(app);
    }
    // Asked in the window, which keeps the count live: a reply that finishes while the
    // user reads no longer stands in the way.
    let state = app.state::<AppState>();
    tracing::debug!(running, listening = state.is_listening(), "quit asked for");
    if state.is_listening() {
        summon(app);
        state.tell(ShellEvent::ConfirmQuit);
        return;
    }
    let turns = if running == 1 {
        "A reply is"
    } else {
        "Replies are"
    };
    let app = app.clone();
    app.dialog()
        .message(format!(
            "{turns} still being written ({running} running). Quitting stops them; what \
             they wrote so far is kept."
        ))
        .title("Quit Cairn?")
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom(
            "Quit".into(),
            "Keep running".into(),
        ))
        .show({
            let app = app.clone();
            move |quit| {
                if quit {
                    exit(&app);
                }
            }
        });
}

/// Quits now: running turns are stopped, their partial answers kept.
pub fn exit(app: &AppHandle) {
    save_geometry(app);
    let state = app.state::<AppState>();
    state.quitting.store(true, Ordering::SeqCst);
    // Stopped turns keep their partial answers: give them a moment to be committed.
    if let Ok(desk) = state.desk().cloned() {
        let running = desk.running();
        for thread in &running {
            let _ = desk.stop_turn(thread);
        }
        tauri::async_runtime::block_on(async {
            for thread in running {
                if let Some(live) = desk.live_turn(&thread) {
                    let _ =
                        tokio::time::timeout(std::time::Duration::from_secs(3), live.finished())
                            .await;
                }
            }
        });
    }
    app.exit(0);
}
