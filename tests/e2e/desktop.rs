//! The app on the desktop: the summon shortcut (X11 and the Wayland portal), one
//! instance, the tray, start at login and quitting.

use std::time::Duration;

use serde_json::json;

use crate::model::Model;
use crate::{
    CHAT, fake_portal,
    harness::{self, App, Home, text_of},
    held_answer,
    layout::assert_usable,
    numbered, session,
};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_summon_shortcut_brings_back_the_composer() {
    let model = Model::start().await;
    let home = Home::new();
    let app = model.launch(&home).await;
    app.click(".search").await;
    app.wait_for_js("return document.activeElement.classList.contains('search');")
        .await;
    app.unfocus_window().await;

    session::press_keys("ctrl+shift+space");
    app.wait_for_js("return document.activeElement.classList.contains('composer-input');")
        .await;
    assert!(session::app_has_focus(), "the window came to the front");
    app.quit().await;
}

/// The session bus `dbus-run-session` gave the tests (and the app).
fn session_bus() -> String {
    std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("a session bus: run under dbus-run-session")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn on_wayland_the_desktop_portal_binds_the_summon_shortcut() {
    let portal = fake_portal::FakePortal::start(&session_bus(), 0);
    let model = Model::start().await;
    let home = Home::new();
    let app = App::launch_with(&home, &model.url(), &[("XDG_SESSION_TYPE", "wayland")]).await;
    let start = std::time::Instant::now();
    while portal.seen.lock().unwrap().triggers.is_empty() {
        assert!(
            start.elapsed() < harness::PATIENCE,
            "the app never bound its shortcut"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(portal.seen.lock().unwrap().triggers, ["CTRL+SHIFT+space"]);
    app.click(".search").await;
    app.wait_for_js("return document.activeElement.classList.contains('search');")
        .await;
    app.unfocus_window().await;

    // The desktop tells the app the key was pressed; no X key grab is involved.
    portal.press(cairn_desktop::portal::SUMMON);
    app.wait_for_js("return document.activeElement.classList.contains('composer-input');")
        .await;
    assert!(session::app_has_focus(), "the window came to the front");
    app.click(".chat-head [aria-label='Settings']").await;
    assert_eq!(
        app.count(".shortcut-problem").await,
        0,
        "Settings has nothing to say"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn on_wayland_without_the_portal_settings_say_the_shortcut_cannot_work() {
    let model = Model::start().await;
    let home = Home::new();
    let app = App::launch_with(&home, &model.url(), &[("XDG_SESSION_TYPE", "wayland")]).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(".shortcut-problem", "no global shortcuts portal")
        .await;
    // The server check redraws the page when it ends: scroll once it has.
    app.wait_for_js("return !document.querySelector('.status').innerText.includes('Connecting');")
        .await;
    app.js("document.querySelector('.shortcut-problem').scrollIntoView({block: 'center'});")
        .await;
    assert_usable(&app, &[".shortcut-problem"]).await;
    app.screenshot("settings-wayland-without-portal").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_second_launch_brings_the_first_forward_and_ends() {
    let model = Model::start().await;
    model.says(&["Yes."]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Still here?").await;
    app.wait_for_text(".thread-title", "Still here?").await;
    app.click(".search").await;
    app.wait_for_js("return document.activeElement.classList.contains('search');")
        .await;
    app.unfocus_window().await;

    let status = App::launch_again(&home, &model.url()).await;
    assert!(status.success(), "the second launch ended with {status}");
    app.wait_for_js("return document.activeElement.classList.contains('composer-input');")
        .await;
    assert!(
        session::app_has_focus(),
        "the first window came to the front"
    );
    let exe = std::path::Path::new(harness::app()).canonicalize().unwrap();
    let apps = harness::processes_running(&exe);
    assert_eq!(apps.len(), 1, "one app runs: {apps:?}");
    // The first instance is the one the user had: its chat is still open.
    app.wait_for_text(".thread-title", "Still here?").await;

    // Every later launch ends cleanly too. One in about a hundred once crashed on
    // its way out (exit() ran the libraries' teardown under their running threads).
    for launch in 0..LATER_LAUNCHES {
        let status = App::launch_again(&home, &model.url()).await;
        assert!(status.success(), "launch {launch} ended with {status}");
    }
    assert_eq!(harness::processes_running(&exe).len(), 1);
    app.quit().await;
}

/// How many more launches the single-instance test makes.
const LATER_LAUNCHES: usize = 30;

/// Waits until no app runs (it quit).
async fn wait_for_the_app_to_end() {
    let exe = std::path::Path::new(harness::app()).canonicalize().unwrap();
    let start = std::time::Instant::now();
    while !harness::processes_running(&exe).is_empty() {
        assert!(
            start.elapsed() < harness::PATIENCE,
            "the app is still running"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn without_a_tray_closing_the_window_quits_and_settings_says_why() {
    let model = Model::start().await;
    let home = Home::new();
    let app = model.launch(&home).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(".tray-problem", "closing the window quits Cairn")
        .await;
    assert_eq!(
        app.js("return document.querySelector('.close-to-tray').disabled;")
            .await,
        json!(true)
    );
    app.screenshot("settings-without-tray").await;
    session::close_app_window();
    wait_for_the_app_to_end().await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn start_at_login_writes_an_autostart_entry_that_starts_cairn_hidden_in_the_tray() {
    let _tray = session::SystemTray::own();
    let model = Model::start().await;
    let home = Home::new();
    let app = model.launch(&home).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.click(".start-at-login").await;
    app.click(".save-settings").await;
    let entry = home.autostart_entry();
    let start = std::time::Instant::now();
    while !entry.exists() {
        assert!(start.elapsed() < harness::PATIENCE, "no autostart entry");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let written = std::fs::read_to_string(&entry).unwrap();
    let exe = std::path::Path::new(harness::app()).canonicalize().unwrap();
    assert!(
        written.contains(&format!("\nExec=\"{}\" --hidden\n", exe.display())),
        "{written}"
    );
    app.screenshot("settings-start-at-login").await;
    app.quit().await;

    // Started as the session would start it: no window until summoned.
    let app = App::launch_with_args(&home, &model.url(), &["--hidden"]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!session::app_window_shown(), "started hidden, in the tray");
    session::press_keys("ctrl+shift+space");
    let start = std::time::Instant::now();
    while !session::app_window_shown() {
        assert!(
            start.elapsed() < harness::PATIENCE,
            "the shortcut did not bring it"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.click(".chat-head [aria-label='Settings']").await;
    let checked = "return document.querySelector('.start-at-login').checked";
    assert_eq!(app.js(checked).await, true, "the choice is kept");
    app.click(".start-at-login").await;
    app.click(".save-settings").await;
    let start = std::time::Instant::now();
    while entry.exists() {
        assert!(start.elapsed() < harness::PATIENCE, "the entry stayed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn with_a_tray_closing_the_window_hides_it_and_the_reply_goes_on() {
    let _tray = session::SystemTray::own();
    let model = Model::start().await;
    // The reply goes on only once the window is hidden.
    model.push(CHAT, held_answer(&numbered("part", 8), 1, "hidden"));
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Keep going while hidden").await;
    app.wait_for_text(".message.assistant .md", "part1").await;
    session::close_app_window();
    let start = std::time::Instant::now();
    while session::app_window_shown() {
        assert!(start.elapsed() < harness::PATIENCE, "the window stayed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exe = std::path::Path::new(harness::app()).canonicalize().unwrap();
    assert_eq!(harness::processes_running(&exe).len(), 1, "still running");
    model.open_gate("hidden");
    session::press_keys("ctrl+shift+space");
    // Read once finished (the element drawn while it streams is replaced at the end).
    let done = text_of(
        &app.wait_for_text(".message.assistant .turn.finished .md", "part8")
            .await,
    )
    .await;
    assert!(done.starts_with("part1 part2"), "{done}");
    assert!(session::app_window_shown());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn quitting_while_a_reply_runs_asks_and_the_question_follows_the_reply() {
    let model = Model::start().await;
    // The reply holds after its first word until the test lets it finish.
    let words = ["word1 ", "word2 ", "word12"].map(String::from);
    model.push(CHAT, held_answer(&words, 1, "finish"));
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Write for a few seconds").await;
    app.wait_for_text(".message.assistant .md", "word1").await;
    // No tray here: closing the window quits, and a reply is still being written.
    session::close_app_window();
    app.wait_for_text(".quit-text", "1 running").await;
    app.screenshot("quit-while-running").await;
    model.open_gate("finish");
    app.wait_for_text(".quit-text", "The replies have finished")
        .await;
    app.screenshot("quit-after-the-reply").await;
    // Clicked after the script returns: the app ends under WebDriver's feet.
    app.js("setTimeout(() => document.querySelector('.quit-confirm').click(), 100);")
        .await;
    wait_for_the_app_to_end().await;
    app.quit().await;

    // The answer was kept whole: it finished before the quit.
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let threads = store
        .list_threads(cairn_store::Page {
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    let messages = store.messages(&threads[0].id).await.unwrap();
    assert!(messages[1].content.trim_end().ends_with("word12"));
    assert_eq!(messages[1].status, cairn_protocol::MessageStatus::Complete);
}
