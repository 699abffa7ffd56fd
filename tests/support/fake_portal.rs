//! A fake XDG GlobalShortcuts portal on a D-Bus bus: what KDE Plasma or GNOME 48
//! answer, with the user agreeing (response 0) or cancelling (1).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use cairn_desktop::portal::{PORTAL, PORTAL_PATH, SHORTCUTS};
use gio::glib::{self, ToVariant, Variant, VariantDict};
use gio::{DBusConnection, DBusConnectionFlags, DBusNodeInfo};

pub fn connect(address: &str) -> DBusConnection {
    DBusConnection::for_address_sync(
        address,
        DBusConnectionFlags::AUTHENTICATION_CLIENT | DBusConnectionFlags::MESSAGE_BUS_CONNECTION,
        None,
        gio::Cancellable::NONE,
    )
    .unwrap()
}

const INTERFACE: &str = r#"<node>
  <interface name="org.freedesktop.portal.GlobalShortcuts">
    <method name="CreateSession">
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="o" name="handle" direction="out"/>
    </method>
    <method name="BindShortcuts">
      <arg type="o" name="session_handle" direction="in"/>
      <arg type="a(sa{sv})" name="shortcuts" direction="in"/>
      <arg type="s" name="parent_window" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="o" name="request_handle" direction="out"/>
    </method>
    <signal name="Activated">
      <arg type="o" name="session_handle"/>
      <arg type="s" name="shortcut_id"/>
      <arg type="t" name="timestamp"/>
      <arg type="a{sv}" name="options"/>
    </signal>
    <property name="version" type="u" access="read"/>
  </interface>
</node>"#;

/// What the fake portal saw, and the session it opened.
#[derive(Default)]
pub struct Seen {
    pub triggers: Vec<String>,
    pub session: Option<String>,
}

/// A GlobalShortcuts portal that answers every request with `response` (0: the user
/// agreed; 1: cancelled), on a thread with its own main loop.
pub struct FakePortal {
    connection: DBusConnection,
    main_loop: glib::MainLoop,
    pub seen: Arc<Mutex<Seen>>,
}

impl FakePortal {
    /// Serves on the bus at `address` as the desktop portal.
    pub fn start(address: &str, response: u32) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (ready, is_ready) = mpsc::channel();
        let address = address.to_owned();
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            let context = glib::MainContext::new();
            context
                .with_thread_default(|| {
                    let connection = connect(&address);
                    let info = DBusNodeInfo::for_xml(INTERFACE).unwrap();
                    let interface = info.lookup_interface(SHORTCUTS).unwrap();
                    connection
                        .register_object(
                            PORTAL_PATH,
                            &interface,
                            move |connection, sender, _, _, method, params, invocation| {
                                let sender = sender.trim_start_matches(':').replace('.', "_");
                                let options = params.child_value(params.n_children() - 1);
                                let token = VariantDict::new(Some(&options))
                                    .lookup_value("handle_token", None)
                                    .and_then(|token| token.str().map(str::to_owned))
                                    .unwrap();
                                let request = format!("{PORTAL_PATH}/request/{sender}/{token}");
                                let mut results: HashMap<String, Variant> = HashMap::new();
                                if method == "CreateSession" {
                                    let session = format!("{PORTAL_PATH}/session/{sender}/{token}");
                                    record.lock().unwrap().session = Some(session.clone());
                                    results.insert("session_handle".into(), session.to_variant());
                                } else {
                                    let shortcuts = params.child_value(1);
                                    let shortcut = shortcuts.child_value(0).child_value(1);
                                    let trigger = VariantDict::new(Some(&shortcut))
                                        .lookup_value("preferred_trigger", None)
                                        .and_then(|t| t.str().map(str::to_owned))
                                        .unwrap();
                                    record.lock().unwrap().triggers.push(trigger);
                                }
                                let path =
                                    glib::variant::ObjectPath::try_from(request.as_str()).unwrap();
                                invocation.return_value(Some(&(path,).to_variant()));
                                connection
                                    .emit_signal(
                                        None,
                                        &request,
                                        "org.freedesktop.portal.Request",
                                        "Response",
                                        Some(&(response, results).to_variant()),
                                    )
                                    .unwrap();
                            },
                            |_, _, _, _, _| 1_u32.to_variant(),
                            |_, _, _, _, _, _| false,
                        )
                        .unwrap();
                    connection
                        .call_sync(
                            Some("org.freedesktop.DBus"),
                            "/org/freedesktop/DBus",
                            "org.freedesktop.DBus",
                            "RequestName",
                            Some(&(PORTAL, 4_u32).to_variant()),
                            None,
                            gio::DBusCallFlags::NONE,
                            5000,
                            gio::Cancellable::NONE,
                        )
                        .unwrap();
                    let main_loop = glib::MainLoop::new(Some(&context), false);
                    ready.send((connection, main_loop.clone())).unwrap();
                    main_loop.run();
                })
                .unwrap();
        });
        let (connection, main_loop) = is_ready.recv_timeout(Duration::from_secs(10)).unwrap();
        Self {
            connection,
            main_loop,
            seen,
        }
    }

    /// The desktop saw the key pressed.
    pub fn press(&self, shortcut_id: &str) {
        let session = self.seen.lock().unwrap().session.clone().unwrap();
        let session = glib::variant::ObjectPath::try_from(session.as_str()).unwrap();
        let options: HashMap<String, Variant> = HashMap::new();
        self.connection
            .emit_signal(
                None,
                PORTAL_PATH,
                SHORTCUTS,
                "Activated",
                Some(&(session, shortcut_id, 0_u64, options).to_variant()),
            )
            .unwrap();
    }
}

impl Drop for FakePortal {
    /// The desktop loses its portal: later tests on the same bus see none.
    fn drop(&mut self) {
        let _ = self.connection.close_sync(gio::Cancellable::NONE);
        self.main_loop.quit();
    }
}
