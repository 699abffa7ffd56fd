//! Everyone can use the window: each main screen passes axe-core, and a turn with an
//! approval can be walked from the composer to the answer by keyboard alone.

use serde_json::json;

use crate::a11y::assert_accessible;
use crate::harness::{App, Home};
use crate::model::Model;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn every_main_screen_passes_the_accessibility_checker() {
    let model = Model::start().await;
    let home = Home::new();

    let app = model.launch_first_run(&home).await;
    app.open_custom_server().await;
    app.wait_for(".custom-url").await;
    assert_accessible(&app, "the first-run screen").await;
    app.quit().await;

    model.says(&[
        // Every colour the highlighter paints: keyword, comment, number, string, type.
        "Here it is:\n\n```rust\n// greet\nfn main() {\n    let n: u8 = 42;\n    println!(\"hi {n}\");\n}\n```\n\nRun it with `cargo run`.",
    ]);
    model.says_and_calls(
        "One part at a time.",
        &[(
            "s1",
            "run_subtask",
            json!({"title": "Survey the files", "instructions": "List the files."}),
        )],
    );
    model.says_and_calls("Looking.", &[("l1", "list_dir", json!({"path": "."}))]);
    model
        .says(&["One file."])
        .says(&["The survey is done."])
        .calls(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "alpha\nBETA\n"}),
        )
        .says(&["Shouted."])
        .calls(
            "plan1",
            "create_plan",
            json!({"objective": "Tidy the notes", "execution_mode": "draft_only", "steps": [
                {"id": "s1", "title": "Sort the notes", "instructions": "Sort them."}
            ]}),
        )
        .says(&["Here is the plan. Run it?"]);
    let workspace = home.workspace();
    std::fs::write(workspace.join("notes.md"), "alpha\nbeta\n").unwrap();

    let app = model.launch(&home).await;
    app.wait_for(".welcome").await;
    assert_accessible(&app, "an empty chat").await;

    let input = app.wait_for(".composer-input").await;
    input.send_keys("/").await.unwrap();
    app.wait_for(".slash-list").await;
    assert_accessible(&app, "the / menu").await;
    // In the smallest window the list scrolls: the arrows bring each command in sight
    // (Up from the first wraps to the last).
    let rect = app.driver.get_window_rect().await.unwrap();
    app.resize(800, 600).await;
    app.wait_for_js(
        "const list = document.querySelector('.slash-list');          return list.scrollHeight > list.clientHeight;",
    )
    .await;
    input.send_keys(thirtyfour::Key::Up).await.unwrap();
    app.wait_for_js(
        "const list = document.querySelector('.slash-list').getBoundingClientRect();          const last = document.querySelector('.slash-item:last-child');          const item = last.getBoundingClientRect();          return last.classList.contains('selected')            && item.top >= list.top && item.bottom <= list.bottom;",
    )
    .await;
    app.resize(
        rect.width.try_into().unwrap(),
        rect.height.try_into().unwrap(),
    )
    .await;
    input.clear().await.unwrap();

    app.choose_workspace(&workspace).await;
    app.send("Show me hello world").await;
    app.wait_for_text(".message.assistant .md", "Run it with")
        .await;
    app.wait_for(".turn.finished").await;
    assert_accessible(&app, "an answer with code").await;

    app.send("Survey the project").await;
    app.wait_for_text(".message.assistant .md", "The survey is done.")
        .await;
    app.click(".card .card .card-head").await;
    app.wait_for(".card .card .card-body").await;
    assert_accessible(&app, "a nested subtask").await;

    app.send("Shout beta").await;
    app.wait_for(".approval .approval-diff").await;
    assert_accessible(&app, "an open approval with its diff").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Shouted.")
        .await;

    app.send("Plan a tidy-up").await;
    app.wait_for_text(".notice.plan.draft", "Plan p1 is a draft")
        .await;
    assert_accessible(&app, "a plan card").await;

    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for(".settings .base-url").await;
    assert_accessible(&app, "Settings").await;
    app.quit().await;
}

