//! A fake XDG GlobalShortcuts portal on a D-Bus bus: what KDE Plasma or GNOME 48
//! answer, with the user agreeing (response 0) or cancelling (1).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cairn_desktop::portal::{PORTAL, PORTAL_PATH, SHORTCUTS};
use gio::glib::{self, ToVariant, Variant, VariantDict};
use gio::{DBusConnection, DBusMethodInvocation};

use crate::private_bus::Service;

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
/// agreed; 1: cancelled). Dropped, the desktop loses its portal.
pub struct FakePortal {
    service: Service,
    pub seen: Arc<Mutex<Seen>>,
}

impl FakePortal {
    /// Serves on the bus at `address` as the desktop portal.
    pub fn start(address: &str, response: u32) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let record = Arc::clone(&seen);
        let on_call = move |connection: DBusConnection,
                            sender: &str,
                            method: &str,
                            params: Variant,
                            invocation: DBusMethodInvocation| {
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
            let path = glib::variant::ObjectPath::try_from(request.as_str()).unwrap();
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
        };
        let service = Service::start(address, PORTAL, PORTAL_PATH, INTERFACE, SHORTCUTS, on_call);
        Self { service, seen }
    }

    /// The desktop saw the key pressed.
    pub fn press(&self, shortcut_id: &str) {
        let session = self.seen.lock().unwrap().session.clone().unwrap();
        let session = glib::variant::ObjectPath::try_from(session.as_str()).unwrap();
        let options: HashMap<String, Variant> = HashMap::new();
        let args = (session, shortcut_id, 0_u64, options).to_variant();
        self.service
            .emit(PORTAL_PATH, SHORTCUTS, "Activated", &args);
    }
}
