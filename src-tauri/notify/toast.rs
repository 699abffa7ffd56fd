//! Windows: toasts through WinRT's `ToastNotificationManager`, under the app's
//! identifier as its AppUserModelID. An app installed without an MSIX package has no
//! such id until it registers one: Cairn writes it under
//! `HKEY_CURRENT_USER\Software\Classes\AppUserModelId\<identifier>` (a display name and
//! the icon the installer put beside the program), as Windows App SDK does for
//! unpackaged apps, and the uninstaller takes the key away.
//!
//! A click is heard through the toast's `Activated` event, which reaches the running
//! app only; Cairn lives in the tray, so it is running while its toasts are on screen.
//! A toast clicked in the notification centre after Cairn quit would need a COM
//! activator registered with Windows: not built (README, Windows).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tauri::{AppHandle, Manager};
use windows::Data::Xml::Dom::XmlDocument;
use windows::Foundation::TypedEventHandler;
use windows::UI::Notifications::{
    ToastActivatedEventArgs, ToastDismissalReason, ToastDismissedEventArgs, ToastNotification,
    ToastNotificationManager,
};
use windows::core::{HSTRING, IInspectable, Interface, Ref};

use super::{About, Message, Notifications, respond, response, still_wanted, toast_xml};
use crate::registry;

/// The group every Cairn toast is in, so that one can be taken back by its tag.
const GROUP: &str = "cairn";

/// What is on screen, by the tag each toast was given.
#[derive(Default)]
pub struct Shown {
    next_tag: AtomicU64,
    on_screen: Mutex<HashMap<String, (About, ToastNotification)>>,
}

