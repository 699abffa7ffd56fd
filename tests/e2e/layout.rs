//! The window at its edges: the smallest size, 200% zoom, toasts that leave and cover
//! nothing, and the chat menu.

use std::time::Duration;

use serde_json::json;

use crate::harness::{App, Home, text_of};
use crate::model::Model;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn at_the_smallest_window_size_everything_stays_reachable() {
    let model = Model::start().await;
    model.calls(
        "w1",
        "write_file",
        json!({"path": "notes.md", "content": "kept"}),
    );
    let home = Home::new();
    let workspace = home.workspace();
    let app = model.launch(&home).await;
    app.resize(800, 600).await;
    app.choose_workspace(&workspace).await;
    app.send("Write the notes").await;
    app.wait_for(".approval").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    app.screenshot("smallest-window").await;
    assert_placeholder_fits(&app).await;
    assert_usable(
        &app,
        &[
            ".approval-buttons .primary",
            ".approval-buttons .danger",
            ".stop",
            ".mode-select",
            ".composer-input",
        ],
    )
    .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn at_200_percent_zoom_the_chat_stays_usable_and_the_zoom_is_kept() {
    let model = Model::start().await;
    model.says(&["Big enough to read."]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Zoom in").await;
    app.wait_for_text(".message.assistant .md", "Big enough to read.")
        .await;
    app.wait_for(".send").await; // the turn is over
    let width = app.js("return window.innerWidth;").await.as_f64().unwrap();
    assert_placeholder_fits(&app).await;
    for step in 0..5 {
        // 110, 125, 150, 175, 200%.
        app.press_chord("=").await;
        let zoomed = [1.1, 1.25, 1.5, 1.75, 2.0][step];
        app.wait_for_js(&format!(
            "return Math.abs(window.innerWidth * {zoomed} - {width}) <= 2;"
        ))
        .await;
        assert_placeholder_fits(&app).await;
    }
    app.wait_for_js(&format!(
        "return Math.abs(window.innerWidth * 2 - {width}) <= 2;"
    ))
    .await;
    app.screenshot("zoom-200").await;
    assert_usable(&app, &[".composer-input", ".send", ".sidebar-toggle"]).await;
    assert_eq!(
        app.js("return getComputedStyle(document.querySelector('.sidebar')).display;")
            .await,
        json!("none"),
        "too narrow for the chats beside the thread: they wait behind the toggle"
    );
    // WebKitWebDriver aims its clicks without the page zoom: click from inside.
    app.js("document.querySelector('.sidebar-toggle').click();")
        .await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.sidebar')).display === 'flex';",
    )
    .await;
    app.screenshot("zoom-200-chats").await;
    app.js("document.querySelector('.thread-title').click();")
        .await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.sidebar')).display === 'none';",
    )
    .await;
    // A click beside the chats, on the dimmed thread, closes them too.
    app.js("document.querySelector('.sidebar-toggle').click();")
        .await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.backdrop')).display === 'block';",
    )
    .await;
    app.js("document.querySelector('.backdrop').click();").await;
    app.wait_for_js(
        "return getComputedStyle(document.querySelector('.sidebar')).display === 'none' \
         && getComputedStyle(document.querySelector('.backdrop')).display === 'none';",
    )
    .await;
    app.quit().await;

    // The zoom is a setting: the next start has it.
    let app = model.launch(&home).await;
    app.wait_for_js(&format!(
        "return Math.abs(window.innerWidth * 2 - {width}) <= 2;"
    ))
    .await;
    app.press_chord("0").await;
    app.wait_for_js(&format!(
        "return Math.abs(window.innerWidth - {width}) <= 2;"
    ))
    .await;
    app.quit().await;
}

/// The composer's placeholder fits on its one line, whole.
async fn assert_placeholder_fits(app: &App) {
    let room = app
        .js(
            "const t = document.querySelector('.composer-input'), s = getComputedStyle(t); \
             const c = document.createElement('canvas').getContext('2d'); c.font = s.font; \
             return [c.measureText(t.placeholder).width, \
                     t.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];",
        )
        .await;
    let (needed, has) = (room[0].as_f64().unwrap(), room[1].as_f64().unwrap());
    assert!(
        needed <= has,
        "the placeholder needs {needed} px and has {has}"
    );
}

