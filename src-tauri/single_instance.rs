//! One Cairn per user session. On Linux the first launch owns a name on the session
//! bus and answers `Summon` there; a later launch calls it and exits, so the user's
//! running turns and window stay where they are.
//!
//! This rides on the GDBus connection GTK already holds: the single-instance plugin
//! opened a second connection through zbus, with its own executor threads and 0.8 MB
//! of code in the binary (README "Benchmarks → The desktop app").

use gio::glib::{self, ToVariant};
use gio::{BusType, DBusCallFlags, DBusConnection, DBusNodeInfo};
use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Wry};

use crate::window;

/// The object and interface the first instance serves.
const OBJECT_PATH: &str = "/dev/cairn/desktop/SingleInstance";
const INTERFACE: &str = "dev.cairn.desktop.SingleInstance";
const INTROSPECTION: &str = r#"<node>
  <interface name="dev.cairn.desktop.SingleInstance">
    <method name="Summon"/>
  </interface>
</node>"#;

/// `RequestName` flag: fail rather than wait in line for the name.
const DO_NOT_QUEUE: u32 = 4;
/// `RequestName` replies that make this process the owner.
const PRIMARY_OWNER: u32 = 1;
const ALREADY_OWNER: u32 = 4;
/// How long a second launch waits for the first to answer (ms).
const SUMMON_TIMEOUT_MS: i32 = 5_000;

/// Plugins are set up before the window and its webview exist: a second launch ends
/// there, having opened nothing.
pub fn plugin() -> TauriPlugin<Wry> {
    tauri::plugin::Builder::new("cairn-single-instance")
        .setup(|app, _api| match claim(app, &app.config().identifier)? {
            Launch::First => Ok(()),
            Launch::Handed => {
                // Said on stderr: a launch that seems to vanish is otherwise a mystery.
                eprintln!("cairn: Cairn is already running; its window was brought forward");
                exit_now()
            }
        })
        .build()
}

/// Ends a launch that handed over, without the libraries' exit handlers: `exit()`
/// tears GTK, WebKit and GDBus state down under the threads they still run, and one
/// handed-over launch in ten E2E runs under load crashed there (SIGSEGV).
#[allow(unsafe_code)]
fn exit_now() -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once. This launch opened nothing that needs
    // closing: no file, no window, and its one call (Summon) was answered.
    unsafe { libc::_exit(0) }
}

/// Who this launch is.
#[derive(Debug)]
enum Launch {
    /// The only instance (or one without a session bus, which cannot tell): go on.
    First,
    /// Another instance came forward; this one has nothing to do.
    Handed,
}

/// The bus name for the app `identifier` (the E2E harness watches the same name).
fn bus_name(identifier: &str) -> String {
    format!("{identifier}.SingleInstance")
}

/// Why this launch neither became the instance nor handed over to it; it does not start.
#[derive(Debug, thiserror::Error)]
enum NotClaimed {
    #[error("the single-instance object could not be served: {0}")]
    Serve(glib::Error),
    #[error("Cairn is already running but did not come forward: {0}")]
    OwnerSilent(glib::Error),
}

/// Claims the instance name for `app`, or hands over to the instance holding it.
///
/// Errors only when another instance exists but did not answer: starting a second
/// copy over the same database and tray would be worse than not starting.
fn claim(app: &AppHandle, identifier: &str) -> Result<Launch, NotClaimed> {
    let connection = match gio::bus_get_sync(BusType::Session, gio::Cancellable::NONE) {
        Ok(connection) => connection,
        Err(err) => {
            tracing::warn!(error = %err, "no session bus: cannot check for another instance");
            return Ok(Launch::First);
        }
    };
    let name = bus_name(identifier);
    // Served before the name is taken, so a launch that finds the name finds the object.
    let registration = serve(&connection, app.clone()).map_err(NotClaimed::Serve)?;
    match request_name(&connection, &name) {
        Ok(true) => Ok(Launch::First),
        Ok(false) => {
            let _ = connection.unregister_object(registration);
            summon_owner(&connection, &name)?;
            Ok(Launch::Handed)
        }
        Err(err) => {
            tracing::warn!(error = %err, name, "the bus refused the instance name");
            Ok(Launch::First)
        }
    }
}

fn serve(connection: &DBusConnection, app: AppHandle) -> Result<gio::RegistrationId, glib::Error> {
    let node = DBusNodeInfo::for_xml(INTROSPECTION)?;
    let interface = node
        .lookup_interface(INTERFACE)
        .ok_or_else(|| glib::Error::new(gio::IOErrorEnum::NotFound, "interface missing"))?;
    // GDBus calls this on the main context of the thread registering it: the main
    // thread, where the window may be touched.
    connection.register_object(
        OBJECT_PATH,
        &interface,
        move |_, _, _, _, method, _, invocation| match method {
            "Summon" => {
                window::summon(&app);
                invocation.return_value(None);
            }
            // GDBus checks calls against the introspection data: only Summon arrives.
            other => invocation.return_error(
                gio::IOErrorEnum::NotSupported,
                &format!("no method {other}"),
            ),
        },
        |_, _, _, _, _| ().to_variant(),
        |_, _, _, _, _, _| false,
    )
}

/// Whether this process now owns `name`.
fn request_name(connection: &DBusConnection, name: &str) -> Result<bool, glib::Error> {
    let reply = connection.call_sync(
        Some("org.freedesktop.DBus"),
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "RequestName",
        Some(&(name, DO_NOT_QUEUE).to_variant()),
        Some(glib::VariantTy::new("(u)").map_err(|err| {
            glib::Error::new(gio::IOErrorEnum::InvalidArgument, &err.to_string())
        })?),
        DBusCallFlags::NONE,
        -1,
        gio::Cancellable::NONE,
    )?;
    let (code,) = reply.get::<(u32,)>().ok_or_else(|| {
        glib::Error::new(gio::IOErrorEnum::InvalidData, "RequestName gave no number")
    })?;
    Ok(code == PRIMARY_OWNER || code == ALREADY_OWNER)
}

fn summon_owner(connection: &DBusConnection, name: &str) -> Result<(), NotClaimed> {
    connection
        .call_sync(
            Some(name),
            OBJECT_PATH,
            INTERFACE,
            "Summon",
            None,
            None,
            DBusCallFlags::NONE,
            SUMMON_TIMEOUT_MS,
            gio::Cancellable::NONE,
        )
        .map(drop)
        .map_err(NotClaimed::OwnerSilent)
}