/// What has the keys now: its classes (or its tag).
async fn focused(app: &App) -> String {
    app.js("const el = document.activeElement; return el.className || el.tagName.toLowerCase();")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits until what has the keys draws its focus ring (it settles a moment after the
/// key that moved the focus reached the page); a control that never draws one fails.
async fn wait_until_ringed(app: &App) {
    app.wait_for_js("return getComputedStyle(document.activeElement).outlineStyle !== 'none';")
        .await;
}

async fn keys(app: &App, key: impl Into<thirtyfour::common::keys::TypingData>) {
    app.driver
        .action_chain()
        .send_keys(key)
        .perform()
        .await
        .unwrap();
}

async fn shift_tab(app: &App) {
    app.driver
        .action_chain()
        .key_down(thirtyfour::Key::Shift)
        .send_keys(thirtyfour::Key::Tab)
        .key_up(thirtyfour::Key::Shift)
        .perform()
        .await
        .unwrap();
}

async fn wait_until_focused(app: &App, css: &str) {
    app.wait_for_js(&format!(
        "return document.activeElement && document.activeElement.matches({});",
        json!(css)
    ))
    .await;
}

async fn wait_until_announced(app: &App, words: &str) {
    app.wait_for_js(&format!(
        "return document.querySelector('.announcer[aria-live=\"polite\"]') \
           .textContent.includes({});",
        json!(words)
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_turn_with_an_approval_is_walked_by_keyboard_alone() {
    let model = Model::start().await;
    model
        .calls(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "alpha\nBETA\n"}),
        )
        .says(&["Shouted."]);
    let home = Home::new();
    let workspace = home.workspace();
    let notes = workspace.join("notes.md");
    std::fs::write(&notes, "alpha\nbeta\n").unwrap();
    let app = model.launch(&home).await;
    // Keys go to the window that has the X input focus (with no window manager, none
    // has it until given), and WebKit draws focus rings only in a focused window.
    app.focus_window().await;
    // The folder comes from the system's file dialog, which is not the app's to test.
    app.choose_workspace(&workspace).await;
    // Once the folder is chosen the keys are back in the composer.
    wait_until_focused(&app, ".composer-input").await;

    // From the composer, Tab visits the agent, the mode, the model and the folder, in
    // that order, each with its focus ring drawn.
    let mut visited = Vec::new();
    for _ in 0..6 {
        app.js("window.cairnBefore = document.activeElement;").await;
        keys(&app, thirtyfour::Key::Tab).await;
        // The key reaches the page after the command returns: the focus, and the ring
        // the keyboard's focus draws, settle a moment later. A control that never
        // draws one fails the wait.
        app.wait_for_js(
            "const el = document.activeElement; \
             return el !== window.cairnBefore && getComputedStyle(el).outlineStyle !== 'none';",
        )
        .await;
        visited.push(focused(&app).await);
    }
    let place = |control: &str| {
        visited
            .iter()
            .position(|class| class.split(' ').any(|name| name == control))
            .unwrap_or_else(|| panic!("Tab never reached .{control}: {visited:?}"))
    };
    let order = [
        "agent-chip",
        "mode-select",
        "model-select",
        "workspace-button",
    ]
    .map(place);
    assert!(order.is_sorted(), "{visited:?}");

    // A menu opened from the keyboard closes with Esc and leaves the keys where they were.
    for _ in 0..visited.len() {
        shift_tab(&app).await;
    }
    wait_until_focused(&app, ".composer-input").await;
    keys(&app, thirtyfour::Key::Tab).await;
    wait_until_focused(&app, ".agent-chip").await;
    keys(&app, thirtyfour::Key::Enter).await;
    app.wait_for(".agent-menu").await;
    keys(&app, thirtyfour::Key::Escape).await;
    app.wait_for_js("return document.querySelector('.agent-menu') === null;")
        .await;
    wait_until_focused(&app, ".agent-chip").await;

    // The question is typed and sent from the keyboard.
    shift_tab(&app).await;
    wait_until_focused(&app, ".composer-input").await;
    keys(&app, "Shout beta").await;
    keys(&app, thirtyfour::Key::Enter).await;

    // The approval takes the keys and is announced; its buttons are a Tab apart.
    app.wait_for(".approval .approval-diff").await;
    wait_until_focused(&app, ".approval-buttons .primary").await;
    // The Allow button shows it has the keys.
    wait_until_ringed(&app).await;
    wait_until_announced(&app, "Waiting for you: allow").await;
    keys(&app, thirtyfour::Key::Tab).await;
    let class = focused(&app).await;
    let label = app.js("return document.activeElement.textContent;").await;
    assert!(
        label
            .as_str()
            .unwrap_or_default()
            .starts_with("Allow for this chat"),
        "after Allow comes Allow for this chat: {class} {label}"
    );
    keys(&app, thirtyfour::Key::Tab).await;
    wait_until_focused(&app, ".approval-buttons .danger").await;
    shift_tab(&app).await;
    shift_tab(&app).await;
    wait_until_focused(&app, ".approval-buttons .primary").await;
    app.screenshot("keyboard-approval").await;
    keys(&app, thirtyfour::Key::Enter).await;

    // Answered: the keys go back to the composer and the end is announced.
    app.wait_for_text(".message.assistant .md", "Shouted.")
        .await;
    wait_until_focused(&app, ".composer-input").await;
    wait_until_announced(&app, "The answer is finished.").await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nBETA\n");

    // The call's card is reached by keys too, and Enter opens or folds it.
    let mut reached = false;
    for _ in 0..30 {
        shift_tab(&app).await;
        if app
            .js("return document.activeElement.matches('.card-head');")
            .await
            == json!(true)
        {
            reached = true;
            break;
        }
    }
    assert!(
        reached,
        "Shift+Tab from the composer never reached the card"
    );
    // The card's head shows it has the keys: its ring is painted, not only styled (the
    // card clips what passes its edge).
    wait_until_ringed(&app).await;
    let head = ".card[data-card='w1'] > .card-head";
    app.wait_for_js(&format!(
        "return document.activeElement === document.querySelector({});",
        json!(head)
    ))
    .await;
    let shot = crate::pixels::region(&app, head, "card-head-focused").await;
    let ring = crate::pixels::inked(&shot, [0xff, 0xff, 0xff], [0x1f, 0x7a, 0x6d]);
    assert!(
        ring > 1_000,
        "{}: {ring} pixels of the focus ring",
        shot.display()
    );
    let expanded = app
        .js("return document.activeElement.getAttribute('aria-expanded');")
        .await;
    let flipped = if expanded == json!("true") {
        "false"
    } else {
        "true"
    };
    keys(&app, thirtyfour::Key::Enter).await;
    app.wait_for_js(&format!(
        "return document.activeElement.getAttribute('aria-expanded') === '{flipped}';"
    ))
    .await;
    app.screenshot("keyboard-card-toggled").await;
    app.quit().await;
}
