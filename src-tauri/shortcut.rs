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

/// Whether `text` names a key combination (`Ctrl+Shift+Space`).
pub fn parse(text: &str) -> Result<Shortcut, String> {
    text.parse::<Shortcut>().map_err(|err| {
        format!("`{text}` is not a shortcut ({err}); write it like Ctrl+Shift+Space")
    })
}

/// Moves the summon shortcut from `old` to `new`. Returns why the OS refused it,
/// and remembers that for the settings screen. On Wayland the desktop's portal binds
/// it (and may answer later, after asking the user); elsewhere the plugin grabs it.
pub fn register(app: &AppHandle, old: Option<&str>, new: &str) -> Option<String> {
    #[cfg(target_os = "linux")]
    if crate::portal::wayland_session() {
        return through_portal(app, new).err();
    }
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
fn through_portal(app: &AppHandle, shortcut: &str) -> Result<(), String> {
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
            return Err(portal::unavailable(shortcut));
        }
        let summoner = app.clone();
        let reporter = app.clone();
        portal::bind(
            connection,
            shortcut,
            move || window::summon(&summoner),
            move |outcome| {
                if let Err(problem) = outcome {
                    remember(&reporter, Some(problem));
                }
            },
        )
        .map_err(|err| format!("the summon shortcut could not be set up: {err}"))
    });
    match bound {
        Ok(binding) => {
            *state.portal.lock().unwrap_or_else(PoisonError::into_inner) = Some(binding);
            Ok(())
        }
        Err(problem) => {
            remember(app, Some(problem.clone()));
            Err(problem)
        }
    }
}
