//! A D-Bus session bus of the test's own, and connections to it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gio::glib::{self, ToVariant, Variant};
use gio::{DBusConnection, DBusConnectionFlags, DBusMethodInvocation, DBusNodeInfo};

pub fn connect(address: &str) -> DBusConnection {
    DBusConnection::for_address_sync(
        address,
        DBusConnectionFlags::AUTHENTICATION_CLIENT | DBusConnectionFlags::MESSAGE_BUS_CONNECTION,
        None,
        gio::Cancellable::NONE,
    )
    .unwrap()
}

/// A session bus of our own, gone with the test.
pub struct Bus {
    daemon: Child,
    pub address: String,
}

impl Bus {
    pub fn start() -> Self {
        let mut daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon runs (apt install dbus)");
        let mut line = String::new();
        BufReader::new(daemon.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Self {
            daemon,
            address: line.trim().to_owned(),
        }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// One D-Bus object a fake desktop service serves under a well-known name, on a
/// thread with its own main loop, until dropped (then later tests see no service).
pub struct Service {
    pub connection: DBusConnection,
    main_loop: glib::MainLoop,
}

impl Service {
    /// Serves `interface` (described by `xml`) at `path` as `name`. Every method call
    /// goes to `on_call(connection, sender, method, params, invocation)`; a property
    /// reads as 1 (a portal's `version`).
    pub fn start(
        address: &str,
        name: &'static str,
        path: &'static str,
        xml: &'static str,
        interface: &'static str,
        on_call: impl Fn(DBusConnection, &str, &str, Variant, DBusMethodInvocation)
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let (ready, is_ready) = mpsc::channel();
        let address = address.to_owned();
        std::thread::spawn(move || {
            let context = glib::MainContext::new();
            context
                .with_thread_default(|| {
                    let connection = connect(&address);
                    let info = DBusNodeInfo::for_xml(xml).unwrap();
                    let interface = info.lookup_interface(interface).unwrap();
                    connection
                        .register_object(
                            path,
                            &interface,
                            move |connection, sender, _, _, method, params, invocation| {
                                on_call(connection, sender, method, params, invocation);
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
                            Some(&(name, 4_u32).to_variant()),
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
        }
    }

    /// Emits `signal` of `interface` from `path` to everyone listening.
    pub fn emit(&self, path: &str, interface: &str, signal: &str, args: &Variant) {
        self.connection
            .emit_signal(None, path, interface, signal, Some(args))
            .unwrap();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.connection.close_sync(gio::Cancellable::NONE);
        self.main_loop.quit();
    }
}
