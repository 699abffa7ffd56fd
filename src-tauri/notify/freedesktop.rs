//! Linux: the notification service (`org.freedesktop.Notifications`) over the
//! session bus GTK already holds. Every call, reply and signal is handled on the main
//! loop, the one ordering that lets an approval answered in the window withdraw its
//! notification even before the service has said which id it got.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock, PoisonError};

use gio::glib::{self, ToVariant, Variant};
use gio::{DBusCallFlags, DBusConnection, DBusSignalFlags};
use tauri::{AppHandle, Manager};

use super::{About, Message, Notifications, respond, response, still_wanted};

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// How long a call to the service may take before it counts as gone.
const TIMEOUT_MS: i32 = 5_000;

/// The session bus, and what is on screen by the id the service gave it.
#[derive(Default)]
pub struct Shown {
    connection: OnceLock<Option<DBusConnection>>,
    on_screen: Mutex<HashMap<u32, About>>,
}

impl Shown {
    fn on_screen(&self) -> std::sync::MutexGuard<'_, HashMap<u32, About>> {
        self.on_screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The bus, connected and listening on first use. Main thread only: the signals
/// are delivered to the context that subscribed.
fn connection(app: &AppHandle) -> Option<DBusConnection> {
    let shown = &app.state::<Notifications>().inner;
    shown
        .connection
        .get_or_init(|| {
            let connection = match gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE)
            {
                Ok(connection) => connection,
                Err(err) => {
                    tracing::warn!(%err, "no session bus: no notifications");
                    return None;
                }
            };
            listen(app, &connection);
            Some(connection)
        })
        .clone()
}

fn listen(app: &AppHandle, connection: &DBusConnection) {
    let clicked = app.clone();
    // Kept for the app's life: the subscription ends with the connection.
    let _ = connection.signal_subscribe(
        Some(SERVICE),
        Some(SERVICE),
        Some("ActionInvoked"),
        Some(PATH),
        None,
        DBusSignalFlags::NONE,
        move |_, _, _, _, _, params| {
            let Some((id, action)) = params.get::<(u32, String)>() else {
                return;
            };
            let about = clicked
                .state::<Notifications>()
                .inner
                .on_screen()
                .remove(&id);
            if let Some(response) = about.and_then(|about| response(&about, &action)) {
                respond(&clicked, response);
            }
        },
    );
    let closed = app.clone();
    let _ = connection.signal_subscribe(
        Some(SERVICE),
        Some(SERVICE),
        Some("NotificationClosed"),
        Some(PATH),
        None,
        DBusSignalFlags::NONE,
        move |_, _, _, _, _, params| {
            if let Some((id, _reason)) = params.get::<(u32, u32)>() {
                closed
                    .state::<Notifications>()
                    .inner
                    .on_screen()
                    .remove(&id);
            }
        },
    );
}

/// Shows a notification; `message` is told whether the service shows buttons.
pub fn show(app: &AppHandle, about: About, message: impl FnOnce(bool) -> Message + Send + 'static) {
    let app = app.clone();
    let on_main = app.clone();
    let ran = on_main.run_on_main_thread(move || {
        let Some(connection) = connection(&app) else {
            return;
        };
        glib::MainContext::default().spawn_local(async move {
            let buttons = offers_actions(&connection).await;
            match notify(&connection, &message(buttons)).await {
                Ok(id) => keep(&app, &connection, id, about),
                Err(err) => tracing::warn!(%err, "the notification could not be shown"),
            }
        });
    });
    if let Err(err) = ran {
        tracing::warn!(%err, "the notification could not be sent to the main loop");
    }
}

/// Remembers a shown notification, unless its approval was answered while the
/// service was still answering `Notify`: then it goes at once.
fn keep(app: &AppHandle, connection: &DBusConnection, id: u32, about: About) {
    if !still_wanted(app, &about) {
        close(connection, id);
        return;
    }
    app.state::<Notifications>()
        .inner
        .on_screen()
        .insert(id, about);
}

pub fn withdraw(app: &AppHandle, waiting: HashSet<String>) {
    let app = app.clone();
    let on_main = app.clone();
    let _ = on_main.run_on_main_thread(move || {
        let shown = &app.state::<Notifications>().inner;
        let Some(Some(connection)) = shown.connection.get() else {
            return;
        };
        let mut on_screen = shown.on_screen();
        on_screen.retain(|id, about| match about {
            About::Approval { approval_id, .. } if !waiting.contains(approval_id) => {
                close(connection, *id);
                false
            }
            _ => true,
        });
    });
}

/// A service that does not list `actions` would drop the buttons silently, and
/// the text must then say where to answer.
async fn offers_actions(connection: &DBusConnection) -> bool {
    let reply = connection
        .call_future(
            Some(SERVICE),
            PATH,
            SERVICE,
            "GetCapabilities",
            None,
            None,
            DBusCallFlags::NONE,
            TIMEOUT_MS,
        )
        .await;
    reply
        .ok()
        .and_then(|reply| reply.get::<(Vec<String>,)>())
        .is_some_and(|(capabilities,)| capabilities.iter().any(|c| c == "actions"))
}

async fn notify(connection: &DBusConnection, message: &Message) -> Result<u32, glib::Error> {
    let actions: Vec<&str> = message
        .actions
        .iter()
        .flat_map(|(key, label)| [*key, *label])
        .collect();
    let hints: HashMap<&str, Variant> = HashMap::from([("category", "im.received".to_variant())]);
    let args = (
        "Cairn",
        0_u32,
        "",
        message.summary.as_str(),
        message.body.as_str(),
        actions,
        hints,
        -1_i32,
    )
        .to_variant();
    let reply = connection
        .call_future(
            Some(SERVICE),
            PATH,
            SERVICE,
            "Notify",
            Some(&args),
            None,
            DBusCallFlags::NONE,
            TIMEOUT_MS,
        )
        .await?;
    Ok(reply.get::<(u32,)>().map_or(0, |(id,)| id))
}

fn close(connection: &DBusConnection, id: u32) {
    connection.call(
        Some(SERVICE),
        PATH,
        SERVICE,
        "CloseNotification",
        Some(&(id,).to_variant()),
        None,
        DBusCallFlags::NONE,
        TIMEOUT_MS,
        gio::Cancellable::NONE,
        move |reply| {
            if let Err(err) = reply {
                tracing::debug!(%err, id, "a notification could not be withdrawn");
            }
        },
    );
}
