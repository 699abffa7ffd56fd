//! The tray icon: the app stays there while the window is hidden and turns run.

use cairn_protocol::PromptProgress;
use cairn_protocol::desktop::ShellEvent;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager};

use crate::state::AppState;
use crate::window;

const TRAY: &str = "cairn";

/// The menu line that counts running turns, updated as they start and end.
struct RunningItem(MenuItem<tauri::Wry>);

pub fn create(app: &AppHandle) -> tauri::Result<()> {
    let show = MenuItem::with_id(app, "toggle", "Show / Hide Cairn", true, None::<&str>)?;
    let new_chat = MenuItem::with_id(app, "new_chat", "New chat", true, None::<&str>)?;
    let running = MenuItem::with_id(app, "running", running_text(0), false, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit Cairn", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &show,
            &new_chat,
            &PredefinedMenuItem::separator(app)?,
            &running,
            &PredefinedMenuItem::separator(app)?,
            &quit,
        ],
    )?;
    app.manage(RunningItem(running));
    let mut tray = TrayIconBuilder::with_id(TRAY)
        .tooltip("Cairn")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "toggle" => toggle(app),
            "new_chat" => {
                window::summon(app);
                app.state::<AppState>().tell(ShellEvent::NewChat);
            }
            "quit" => window::quit(app),
            _ => {}
        })
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                toggle(tray.app_handle());
            }
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    Ok(())
}

/// Shows the count of running turns in the menu and the tooltip.
pub fn show_running(app: &AppHandle, running: usize) {
    let text = running_text(running);
    if let Some(item) = app.try_state::<RunningItem>() {
        let _ = item.0.set_text(&text);
    }
    if let Some(tray) = app.tray_by_id(TRAY) {
        let tooltip = if running == 0 {
            "Cairn".to_owned()
        } else {
            format!("Cairn: {text}")
        };
        let _ = tray.set_tooltip(Some(tooltip));
    }
}

/// The tooltip while a turn's prompt is read ("Cairn: Notes: reading the prompt: 1,200
/// of 1,900 tokens · 8 s left"), back to the running count once it is read.
pub fn show_reading(app: &AppHandle, title: &str, progress: &PromptProgress, running: usize) {
    if !progress.worth_showing() {
        show_running(app, running);
        return;
    }
    if let Some(tray) = app.tray_by_id(TRAY) {
        let _ = tray.set_tooltip(Some(format!("Cairn: {title}: {}", progress.said())));
    }
}

pub fn running_text(running: usize) -> String {
    match running {
        0 => "No replies running".to_owned(),
        1 => "1 reply running".to_owned(),
        n => format!("{n} replies running"),
    }
}

fn toggle(app: &AppHandle) {
    let visible = app
        .get_webview_window(window::MAIN)
        .is_some_and(|window| window.is_visible().unwrap_or(false));
    if visible {
        window::hide(app);
    } else {
        window::summon(app);
    }
}
