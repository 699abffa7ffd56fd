//! Starting Cairn at login, hidden in the tray. The setting's effect is an entry the
//! system reads at login, one module per system: an XDG autostart file on Linux (and
//! the other Unix desktops that read one), the `Run` key on Windows. Settings keeps
//! the choice; the entry only follows it.

#[cfg(not(windows))]
mod xdg;
#[cfg(not(windows))]
pub use xdg::Entry;

#[cfg(windows)]
mod run_key;
#[cfg(windows)]
pub use run_key::Entry;

/// The argument the entry starts the app with: into the tray, no window.
pub const HIDDEN: &str = "--hidden";
