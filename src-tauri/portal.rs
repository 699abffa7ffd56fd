//! The summon shortcut on Wayland, through the XDG desktop portal's GlobalShortcuts
//! interface (KDE Plasma, GNOME 48 and later). Wayland gives no app a global key
//! grab, so the global-shortcut plugin's X11 grab never fires there; the portal asks
//! the desktop to bind the key and tells the app when it is pressed.
//!
//! CreateSession → Request::Response (the session) → BindShortcuts → Response (the
//! desktop may ask the user first) → Activated, for as long as the session lives.
//! It all runs on a thread with its own GLib main context, since the portal answers
//! with signals and the app's main loop belongs to the window.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use gio::glib::{self, ToVariant, Variant, VariantDict, VariantTy};
use gio::{DBusCallFlags, DBusConnection, DBusSignalFlags};

pub const PORTAL: &str = "org.freedesktop.portal.Desktop";
pub const PORTAL_PATH: &str = "/org/freedesktop/portal/desktop";
pub const SHORTCUTS: &str = "org.freedesktop.portal.GlobalShortcuts";
const REQUEST: &str = "org.freedesktop.portal.Request";
const SESSION: &str = "org.freedesktop.portal.Session";

/// The id of Cairn's one shortcut in its session.
pub const SUMMON: &str = "summon";

/// How long the desktop may take to answer: binding can wait for the user to confirm
/// the key in a dialog.
const ANSWER_WAIT: Duration = Duration::from_secs(300);

/// Call timeout for the portal's methods, which answer at once (the result comes as
/// a signal).
const CALL_TIMEOUT_MS: i32 = 5000;

/// Why the portal did not bind the shortcut, as Settings says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unbound {
    #[error(
        "This Wayland desktop has no global shortcuts portal (KDE Plasma and GNOME 48 or \
         later have one), so Cairn cannot listen for {0} here. Launching Cairn again brings \
         its window forward: your desktop's keyboard settings can bind a key to that."
    )]
    NoPortal(String),
    #[error("the desktop did not allow {0} (cancelled); choose it again in Settings")]
    Cancelled(String),
    #[error("the desktop could not bind {0}; choose another in Settings")]
    Refused(String),
    #[error("the desktop's shortcut portal failed ({method}): {why}")]
    CallFailed { method: String, why: String },
    #[error("the desktop's shortcut portal answered {0} oddly")]
    Odd(String),
    #[error("the desktop opened no shortcut session")]
    NoSession,
    #[error("the desktop gave `{0}` as its session")]
    BadSession(String),
    #[error("the desktop's shortcut portal never answered")]
    Silent,
}

/// What Settings says on a Wayland desktop without the portal.
pub fn unavailable(shortcut: &str) -> Unbound {
    Unbound::NoPortal(shortcut.to_owned())
}

/// Whether the session runs under Wayland, where apps cannot grab keys themselves.
pub fn wayland_session() -> bool {
    std::env::var("XDG_SESSION_TYPE").is_ok_and(|kind| kind.eq_ignore_ascii_case("wayland"))
        || std::env::var_os("WAYLAND_DISPLAY").is_some_and(|display| !display.is_empty())
}

/// Whether the desktop's portal offers global shortcuts.
pub fn available(connection: &DBusConnection) -> bool {
    connection
        .call_sync(
            Some(PORTAL),
            PORTAL_PATH,
            "org.freedesktop.DBus.Properties",
            "Get",
            Some(&(SHORTCUTS, "version").to_variant()),
            None,
            DBusCallFlags::NONE,
            CALL_TIMEOUT_MS,
            gio::Cancellable::NONE,
        )
        .is_ok()
}