/// Every text field's placeholder under `scope` fits in its field, whole.
pub(crate) async fn assert_placeholders_fit(app: &App, scope: &str) {
    let cut = app
        .js(&format!(
            "const c = document.createElement('canvas').getContext('2d'); \
             return [...document.querySelectorAll('{scope} input[placeholder], {scope} textarea[placeholder]')] \
               .filter(e => e.offsetParent !== null && e.placeholder) \
               .filter(e => {{ const s = getComputedStyle(e); c.font = s.font; \
                 return c.measureText(e.placeholder).width > \
                   e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }}) \
               .map(e => e.placeholder);"
        ))
        .await;
    assert_eq!(cut, json!([]), "placeholders cut off");
}

/// Nothing sticks out sideways, and each of `controls` is inside the window.
pub(crate) async fn assert_usable(app: &App, controls: &[&str]) {
    let overflow = app
        .js("return document.documentElement.scrollWidth - window.innerWidth;")
        .await;
    assert!(
        overflow.as_i64().is_some_and(|px| px <= 0),
        "{overflow} px too wide"
    );
    for control in controls {
        let inside = app
            .js(&format!(
                "const r = document.querySelector('{control}').getBoundingClientRect(); \
                 return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth \
                     && r.top >= 0 && r.bottom <= window.innerHeight;"
            ))
            .await;
        assert_eq!(inside, json!(true), "{control} is outside the window");
    }
}

/// The controls (buttons, fields, menus) a toast lies on top of, by class: the part
/// of each that its scrolling containers leave visible, against the toast's box.
async fn controls_under_the_toast(app: &App) -> serde_json::Value {
    app.js(
        "const t = document.querySelector('.toast').getBoundingClientRect(); \
         const shown = e => { let r = e.getBoundingClientRect(); \
           let box = {l: r.left, r: r.right, t: r.top, b: r.bottom}; \
           for (let a = e.parentElement; a; a = a.parentElement) { \
             if (getComputedStyle(a).overflowY === 'visible') continue; \
             const c = a.getBoundingClientRect(); \
             box = {l: Math.max(box.l, c.left), r: Math.min(box.r, c.right), \
                    t: Math.max(box.t, c.top), b: Math.min(box.b, c.bottom)}; } \
           return box; }; \
         return [...document.querySelectorAll('button, select, input, textarea')] \
           .filter(e => !e.closest('.toast')) \
           .filter(e => { const v = shown(e); \
             return v.r > v.l && v.b > v.t && v.l < t.right && v.r > t.left \
               && v.t < t.bottom && v.b > t.top; }) \
           .map(e => e.className || e.tagName);",
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn toasts_leave_by_themselves_and_never_cover_a_control() {
    let model = Model::start().await;
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("/export md").await;
    app.wait_for_text(".toast", "Nothing to export yet").await;
    app.screenshot("toast").await;
    assert_eq!(controls_under_the_toast(&app).await, json!([]));
    let shown = std::time::Instant::now();
    app.wait_for_js("return document.querySelector('.toast') === null;")
        .await;
    assert!(
        shown.elapsed() >= Duration::from_secs(3),
        "long enough to read"
    );

    // In Settings too, above the save button rather than over it.
    app.click(".chat-head [aria-label='Settings']").await;
    app.click(".save-settings").await;
    app.wait_for_text(".toast", "Settings saved").await;
    assert_eq!(controls_under_the_toast(&app).await, json!([]));
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_chat_menu_closes_on_escape_or_a_click_elsewhere_and_rename_takes_the_keys() {
    let model = Model::start().await;
    model.says(&["Hi."]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Name me").await;
    app.wait_for_text(".message.assistant .md", "Hi.").await;
    // The head re-renders as the turn ends; a menu opened before that would close.
    app.wait_for(".turn.finished").await;

    app.click(".thread-menu").await;
    app.wait_for(".menu").await;
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_js("return document.querySelector('.menu') === null;")
        .await;

    app.click(".thread-menu").await;
    app.wait_for(".menu").await;
    app.click(".chat-title").await;
    app.wait_for_js("return document.querySelector('.menu') === null;")
        .await;

    app.click(".thread-menu").await;
    app.wait_for_text(".menu button", "Rename").await;
    app.js("[...document.querySelectorAll('.menu button')].find(b => b.textContent === 'Rename').click();")
        .await;
    app.wait_for_js(
        "return document.activeElement && document.activeElement.classList.contains('rename');",
    )
    .await;
    // Typed where the focus is, as a user would, without clicking into the field.
    app.driver
        .action_chain()
        .send_keys("Named")
        .send_keys(thirtyfour::Key::Enter)
        .perform()
        .await
        .unwrap();
    let title = text_of(&app.wait_for_text(".thread-title", "Named").await).await;
    assert_eq!(
        title.trim(),
        "Named",
        "the old name was selected, so typing replaced it"
    );
    app.quit().await;
}
