//! Cairn's desktop shell: the window, the tray, the summon shortcut and the
//! notifications around the same runtime the CLI uses.
//!
//! start → one instance → the store and the [`desk::Desk`] → window placed where it
//! was → tray, shortcut → the webview calls [`commands`]; turns run in the runtime's
//! tasks, so closing the window (it hides to the tray) never stops them.

pub mod desk;

mod app;
mod approvals;
mod autostart;
mod clipboard;
mod commands;
mod jit;
mod links;
mod notify;
#[cfg(target_os = "linux")]
pub mod portal;
#[cfg(windows)]
mod registry;
mod rendering;
mod shortcut;
#[cfg(target_os = "linux")]
mod single_instance;
mod state;
mod tray;
mod tray_host;
mod window;

pub use app::run;
pub use rendering::{WEBKIT_SWITCHES_WITHOUT_GPU, machine_has_gpu};