/// A shortcut bound through the portal, until [`Binding::close`].
#[derive(Debug)]
pub struct Binding {
    connection: DBusConnection,
    main_loop: glib::MainLoop,
    /// Set once the portal opened the session.
    session: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

impl Binding {
    /// Ends the session: the desktop releases the key, the thread ends.
    pub fn close(self) {
        let session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(session) = session {
            let closed = self.connection.call_sync(
                Some(PORTAL),
                &session,
                SESSION,
                "Close",
                None,
                None,
                DBusCallFlags::NONE,
                CALL_TIMEOUT_MS,
                gio::Cancellable::NONE,
            );
            if let Err(err) = closed {
                tracing::debug!(%err, "the shortcut session could not be closed");
            }
        }
        self.main_loop.quit();
    }
}

/// Binds `shortcut` (as Settings writes it, `Ctrl+Shift+Space`) for the summon
/// action. `activated` runs on every press; `bound` once, with why not if the
/// desktop refused or never answered.
pub fn bind(
    connection: DBusConnection,
    shortcut: &str,
    activated: impl Fn() + Send + 'static,
    bound: impl FnOnce(Result<(), Unbound>) + Send + 'static,
) -> std::io::Result<Binding> {
    let trigger = trigger(shortcut);
    let context = glib::MainContext::new();
    let main_loop = glib::MainLoop::new(Some(&context), false);
    let session = std::sync::Arc::new(std::sync::Mutex::new(None));
    let binding = Binding {
        connection: connection.clone(),
        main_loop: main_loop.clone(),
        session: std::sync::Arc::clone(&session),
    };
    std::thread::Builder::new()
        .name("shortcut-portal".into())
        .spawn(move || {
            let ran = context.with_thread_default(|| {
                let opened = open(&context, &connection, &trigger);
                let id = match opened {
                    Ok(id) => id,
                    Err(problem) => {
                        bound(Err(problem));
                        return;
                    }
                };
                *session
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id.clone());
                let _watch = connection.signal_subscribe(
                    None,
                    Some(SHORTCUTS),
                    Some("Activated"),
                    Some(PORTAL_PATH),
                    None,
                    DBusSignalFlags::NONE,
                    move |_, _, _, _, _, params| {
                        let ours = params.child_value(0).str() == Some(id.as_str())
                            && params.child_value(1).str() == Some(SUMMON);
                        if ours {
                            activated();
                        }
                    },
                );
                bound(Ok(()));
                main_loop.run();
            });
            if let Err(err) = ran {
                tracing::warn!(%err, "the shortcut portal's thread could not start");
            }
        })?;
    Ok(binding)
}

/// Opens a session and binds the summon shortcut in it; the session's handle.
fn open(
    context: &glib::MainContext,
    connection: &DBusConnection,
    trigger: &str,
) -> Result<String, Unbound> {
    let answers = Answers::listen(connection);
    let token = next_token();
    let create = Variant::tuple_from_iter([options(&[
        ("handle_token", token.to_variant()),
        ("session_handle_token", token.to_variant()),
    ])]);
    let request = call(connection, "CreateSession", &create)?;
    let session = match answers.wait(context, &request)? {
        (0, results) => results
            .get("session_handle")
            .and_then(|handle| handle.str().map(str::to_owned))
            .ok_or(Unbound::NoSession)?,
        (code, _) => return Err(refused(code, "a shortcut session")),
    };
    let session_path = glib::variant::ObjectPath::try_from(session.as_str())
        .map_err(|_| Unbound::BadSession(session.clone()))?;
    let shortcut = Variant::tuple_from_iter([
        SUMMON.to_variant(),
        options(&[
            ("description", "Show Cairn".to_variant()),
            ("preferred_trigger", trigger.to_variant()),
        ]),
    ]);
    #[allow(clippy::expect_used)] // a constant, valid type string
    let entry = VariantTy::new("(sa{sv})").expect("a valid type");
    let bind = Variant::tuple_from_iter([
        session_path.to_variant(),
        Variant::array_from_iter_with_type(entry, [shortcut]),
        "".to_variant(),
        options(&[("handle_token", next_token().to_variant())]),
    ]);
    let request = call(connection, "BindShortcuts", &bind)?;
    match answers.wait(context, &request)? {
        (0, _) => Ok(session),
        (code, _) => Err(refused(code, trigger)),
    }
}

