//! Notifications: a reply finished out of sight, an approval answered from its
//! notification, and none when the window is in front.

use std::time::Duration;

use cairn_testkit::{Piece, Reply, sse};
use serde_json::json;

use crate::model::Model;
use crate::{
    CHAT, fake_notifications, gated,
    harness::{App, Home},
    pixels, private_bus,
    session::{self, NotificationWatch},
};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_reply_finished_out_of_sight_notifies_and_the_click_opens_its_chat() {
    let model = Model::start().await;
    // The reply waits until the user has turned away, however long that takes.
    model.push(
        CHAT,
        Reply::new(200, "text/event-stream")
            .then(Piece::Gate("away".into()))
            .then(Piece::Bytes(sse::text(&["Done while you were away."]))),
    );
    let home = Home::new();
    let watch = NotificationWatch::start();
    let app = model.launch(&home).await;
    app.send("Work in the background").await;
    app.wait_for_text(".thread-title", "Work in the background")
        .await;
    // The user turns to something else: a new chat in front, the window out of focus.
    app.click(".new-chat").await;
    app.unfocus_window().await;
    model.open_gate("away");

    let bus = watch.wait_for("Work in the background").await;
    assert!(bus.contains("The reply is ready."), "{bus}");
    session::click_newest_notification();
    app.wait_for_text(".chat-title", "Work in the background")
        .await;
    app.wait_for_text(".message.assistant .md", "Done while you were away.")
        .await;
    app.screenshot("opened-from-notification").await;
    app.quit().await;
}

/// A tool call the model makes once the test opens `gate`.
fn gated_call(gate: &str, id: &str, name: &str, args: serde_json::Value) -> Reply {
    gated(
        vec![sse::tool_calls(&[(id, name, args)])],
        &[(Some(gate), 1)],
    )
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_approval_is_answered_from_its_notification_and_the_window_follows() {
    // The desktop's notification service is a fake on a bus of the test's own, so
    // the test can press Allow and Deny as the user would.
    let bus = private_bus::Bus::start();
    let notifications = fake_notifications::FakeNotifications::start(&bus.address, true);
    let model = Model::start().await;
    // The command runs until the test creates `go`: while it runs, the card must
    // already read as answered.
    let slow = json!({"command": "until [ -e go ]; do sleep 0.1; done; echo checked"});
    model.push(CHAT, gated_call("allow", "c1", "run_command", slow));
    model.says(&["Checked."]);
    let write = json!({"path": "notes.md", "content": "kept"});
    model.push(CHAT, gated_call("deny", "w1", "write_file", write.clone()));
    model.says(&["Nothing written."]);
    model.push(CHAT, gated_call("window", "w2", "write_file", write));
    model.says(&["Wrote it."]);
    let home = Home::new();
    let workspace = home.workspace();
    let app = App::launch_with(
        &home,
        &model.url(),
        &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())],
    )
    .await;
    app.choose_workspace(&workspace).await;

    // Allow, pressed on the notification.
    app.send("Run the slow check").await;
    app.wait_for_text(".thread-title", "Run the slow check")
        .await;
    app.unfocus_window().await;
    model.open_gate("allow");
    let asked = notifications.wait_for(0, "needs your approval").await;
    assert_eq!(asked.summary, "Run the slow check needs your approval");
    assert!(asked.body.contains("run_command"), "{asked:?}");
    assert_eq!(asked.actions, ["default", "allow", "deny"]);
    app.wait_for(".card[data-card='c1'] .approval").await;
    notifications.click(asked.id, "allow");
    app.wait_for_js("return document.querySelector('.approval') === null;")
        .await;
    assert_eq!(
        app.count(".card.running[data-card='c1']").await,
        1,
        "the command still runs: the card stopped asking on the answer alone"
    );
    app.screenshot("allowed-from-notification").await;
    let read = pixels::readable_text(&app, ".card[data-card='c1']", "allowed-card").await;
    pixels::assert_reads(&read, &["run_command"], "allowed-from-notification");
    std::fs::write(workspace.join("go"), "").unwrap();
    app.wait_for_text(".message.assistant .md", "Checked.")
        .await;
    let finished = notifications
        .wait_for(asked.id, "The reply is ready.")
        .await;

    // Deny, pressed on the notification.
    app.send("Write the notes").await;
    app.unfocus_window().await;
    model.open_gate("deny");
    let asked = notifications
        .wait_for(finished.id, "needs your approval")
        .await;
    assert!(asked.body.contains("write_file"), "{asked:?}");
    notifications.click(asked.id, "deny");
    app.wait_for_text(".message.assistant .md", "Nothing written.")
        .await;
    app.wait_for(".card.denied[data-card='w1']").await;
    assert!(
        !workspace.join("notes.md").exists(),
        "a denied write writes nothing"
    );
    let finished = notifications
        .wait_for(asked.id, "The reply is ready.")
        .await;

    // Allow, clicked in the window: the notification's buttons go away with it.
    app.send("Write the notes after all").await;
    app.unfocus_window().await;
    model.open_gate("window");
    let asked = notifications
        .wait_for(finished.id, "needs your approval")
        .await;
    app.click(".card[data-card='w2'] .approval-buttons .primary")
        .await;
    notifications.wait_for_close(asked.id).await;
    app.wait_for_text(".message.assistant .md", "Wrote it.")
        .await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.md")).unwrap(),
        "kept"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_reply_finished_in_front_of_the_user_does_not_notify() {
    let model = Model::start().await;
    model.says(&["Right here."]);
    let home = Home::new();
    let watch = NotificationWatch::start();
    let app = model.launch(&home).await;
    app.focus_window().await;
    app.send("Answer me now").await;
    app.wait_for_text(".message.assistant .md", "Right here.")
        .await;
    // The finish notice would be sent right after the answer: give it time to show up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(watch.count(), 0, "the user was looking at the window");
    app.quit().await;
}
