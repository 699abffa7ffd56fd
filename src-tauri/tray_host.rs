//! Whether the desktop shows tray icons at all. A tray icon with no host to show it
//! is silently invisible (stock GNOME, a bare X server), and closing the window to it
//! would make the app vanish; then close quits instead, and Settings says why.
//!
//! Two kinds of host exist on Linux: a StatusNotifier host (KDE, most panels, GNOME
//! with the AppIndicator extension), registered with the watcher on the session bus;
//! and an XEmbed system tray, the owner of the X selection `_NET_SYSTEM_TRAY_S<n>`
//! (libayatana-appindicator falls back to it).

/// Why tray icons cannot be shown here, if they cannot.
pub fn problem() -> Option<String> {
    if shown() {
        None
    } else {
        Some(NO_TRAY.to_owned())
    }
}

/// What Settings says when there is no tray.
pub const NO_TRAY: &str = "This desktop shows no tray icons (it has no StatusNotifier host \
     or system tray), so closing the window quits Cairn instead of hiding it. On GNOME, the \
     AppIndicator extension adds a tray.";

#[cfg(target_os = "linux")]
fn shown() -> bool {
    status_notifier_host() || xembed_tray()
}

#[cfg(not(target_os = "linux"))]
fn shown() -> bool {
    true
}

/// The StatusNotifier watcher on the session bus says a host registered with it.
#[cfg(target_os = "linux")]
fn status_notifier_host() -> bool {
    use gio::glib::Variant;
    use gio::{BusType, DBusCallFlags};

    let Ok(connection) = gio::bus_get_sync(BusType::Session, gio::Cancellable::NONE) else {
        return false;
    };
    let reply = connection.call_sync(
        Some("org.kde.StatusNotifierWatcher"),
        "/StatusNotifierWatcher",
        "org.freedesktop.DBus.Properties",
        "Get",
        Some(
            &(
                "org.kde.StatusNotifierWatcher",
                "IsStatusNotifierHostRegistered",
            )
                .into(),
        ),
        None,
        DBusCallFlags::NO_AUTO_START,
        500,
        gio::Cancellable::NONE,
    );
    reply
        .ok()
        .and_then(|reply| reply.try_child_value(0))
        .and_then(|boxed| boxed.as_variant())
        .and_then(|value: Variant| value.get::<bool>())
        .unwrap_or(false)
}

/// An X client owns the system tray selection of the default screen.
#[cfg(target_os = "linux")]
fn xembed_tray() -> bool {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::ConnectionExt as _;

    let Ok((connection, screen)) = x11rb::connect(None) else {
        return false;
    };
    let name = format!("_NET_SYSTEM_TRAY_S{screen}");
    let owner = connection
        .intern_atom(true, name.as_bytes())
        .ok()
        .and_then(|cookie| cookie.reply().ok())
        .map(|reply| reply.atom)
        .filter(|atom| *atom != x11rb::NONE)
        .and_then(|atom| connection.get_selection_owner(atom).ok())
        .and_then(|cookie| cookie.reply().ok())
        .map(|reply| reply.owner);
    drop(connection.flush());
    owner.is_some_and(|owner| owner != x11rb::NONE)
}
