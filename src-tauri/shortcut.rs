//! The global summon shortcut. One the OS refuses (taken by another app, or not a
//! key combination) is reported to the user, never fatal.

use std::sync::PoisonError;

use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Manager};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutState};

use crate::app::AppState;
use crate::window;

pub fn plugin() -> TauriPlugin<tauri::Wry> {
    tauri_plugin_global_shortcut::Builder::new()
        .with_handler(|app, _shortcut, event| {
            if event.state() == ShortcutState::Pressed {
                window::summon(app);
            }
        })
        .build()
}

/// Whether `text` names a key combination (`Ctrl+Shift+Space`).
pub fn parse(text: &str) -> Result<Shortcut, String> {
    text.parse::<Shortcut>().map_err(|err| {
        format!("`{text}` is not a shortcut ({err}); write it like Ctrl+Shift+Space")
    })
}

/// Moves the summon shortcut from `old` to `new`. Returns why the OS refused it,
/// and remembers that for the settings screen.
pub fn register(app: &AppHandle, old: Option<&str>, new: &str) -> Option<String> {
    let shortcuts = app.global_shortcut();
    if let Some(old) = old.and_then(|old| parse(old).ok()) {
        let _ = shortcuts.unregister(old);
    }
    let problem = parse(new).and_then(|shortcut| {
        shortcuts.register(shortcut).map_err(|err| {
            format!("the summon shortcut {new} could not be registered: {err}. Choose another in Settings")
        })
    });
    let problem = problem.err();
    if let Some(problem) = &problem {
        tracing::warn!(%problem, "no summon shortcut");
    }
    *app.state::<AppState>()
        .shortcut_problem
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = problem.clone();
    problem
}
