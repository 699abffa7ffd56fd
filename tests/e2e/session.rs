//! The desktop around the app, as far as Xvfb and a private session bus have one:
//! the notification daemon (dunst, started by D-Bus activation) observed on the bus,
//! and key presses the X server delivers as a user's would.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::PATIENCE;

/// `dbus-monitor` recording every call to the notification service into a file.
pub struct NotificationWatch {
    monitor: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl NotificationWatch {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let log = dir.path().join("bus.log");
        let file = std::fs::File::create(&log).expect("the bus log");
        let monitor = Command::new("dbus-monitor")
            .args([
                "--session",
                "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
            ])
            .stdout(file)
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-monitor runs (apt install dbus)");
        // dbus-monitor subscribes asynchronously: give it a moment before anything is sent.
        std::thread::sleep(Duration::from_millis(300));
        Self {
            monitor,
            log,
            _dir: dir,
        }
    }

    /// Waits until a `Notify` call carrying `needle` (summary or body) went out.
    pub async fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            let seen = std::fs::read_to_string(&self.log).unwrap_or_default();
            if seen.contains("member=Notify") && seen.contains(needle) {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let seen = std::fs::read_to_string(&self.log).unwrap_or_default();
        panic!("no notification with {needle:?} within {PATIENCE:?}; the bus saw:\n{seen}");
    }

    /// How many `Notify` calls went out so far.
    pub fn count(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("member=Notify")
            .count()
    }
}

impl Drop for NotificationWatch {
    fn drop(&mut self) {
        let _ = self.monitor.kill();
        let _ = self.monitor.wait();
    }
}

/// Clicks the newest notification, as a user would (dunst invokes its default action).
pub fn click_newest_notification() {
    run("dunstctl", &["action", "0"]);
}

/// Presses a key combination on the X display (`ctrl+shift+space`).
pub fn press_keys(keys: &str) {
    run("xdotool", &["key", "--clearmodifiers", keys]);
}

/// The X windows of the app on the display.
fn app_windows() -> Vec<String> {
    output("xdotool", &["search", "--onlyvisible", "--name", "^Cairn$"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The app's main window: of the visible windows named Cairn (a tray icon's window
/// can be one, and the search lists them in no fixed order), the largest.
fn main_window() -> String {
    app_windows()
        .into_iter()
        .max_by_key(|window| window_area(window))
        .expect("the app's window is on the display")
}

/// Gives the X input focus to the app's window, as clicking into it would.
pub fn focus_app_window() {
    run("xdotool", &["windowfocus", "--sync", &main_window()]);
}

/// Takes the X input focus away from every window (to the root), as switching to
/// another app would. (`--maxdepth 0` matches only the root window.) With the focus on
/// the root, GTK counts a window under the pointer as focused, so the pointer leaves
/// for the far corner of the screen, which the app's window does not reach.
pub fn focus_elsewhere() {
    let screen = output("xdotool", &["getdisplaygeometry"]);
    let corner: Vec<String> = screen
        .split_whitespace()
        .map(|n| (n.parse::<u32>().expect("a screen size") - 1).to_string())
        .collect();
    run("xdotool", &["mousemove", "--sync", &corner[0], &corner[1]]);
    let root = output("xdotool", &["search", "--maxdepth", "0", "--name", ""]);
    run("xdotool", &["windowfocus", "--sync", root.trim()]);
}

/// Whether the X input focus is in one of the app's windows.
pub fn app_has_focus() -> bool {
    let focused = output("xdotool", &["getwindowfocus"]);
    app_windows().contains(&focused.trim().to_owned())
}

fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("{program} did not run: {err}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        out.status
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|err| panic!("{program} did not run: {err}"));
    assert!(status.success(), "{program} {args:?} failed: {status}");
}

/// Whether the app shows its main window on the display now (a tray icon's small
/// window, also named Cairn, does not count).
pub fn app_window_shown() -> bool {
    let Ok(out) = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", "^Cairn$"])
        .output()
    else {
        return false;
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|window| window_area(window) > 200 * 200)
}

/// A window's width times its height, 0 if it cannot be asked.
fn window_area(window: &str) -> u64 {
    let Ok(out) = Command::new("xdotool")
        .args(["getwindowgeometry", "--shell", window])
        .output()
    else {
        return 0;
    };
    let geometry = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> u64 {
        geometry
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0)
    };
    field("WIDTH=") * field("HEIGHT=")
}

/// Asks the app's window to close, as a window manager's close button does: the
/// `WM_DELETE_WINDOW` message of ICCCM (Xvfb has no window manager to send it).
pub fn close_app_window() {
    use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt as _, EventMask};

    let chosen = main_window();
    let window: u32 = chosen.parse().expect("an X window id");
    let (connection, _) = x11rb::connect(None).expect("the X display");
    let atom = |name: &str| {
        connection
            .intern_atom(false, name.as_bytes())
            .expect("an atom request")
            .reply()
            .expect("an atom")
            .atom
    };
    let (protocols, delete) = (atom("WM_PROTOCOLS"), atom("WM_DELETE_WINDOW"));
    let message = ClientMessageEvent::new(32, window, protocols, [delete, 0, 0, 0, 0]);
    connection
        .send_event(false, window, EventMask::NO_EVENT, message)
        .expect("sending the close request");
    // A round trip: once its reply is back, the server has delivered the message, so
    // closing the connection cannot race it.
    connection
        .get_input_focus()
        .expect("a focus request")
        .reply()
        .expect("the server's reply");
}

/// An XEmbed system tray on the display for as long as this lives: the owner of the
/// `_NET_SYSTEM_TRAY_S0` selection, which is how a desktop says it shows tray icons.
pub struct SystemTray {
    _connection: x11rb::rust_connection::RustConnection,
}

impl SystemTray {
    pub fn own() -> Self {
        use x11rb::connection::Connection as _;
        use x11rb::protocol::xproto::{ConnectionExt as _, CreateWindowAux, WindowClass};
        use x11rb::wrapper::ConnectionExt as _;

        let (connection, screen) = x11rb::connect(None).expect("the X display");
        let root = connection.setup().roots[screen].root;
        let window = connection.generate_id().expect("an X id");
        connection
            .create_window(
                0,
                window,
                root,
                0,
                0,
                1,
                1,
                0,
                WindowClass::INPUT_ONLY,
                0,
                &CreateWindowAux::new(),
            )
            .expect("a window for the tray");
        let selection = connection
            .intern_atom(false, format!("_NET_SYSTEM_TRAY_S{screen}").as_bytes())
            .expect("an atom request")
            .reply()
            .expect("the tray atom")
            .atom;
        connection
            .set_selection_owner(window, selection, x11rb::CURRENT_TIME)
            .expect("owning the tray selection");
        connection.sync().expect("the X server took it");
        Self {
            _connection: connection,
        }
    }
}
