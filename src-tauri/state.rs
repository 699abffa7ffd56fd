//! What every command and handler shares: the desk, the webview's channel for
//! [`ShellEvent`]s, and what the shell learned at start (why the shortcut or the tray
//! cannot work). It uses only the desk and the portal binding, so every other part
//! of the shell may use it without a cycle.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cairn_protocol::desktop::ShellEvent;
use tauri::ipc::Channel;

use crate::desk::Desk;

/// What every command and handler shares.
pub struct AppState {
    desk: OnceLock<Arc<Desk>>,
    /// Where [`ShellEvent`]s go.
    shell: Mutex<ShellLink>,
    /// Why the summon shortcut is not registered, if it is not.
    pub shortcut_problem: Mutex<Option<String>>,
    /// The summon shortcut as bound through the desktop portal (Wayland).
    #[cfg(target_os = "linux")]
    pub portal: Mutex<Option<crate::portal::Binding>>,
    /// Why closing the window cannot hide it to the tray, if it cannot.
    pub tray_problem: Mutex<Option<String>>,
    /// Set when the user confirmed Quit, so the exit is not asked about twice.
    pub quitting: std::sync::atomic::AtomicBool,
}

impl AppState {
    pub(crate) fn new() -> Self {
        Self {
            desk: OnceLock::new(),
            shell: Mutex::default(),
            shortcut_problem: Mutex::default(),
            #[cfg(target_os = "linux")]
            portal: Mutex::default(),
            tray_problem: Mutex::default(),
            quitting: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Hands over the desk, once, in `setup`.
    pub(crate) fn open(&self, desk: Arc<Desk>) -> Result<(), &'static str> {
        self.desk.set(desk).map_err(|_| "the app was set up twice")
    }

    /// The desk; it is opened in `setup`, before any command can arrive.
    pub fn desk(&self) -> Result<&Arc<Desk>, cairn_protocol::desktop::CommandError> {
        self.desk
            .get()
            .ok_or_else(|| cairn_protocol::desktop::CommandError {
                message: "Cairn is still starting".into(),
                kind: cairn_protocol::desktop::CommandErrorKind::Busy,
            })
    }

    pub fn set_shell_channel(&self, channel: Channel<ShellEvent>) {
        let mut link = self.shell.lock().unwrap_or_else(PoisonError::into_inner);
        for event in std::mem::take(&mut link.held) {
            send(&channel, event);
        }
        link.channel = Some(channel);
    }

    /// Whether a webview listens for [`ShellEvent`]s.
    pub fn is_listening(&self) -> bool {
        self.shell
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .channel
            .is_some()
    }

    /// Tells the webview something. Before a webview listens, notices wait for it
    /// (the user must read them); everything else describes a moment and is dropped.
    pub fn tell(&self, event: ShellEvent) {
        let mut link = self.shell.lock().unwrap_or_else(PoisonError::into_inner);
        match &link.channel {
            Some(channel) => send(channel, event),
            None if matches!(event, ShellEvent::Notice { .. }) => link.held.push(event),
            None => {}
        }
    }
}

/// The webview's channel, once it said it is ready, and what waits for it. One lock
/// for both, so a notice cannot slip in between the hand-over and the channel.
#[derive(Default)]
struct ShellLink {
    channel: Option<Channel<ShellEvent>>,
    held: Vec<ShellEvent>,
}

fn send(channel: &Channel<ShellEvent>, event: ShellEvent) {
    if let Err(err) = channel.send(event) {
        tracing::debug!(error = %err, "the webview did not take a shell event");
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}
