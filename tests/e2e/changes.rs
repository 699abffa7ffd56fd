//! Changes a user can review and take back: an applied write keeps its diff in its
//! card (folded), live and after a restart, and Restore puts an answer's files back,
//! refusing over a later edit.

use cairn_testkit::{Reply, sse};
use serde_json::json;

use crate::CHAT;
use crate::harness::{App, Home, text_of};
use crate::model::Model;
use crate::pixels;

/// The app, launched on `home`'s workspace in auto mode, once `prompt` is answered
/// with `answer`.
async fn answered_in_auto(home: &Home, model: &Model, prompt: &str, answer: &str) -> App {
    let app = model.launch(home).await;
    app.choose_workspace(&home.workspace()).await;
    app.choose_mode("auto").await;
    app.send(prompt).await;
    app.wait_for_text(".message.assistant .md", answer).await;
    app
}

/// Opens the card `id` if it is folded (a click on an open one would fold it).
async fn open_card(app: &App, id: &str) {
    let head = format!(".card[data-card='{id}'] > .card-head");
    let expanded = app
        .js(&format!(
            "return document.querySelector({}).getAttribute('aria-expanded');",
            json!(head)
        ))
        .await;
    if expanded != json!("true") {
        app.click(&head).await;
    }
}

/// Opens the card `id` if it is folded, then its folded change; the change's text.
async fn change_of(app: &App, id: &str) -> String {
    open_card(app, id).await;
    let change = format!(".card[data-card='{id}'] .card-change");
    let open = app
        .js(&format!(
            "return document.querySelector({}).open;",
            json!(change)
        ))
        .await;
    assert_eq!(open, json!(false), "an applied change starts folded");
    app.click(&format!("{change} > summary")).await;
    text_of(
        &app.wait_for(&format!("{change}[open] .approval-diff"))
            .await,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_applied_write_keeps_its_diff_and_restore_puts_the_files_back_after_a_restart() {
    let model = Model::start().await;
    model.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[
            (
                "w1",
                "write_file",
                json!({"path": "notes.md", "content": "alpha\nBETA\n"}),
            ),
            (
                "w2",
                "write_file",
                json!({"path": "new.md", "content": "new\n"}),
            ),
        ])),
    );
    model.says(&["Changed both."]);
    let home = Home::new();
    let workspace = home.workspace();
    let notes = workspace.join("notes.md");
    std::fs::write(&notes, "alpha\nbeta\n").unwrap();

    // Auto mode: nobody is asked, so no approval ever showed the change.
    let app = answered_in_auto(&home, &model, "Shout and add a file", "Changed both.").await;
    let live = change_of(&app, "w1").await;
    assert!(live.contains("-beta") && live.contains("+BETA"), "{live}");
    let read =
        pixels::readable_text(&app, ".card[data-card='w1'] .card-change", "applied-change").await;
    pixels::assert_reads(&read, &["beta", "BETA"], "the applied change");
    app.wait_for_text(".restore-files", "Restore 2 files").await;
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("Shout and add a file").await;
    app.wait_for_text(".message.assistant .md", "Changed both.")
        .await;
    assert_eq!(
        change_of(&app, "w1").await,
        live,
        "the stored card reads as the live one"
    );

    // The user edits the file afterwards: Restore says so and will not overwrite it.
    std::fs::write(&notes, "alpha\nmine\n").unwrap();
    app.click(".restore-files").await;
    app.wait_for_text(
        ".restore-panel .restore-problem",
        "notes.md changed after this answer wrote it",
    )
    .await;
    assert_eq!(
        app.js("return document.querySelector('.restore-confirm').disabled;")
            .await,
        json!(true)
    );
    app.screenshot("restore-refused").await;
    crate::follow::wait_until_in_sight(&app, ".restore-panel").await;
    app.click(".restore-cancel").await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nmine\n");

    // As the answer left it again: Restore shows what it will do, then does it.
    std::fs::write(&notes, "alpha\nBETA\n").unwrap();
    app.click(".restore-files").await;
    restore_offers_both_files(&app).await;
    app.screenshot("restore-shown").await;
    crate::a11y::assert_accessible(&app, "a restore about to be done, the applied change open")
        .await;
    app.click(".restore-confirm").await;
    app.wait_for_text(".toast", "Put back 2 files.").await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nbeta\n");
    assert!(
        !workspace.join("new.md").exists(),
        "the file it made is gone"
    );
    app.wait_for_js("return document.querySelector('.restore-files') === null;")
        .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_regenerated_answer_can_still_take_back_what_the_first_one_wrote() {
    let model = Model::start().await;
    model
        .calls(
            "w1",
            "write_file",
            json!({"path": "new.md", "content": "new\n"}),
        )
        .says(&["Added it."])
        .says(&["Nothing more to add."]);
    let home = Home::new();
    let workspace = home.workspace();

    let app = answered_in_auto(&home, &model, "Add a file", "Added it.").await;
    app.wait_for_text(".restore-files", "Restore 1 file").await;
    // The new answer writes nothing: its Restore is the first one's, at once.
    app.click(".answer-actions .regenerate").await;
    app.wait_for_text(".message.assistant .md", "Nothing more to add.")
        .await;
    // Read in the page at once: the button is drawn again as the answer's events
    // land, so an element found a moment before may be gone.
    let restore_text = "return document.querySelector('.restore-files').innerText;";
    app.wait_for_text(".restore-files", "Restore 1 file").await;
    let live = app.js(restore_text).await;
    assert_eq!(live, json!("⟲ Restore 1 file"));
    app.screenshot("restore-after-regenerate").await;
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("Add a file").await;
    app.wait_for_text(".message.assistant .md", "Nothing more to add.")
        .await;
    app.wait_for(".restore-files").await;
    assert_eq!(
        app.js(restore_text).await,
        live,
        "the reload reads as the live view"
    );
    app.click(".restore-files").await;
    app.wait_for_text(".restore-file", "new.md: removed (the answer created it)")
        .await;
    app.click(".restore-confirm").await;
    app.wait_for_text(".toast", "Put back 1 file.").await;
    assert!(
        !workspace.join("new.md").exists(),
        "the file it made is gone"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn what_a_command_changed_is_offered_to_restore_at_once_and_put_back() {
    let model = Model::start().await;
    model
        .calls(
            "c1",
            "run_command",
            json!({"command": "sed -i s/beta/BETA/ notes.md && printf 'new\\n' > new.md"}),
        )
        .says(&["Ran it."]);
    let home = Home::new();
    let workspace = home.workspace();
    let notes = workspace.join("notes.md");
    std::fs::write(&notes, "alpha\nbeta\n").unwrap();

    let app = answered_in_auto(&home, &model, "Shout in the notes", "Ran it.").await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nBETA\n");
    // Offered as the command ends, before any reload.
    app.wait_for_text(".restore-files", "Restore 2 files").await;

    // Its card says how it ran and what Restore can take back, on the screen.
    open_card(&app, "c1").await;
    let result = text_of(
        &app.wait_for_text(".card[data-card='c1'] .card-result", "sandboxed")
            .await,
    )
    .await;
    assert!(
        result
            .contains("(sandboxed: writes only in the workspace and the temp folder, no network)")
            && result
                .contains("[restore] It changed `new.md`, `notes.md`: Restore can take them back."),
        "{result}"
    );
    let read =
        pixels::readable_text(&app, ".card[data-card='c1'] .card-result", "command-result").await;
    pixels::assert_reads(
        &read,
        &["sandboxed", "Restore can take them back"],
        "the command's card",
    );

    app.click(".restore-files").await;
    restore_offers_both_files(&app).await;
    app.screenshot("restore-a-command").await;
    app.click(".restore-confirm").await;
    app.wait_for_text(".toast", "Put back 2 files.").await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nbeta\n");
    assert!(
        !workspace.join("new.md").exists(),
        "the file it made is gone"
    );
    app.quit().await;
}

/// Restore, opened, says it will remove the file the answer made and put `notes.md`'s
/// `beta` back where `BETA` is now.
async fn restore_offers_both_files(app: &App) {
    app.wait_for_text(".restore-file", "new.md: removed (the answer created it)")
        .await;
    let shown = text_of(&app.wait_for_text(".restore-file", "notes.md").await).await;
    assert!(
        shown.contains("-BETA") && shown.contains("+beta"),
        "{shown}"
    );
}
