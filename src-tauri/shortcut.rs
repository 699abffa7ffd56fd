//! The global summon shortcut: the global-shortcut plugin's key grab on X11 (and
//! elsewhere), the desktop portal on Wayland ([`crate::portal`]). One the OS refuses
//! (taken by another app, not a key combination, no portal) is reported to the user,
//! never fatal.

use std::sync::PoisonError;

use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Manager};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutState};

use crate::state::AppState;
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

/// Why the summon shortcut does not work, as Settings says it.
#[derive(Debug, thiserror::Error)]
pub enum NoShortcut {
    #[error("`{text}` is not a shortcut ({why}); write it like Ctrl+Shift+Space")]
    NotAShortcut { text: String, why: String },
    #[error(
        "the summon shortcut {shortcut} could not be registered: {why}. Choose another in \
         Settings"
    )]
    NotRegistered { shortcut: String, why: String },
    #[cfg(target_os = "linux")]
    #[error("the summon shortcut could not be set up: {0}")]
    NoThread(std::io::Error),
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Portal(#[from] crate::portal::Unbound),
}

/// Whether `text` names a key combination (`Ctrl+Shift+Space`).
pub fn parse(text: &str) -> Result<Shortcut, NoShortcut> {
    text.parse::<Shortcut>()
        .map_err(|err| NoShortcut::NotAShortcut {
            text: text.to_owned(),
            why: err.to_string(),
        })
}

/// Moves the summon shortcut from `old` to `new`. Returns why the OS refused it,
/// and remembers that for the settings screen. On Wayland the desktop's portal binds
/// it (and may answer later, after asking the user); elsewhere the plugin grabs it.
pub fn register(app: &AppHandle, old: Option<&str>, new: &str) -> Option<String> {
    #[cfg(target_os = "linux")]
    if crate::portal::wayland_session() {
        return through_portal(app, new)
            .err()
            .map(|problem| problem.to_string());
    }
    let shortcuts = app.global_shortcut();
    if let Some(old) = old.and_then(|old| parse(old).ok()) {
        let _ = shortcuts.unregister(old);
    }
    let problem = parse(new).and_then(|shortcut| {
        shortcuts
            .register(shortcut)
            .map_err(|err| NoShortcut::NotRegistered {
                shortcut: new.to_owned(),
                why: err.to_string(),
            })
    });
    let problem = problem.err().map(|problem| problem.to_string());
    remember(app, problem.clone());
    problem
}

/// Keeps why the shortcut does not work (or that it does) for the settings screen.
fn remember(app: &AppHandle, problem: Option<String>) {
    if let Some(problem) = &problem {
        tracing::warn!(%problem, "no summon shortcut");
    }
    *app.state::<AppState>()
        .shortcut_problem
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = problem;
}

/// Binds the shortcut through the desktop portal, replacing the one bound before.
/// Fine until the portal says otherwise: a refusal arrives later, and is kept then.
#[cfg(target_os = "linux")]
fn through_portal(app: &AppHandle, shortcut: &str) -> Result<(), NoShortcut> {
    use crate::portal;

    let state = app.state::<AppState>();
    let previous = state
        .portal
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(previous) = previous {
        previous.close();
    }
    remember(app, None);
    let bound = parse(shortcut).and_then(|_| {
        let connection = gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE)
            .map_err(|_| portal::unavailable(shortcut))?;
        if !portal::available(&connection) {
            return Err(portal::unavailable(shortcut).into());
        }
        let summoner = app.clone();
        let reporter = app.clone();
        portal::bind(
            connection,
            shortcut,
            move || window::summon(&summoner),
            move |outcome| {
                if let Err(problem) = outcome {
                    remember(&reporter, Some(problem.to_string()));
                }
            },
        )
        .map_err(NoShortcut::NoThread)
    });
    match bound {
        Ok(binding) => {
            *state.portal.lock().unwrap_or_else(PoisonError::into_inner) = Some(binding);
            Ok(())
        }
        Err(problem) => {
            remember(app, Some(problem.to_string()));
            Err(problem)
        }
    }
}
