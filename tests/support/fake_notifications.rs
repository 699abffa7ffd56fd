//! A fake notification service (`org.freedesktop.Notifications`) on a D-Bus bus: it
//! records what it is asked to show and to close, and a test clicks a button on a
//! notification the way a user would on dunst, GNOME Shell or Plasma.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gio::glib::{ToVariant, Variant};
use gio::{DBusConnection, DBusMethodInvocation};

use crate::private_bus::Service;

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

const INTERFACE: &str = r#"<node>
  <interface name="org.freedesktop.Notifications">
    <method name="GetCapabilities">
      <arg type="as" name="capabilities" direction="out"/>
    </method>
    <method name="Notify">
      <arg type="s" name="app_name" direction="in"/>
      <arg type="u" name="replaces_id" direction="in"/>
      <arg type="s" name="app_icon" direction="in"/>
      <arg type="s" name="summary" direction="in"/>
      <arg type="s" name="body" direction="in"/>
      <arg type="as" name="actions" direction="in"/>
      <arg type="a{sv}" name="hints" direction="in"/>
      <arg type="i" name="expire_timeout" direction="in"/>
      <arg type="u" name="id" direction="out"/>
    </method>
    <method name="CloseNotification">
      <arg type="u" name="id" direction="in"/>
    </method>
    <method name="GetServerInformation">
      <arg type="s" name="name" direction="out"/>
      <arg type="s" name="vendor" direction="out"/>
      <arg type="s" name="version" direction="out"/>
      <arg type="s" name="spec_version" direction="out"/>
    </method>
    <signal name="ActionInvoked">
      <arg type="u" name="id"/>
      <arg type="s" name="action_key"/>
    </signal>
    <signal name="NotificationClosed">
      <arg type="u" name="id"/>
      <arg type="u" name="reason"/>
    </signal>
  </interface>
</node>"#;

/// One `Notify` call.
#[derive(Debug, Clone)]
pub struct Shown {
    pub id: u32,
    pub summary: String,
    pub body: String,
    /// The action keys, without their labels.
    pub actions: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Seen {
    pub shown: Vec<Shown>,
    /// Ids the app asked to close.
    pub closed: Vec<u32>,
}

/// A notification service with or without action buttons. Dropped, the desktop
/// has none.
pub struct FakeNotifications {
    service: Service,
    pub seen: Arc<Mutex<Seen>>,
}

impl FakeNotifications {
    pub fn start(address: &str, with_actions: bool) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let record = Arc::clone(&seen);
        let on_call = move |connection: DBusConnection,
                            _: &str,
                            method: &str,
                            params: Variant,
                            invocation: DBusMethodInvocation| {
            let reply = match method {
                "GetCapabilities" => {
                    let mut capabilities = vec!["body"];
                    if with_actions {
                        capabilities.push("actions");
                    }
                    Some((capabilities,).to_variant())
                }
                "Notify" => Some((notify(&record, &params),).to_variant()),
                "CloseNotification" => {
                    let (id,) = params.get::<(u32,)>().unwrap();
                    record.lock().unwrap().closed.push(id);
                    invocation.return_value(None);
                    closed(&connection, id, 3);
                    return;
                }
                _ => Some(("fake", "cairn tests", "1", "1.2").to_variant()),
            };
            invocation.return_value(reply.as_ref());
        };
        let service = Service::start(address, SERVICE, PATH, INTERFACE, SERVICE, on_call);
        Self { service, seen }
    }

    /// The user clicked the button `action` of notification `id`; like the real
    /// services, the notification then goes away.
    pub fn click(&self, id: u32, action: &str) {
        let args = (id, action).to_variant();
        self.service.emit(PATH, SERVICE, "ActionInvoked", &args);
        closed(&self.service.connection, id, 2);
    }

    /// Waits for a notification after the one numbered `after` (0: any) whose
    /// summary or body holds `needle`.
    pub async fn wait_for(&self, after: u32, needle: &str) -> Shown {
        let start = std::time::Instant::now();
        loop {
            let found = self
                .seen
                .lock()
                .unwrap()
                .shown
                .iter()
                .find(|shown| {
                    shown.id > after
                        && (shown.summary.contains(needle) || shown.body.contains(needle))
                })
                .cloned();
            if let Some(shown) = found {
                return shown;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no notification with {needle:?}: {:?}",
                self.seen.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the app asked to close notification `id`.
    pub async fn wait_for_close(&self, id: u32) {
        let start = std::time::Instant::now();
        while !self.seen.lock().unwrap().closed.contains(&id) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "notification {id} was never withdrawn: {:?}",
                self.seen.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn notify(record: &Mutex<Seen>, params: &Variant) -> u32 {
    let summary = params.child_value(3).str().unwrap().to_owned();
    let body = params.child_value(4).str().unwrap().to_owned();
    let pairs = params.child_value(5).get::<Vec<String>>().unwrap();
    let actions = pairs.chunks(2).map(|pair| pair[0].clone()).collect();
    let mut seen = record.lock().unwrap();
    let id = u32::try_from(seen.shown.len()).unwrap() + 1;
    seen.shown.push(Shown {
        id,
        summary,
        body,
        actions,
    });
    id
}

/// `reason`: 2 dismissed by the user, 3 closed by the app.
fn closed(connection: &DBusConnection, id: u32, reason: u32) {
    connection
        .emit_signal(
            None,
            PATH,
            SERVICE,
            "NotificationClosed",
            Some(&(id, reason).to_variant()),
        )
        .unwrap();
}
