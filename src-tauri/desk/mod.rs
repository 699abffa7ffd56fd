//! Everything the desktop app does, without the window: the IPC commands' logic over
//! the shared [`Runtime`], testable on its own.
//!
//! webview command → [`Desk`] method (validates its input, returns a [`DeskError`]
//! the UI can show) → runtime (the one door to the store, the turns and the model
//! servers) / keychain. Turns report to the [`Shell`]
//! (notifications, the tray's running count) whether or not a window watches them.

mod coalesce;
mod error;
mod llm;
pub mod mcp;
mod models;
mod settings;
mod threads;
mod turns;

use std::sync::{Arc, PoisonError, RwLock};

use cairn_protocol::Event;
use cairn_protocol::desktop::Settings;
use cairn_runtime::Runtime;
use cairn_secrets::SecretStore;

pub use error::DeskError;
pub use settings::{SETTINGS_KEY, WINDOW_KEY, WindowGeometry};

/// What the desk asks of the desktop around it. The app shows notifications and
/// updates the tray; tests record the calls.
pub trait Shell: Send + Sync + 'static {
    /// A running turn emitted an event (every turn, watched by a window or not).
    fn turn_event(&self, thread_id: &str, title: &str, event: &Event);
    /// The threads with a running turn changed.
    fn running_changed(&self, running: &[String]);
}

/// The app's state behind every command.
pub struct Desk {
    runtime: Arc<Runtime>,
    /// The settings in force: what the user set, then this run's overrides.
    settings: RwLock<Settings>,
    /// What the user set, as kept in the store (no override in it).
    stored: RwLock<Settings>,
    /// The `CAIRN_*` variables that overrode the saved server at start.
    overrides: settings::Overrides,
    secrets: Arc<dyn SecretStore>,
    shell: Arc<dyn Shell>,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk")
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl Desk {
    /// Opens the desk over a runtime; stored settings apply, then `overrides` (from
    /// the environment, like the CLI's `CAIRN_*` variables).
    pub async fn open(
        runtime: Arc<Runtime>,
        secrets: Arc<dyn SecretStore>,
        shell: Arc<dyn Shell>,
        overrides: &settings::Overrides,
    ) -> Result<Arc<Self>, DeskError> {
        let mut stored: Settings = runtime.setting(SETTINGS_KEY).await?.unwrap_or_default();
        stored.endpoints = settings::named_servers(&runtime, &stored).await?;
        runtime.use_secrets(Arc::clone(&secrets));
        let mut settings = stored.clone();
        overrides.apply(&mut settings)?;
        // The window asks each server afresh when it opens (the model picker does, in
        // the background), and keeps what it learns while it runs.
        runtime.trust_stored_windows_for(std::time::Duration::ZERO);
        Ok(Arc::new(Self {
            runtime,
            settings: RwLock::new(settings),
            stored: RwLock::new(stored),
            overrides: overrides.clone(),
            secrets,
            shell,
        }))
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    pub fn settings(&self) -> Settings {
        self.settings
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The `CAIRN_*` variables that overrode the saved server at start, as `NAME=value`.
    pub fn env_overrides(&self) -> Vec<String> {
        self.overrides.named()
    }

    /// The threads with a running turn.
    pub fn running(&self) -> Vec<String> {
        self.runtime.running()
    }
}

pub use cairn_runtime::Export;
pub use models::presets;
pub use settings::Overrides;
pub use threads::check_workspace;
pub use turns::{forward, sent};