impl Shown {
    fn on_screen(&self) -> MutexGuard<'_, HashMap<String, (About, ToastNotification)>> {
        self.on_screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Shows a toast; toasts always show their buttons.
pub fn show(app: &AppHandle, about: About, message: impl FnOnce(bool) -> Message + Send + 'static) {
    let message = message(true);
    if let Err(err) = try_show(app, about, &message) {
        tracing::warn!(%err, "the notification could not be shown");
    }
}

fn try_show(app: &AppHandle, about: About, message: &Message) -> windows::core::Result<()> {
    let app_id = app_id(app);
    let notifier = ToastNotificationManager::CreateToastNotifierWithId(&app_id)?;
    let xml = XmlDocument::new()?;
    xml.LoadXml(&HSTRING::from(toast_xml::toast(message)))?;
    let toast = ToastNotification::CreateToastNotification(&xml)?;
    let shown = &app.state::<Notifications>().inner;
    let tag = shown.next_tag.fetch_add(1, Ordering::Relaxed).to_string();
    toast.SetTag(&HSTRING::from(&tag))?;
    toast.SetGroup(&HSTRING::from(GROUP))?;

    let (clicked, clicked_tag) = (app.clone(), tag.clone());
    toast.Activated(&TypedEventHandler::new(
        move |_: Ref<ToastNotification>, args: Ref<IInspectable>| {
            let action = args
                .ok()
                .and_then(|args| args.cast::<ToastActivatedEventArgs>())
                .and_then(|args| args.Arguments())
                .map(|arguments| arguments.to_string_lossy())
                .unwrap_or_default();
            activated(&clicked, &clicked_tag, &action);
            Ok(())
        },
    ))?;
    let (dismissed, dismissed_tag) = (app.clone(), tag.clone());
    toast.Dismissed(&TypedEventHandler::new(
        move |_: Ref<ToastNotification>, args: Ref<ToastDismissedEventArgs>| {
            // One that timed out waits in the notification centre, where its buttons
            // still answer; only one the user or the app closed is gone.
            let timed_out = args
                .ok()
                .and_then(ToastDismissedEventArgs::Reason)
                .is_ok_and(|reason| reason == ToastDismissalReason::TimedOut);
            if !timed_out {
                dismissed
                    .state::<Notifications>()
                    .inner
                    .on_screen()
                    .remove(&dismissed_tag);
            }
            Ok(())
        },
    ))?;

    // Held while the toast is shown: `withdraw` then either finds it or runs before,
    // and an approval answered before is seen here.
    let mut on_screen = shown.on_screen();
    if !still_wanted(app, &about) {
        return Ok(());
    }
    notifier.Show(&toast)?;
    on_screen.insert(tag, (about, toast));
    Ok(())
}

/// A click on the toast (`action` is its launch argument) or on one of its buttons.
/// WinRT calls this on a thread of its own; the answer goes to the main thread, where
/// the window's own answers are given.
fn activated(app: &AppHandle, tag: &str, action: &str) {
    let about = app
        .state::<Notifications>()
        .inner
        .on_screen()
        .remove(tag)
        .map(|(about, _)| about);
    let Some(response) = about.and_then(|about| response(&about, action)) else {
        return;
    };
    let on_main = app.clone();
    if let Err(err) = app.run_on_main_thread(move || respond(&on_main, response)) {
        tracing::warn!(%err, "a click on a notification could not reach the main loop");
    }
}

pub fn withdraw(app: &AppHandle, waiting: HashSet<String>) {
    let app_id = app_id(app);
    let notifications = app.state::<Notifications>();
    notifications
        .inner
        .on_screen()
        .retain(|tag, (about, toast)| match about {
            About::Approval { approval_id, .. } if !waiting.contains(approval_id) => {
                take_back(&app_id, tag, toast);
                false
            }
            _ => true,
        });
}

/// Takes a toast off the screen and out of the notification centre.
fn take_back(app_id: &HSTRING, tag: &str, toast: &ToastNotification) {
    let hidden = ToastNotificationManager::CreateToastNotifierWithId(app_id)
        .and_then(|notifier| notifier.Hide(toast));
    let removed = ToastNotificationManager::History().and_then(|history| {
        history.RemoveGroupedTagWithId(&HSTRING::from(tag), &HSTRING::from(GROUP), app_id)
    });
    if let Err(err) = hidden.and(removed) {
        tracing::debug!(%err, tag, "a notification could not be withdrawn");
    }
}

/// The app's AppUserModelID, registered for this user (once per run) so that Windows
/// shows toasts under it.
fn app_id(app: &AppHandle) -> HSTRING {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    let id = &app.config().identifier;
    REGISTERED.call_once(|| {
        let icon = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.join("icon.ico")))
            .filter(|icon| icon.is_file());
        if let Err(err) = register(id, "Cairn", icon.as_deref()) {
            tracing::warn!(%err, "the app's notification name could not be registered");
        }
    });
    HSTRING::from(id.as_str())
}

/// The registry key an unpackaged app's AppUserModelID is described under.
fn app_id_key(id: &str) -> String {
    format!(r"Software\Classes\AppUserModelId\{id}")
}

/// Describes the app id `id` to Windows: the name its toasts show, and its icon.
fn register(id: &str, name: &str, icon: Option<&std::path::Path>) -> std::io::Result<()> {
    let key = app_id_key(id);
    registry::set_string(&key, "DisplayName", name)?;
    match icon {
        Some(icon) => registry::set_string(&key, "IconUri", &icon.display().to_string()),
        None => registry::delete_value(&key, "IconUri"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_app_id_is_described_under_the_current_user() {
        let id = "dev.cairn.test-notifications";
        let key = app_id_key(id);
        let icon = Path::new(r"C:\Users\Ada\AppData\Local\Programs\Cairn\icon.ico");
        register(id, "Cairn", Some(icon)).unwrap();
        assert_eq!(
            registry::held(&key, "DisplayName").as_deref(),
            Some("Cairn")
        );
        assert_eq!(
            registry::held(&key, "IconUri").as_deref(),
            Some(r"C:\Users\Ada\AppData\Local\Programs\Cairn\icon.ico")
        );
        // Run from where no icon sits beside it, the old icon is not kept.
        register(id, "Cairn", None).unwrap();
        assert_eq!(registry::held(&key, "IconUri"), None);
        assert_eq!(
            registry::held(&key, "DisplayName").as_deref(),
            Some("Cairn")
        );
    }
}