fn call(connection: &DBusConnection, method: &str, args: &Variant) -> Result<String, Unbound> {
    let reply = connection
        .call_sync(
            Some(PORTAL),
            PORTAL_PATH,
            SHORTCUTS,
            method,
            Some(args),
            None,
            DBusCallFlags::NONE,
            CALL_TIMEOUT_MS,
            gio::Cancellable::NONE,
        )
        .map_err(|err| Unbound::CallFailed {
            method: method.to_owned(),
            why: err.to_string(),
        })?;
    reply
        .child_value(0)
        .str()
        .map(str::to_owned)
        .ok_or_else(|| Unbound::Odd(method.to_owned()))
}

fn refused(code: u32, what: &str) -> Unbound {
    match code {
        1 => Unbound::Cancelled(what.to_owned()),
        _ => Unbound::Refused(what.to_owned()),
    }
}

type Results = HashMap<String, Variant>;

/// The portal's answers (`Request::Response` signals) by request path. Subscribed
/// before the first call: an answer can come before the call's own reply.
struct Answers {
    seen: Rc<RefCell<HashMap<String, (u32, Results)>>>,
}

impl Answers {
    fn listen(connection: &DBusConnection) -> Self {
        let seen: Rc<RefCell<HashMap<String, (u32, Results)>>> = Rc::default();
        let store = Rc::clone(&seen);
        // Never unsubscribed: the thread keeps the connection's subscriptions for as
        // long as the session lives, and the map stays tiny.
        let _ = connection.signal_subscribe(
            None,
            Some(REQUEST),
            Some("Response"),
            None,
            None,
            DBusSignalFlags::NONE,
            move |_, _, path, _, _, params| {
                if let Some(answer) = params.get::<(u32, Results)>() {
                    store.borrow_mut().insert(path.to_owned(), answer);
                }
            },
        );
        Self { seen }
    }

    fn wait(&self, context: &glib::MainContext, request: &str) -> Result<(u32, Results), Unbound> {
        let deadline = Instant::now() + ANSWER_WAIT;
        loop {
            if let Some(answer) = self.seen.borrow_mut().remove(request) {
                return Ok(answer);
            }
            if Instant::now() > deadline {
                return Err(Unbound::Silent);
            }
            if !context.iteration(false) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

fn options(entries: &[(&str, Variant)]) -> Variant {
    let dict = VariantDict::new(None);
    for (key, value) in entries {
        dict.insert_value(key, value);
    }
    dict.end()
}

fn next_token() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "cairn{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A shortcut as Settings writes it (`Ctrl+Shift+Space`) in the XDG shortcuts
/// notation the portal takes (`CTRL+SHIFT+space`).
pub fn trigger(shortcut: &str) -> String {
    shortcut
        .split('+')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| match part.to_ascii_lowercase().as_str() {
            "ctrl" | "control" | "cmdorctrl" | "commandorcontrol" => "CTRL".to_owned(),
            "shift" => "SHIFT".to_owned(),
            "alt" | "option" => "ALT".to_owned(),
            "super" | "meta" | "cmd" | "command" | "logo" => "LOGO".to_owned(),
            "space" => "space".to_owned(),
            "enter" | "return" => "Return".to_owned(),
            "esc" | "escape" => "Escape".to_owned(),
            "tab" => "Tab".to_owned(),
            key if key.chars().count() == 1 => key.to_owned(),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcuts_are_written_as_the_portal_reads_them() {
        assert_eq!(trigger("Ctrl+Shift+Space"), "CTRL+SHIFT+space");
        assert_eq!(trigger("Super+Alt+K"), "LOGO+ALT+k");
        assert_eq!(trigger("CmdOrCtrl + Enter"), "CTRL+Return");
        assert_eq!(trigger("Ctrl+F5"), "CTRL+F5");
    }
}
