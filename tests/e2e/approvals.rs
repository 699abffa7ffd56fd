//! Approvals: a write that waits for Allow or Deny, what the card shows before and
//! after, and plan mode's refusal.

use std::time::Duration;

use cairn_testkit::{Piece, Reply, sse};
use serde_json::json;

use crate::{
    CHAT, first_chat_request,
    harness::{Home, text_of},
    model::Model,
    pixels,
};

/// A turn that writes `notes.md`, then says `closing`.
fn write_turn(model: &Model, closing: &str) {
    model
        .calls(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "kept"}),
        )
        .says(&[closing]);
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn in_default_mode_a_write_waits_for_allow_or_deny() {
    let model = Model::start().await;
    write_turn(&model, "Wrote the notes.");
    write_turn(&model, "Understood, nothing written.");
    write_turn(&model, "Nothing changed.");
    let home = Home::new();
    let workspace = home.workspace();
    let notes = workspace.join("notes.md");
    let app = model.launch(&home).await;

    app.choose_workspace(&workspace).await;
    app.send("Write the notes").await;
    let approval = app.wait_for_text(".approval", "write_file").await;
    let text = text_of(&approval).await;
    assert!(
        text.contains("New file notes.md") && text.contains("kept"),
        "the file it would make: {text}"
    );
    assert!(text.contains("write"), "the category: {text}");
    assert!(text.contains("Allow for this chat"), "{text}");
    assert!(!notes.exists(), "nothing runs before the answer");
    app.screenshot("approval-card").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Wrote the notes.")
        .await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "kept");
    assert_eq!(app.count(".approval").await, 0);
    std::fs::remove_file(&notes).unwrap();

    app.click(".new-chat").await;
    app.choose_workspace(&workspace).await;
    app.send("Write the notes again").await;
    app.wait_for_text(".approval", "write_file").await;
    app.click(".approval-buttons .danger").await;
    app.wait_for_text(".message.assistant .md", "Understood, nothing written.")
        .await;
    app.wait_for_text(".card.denied .card-denied", "Denied by you")
        .await;
    assert!(!notes.exists(), "a denied write writes nothing");
    app.screenshot("approval-denied").await;

    // Writing what the file already holds: the approval says there is no change,
    // not "Changes to" over an empty box.
    std::fs::write(&notes, "kept").unwrap();
    app.click(".new-chat").await;
    app.choose_workspace(&workspace).await;
    app.send("Write the notes once more").await;
    let approval = app.wait_for_text(".approval", "write_file").await;
    app.wait_for_text(".approval .no-change", "No change to notes.md")
        .await;
    assert_eq!(app.count(".approval .approval-diff").await, 0);
    let read = pixels::readable_text(&app, ".approval .no-change", "approval-no-change").await;
    pixels::assert_reads(&read, &["No change", "already holds"], "an unchanged write");
    assert!(!text_of(&approval).await.contains("Changes to"));
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Nothing changed.")
        .await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "kept");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_approval_shows_the_change_and_a_denied_card_says_so_in_plain_words() {
    let model = Model::start().await;
    model
        .calls(
            "w1",
            "write_file",
            json!({"path": "notes.md", "content": "alpha\nBETA\ngamma\n"}),
        )
        .says(&["Left the notes alone."]);
    let home = Home::new();
    let workspace = home.workspace();
    std::fs::write(workspace.join("notes.md"), "alpha\nbeta\ngamma\n").unwrap();
    let app = model.launch(&home).await;
    app.choose_workspace(&workspace).await;
    app.send("Shout beta").await;
    let approval = app.wait_for(".approval .approval-diff").await;
    let diff = text_of(&approval).await;
    assert!(diff.contains("-beta") && diff.contains("+BETA"), "{diff}");
    // The arguments once: the change is shown, the raw arguments stay folded.
    assert_eq!(app.count(".card-body > .card-args").await, 0);
    assert_eq!(app.count(".approval .card-args[open]").await, 0);
    let read = pixels::readable_text(&app, ".approval-diff", "approval-diff").await;
    pixels::assert_reads(&read, &["beta", "BETA", "gamma"], "the diff");
    // The added and removed lines are drawn in their colours, not only written.
    let colours = app
        .js(
            "return ['.diff-line.added', '.diff-line.removed'].map(s => \
             getComputedStyle(document.querySelector(s)).backgroundColor);",
        )
        .await;
    assert_eq!(colours, json!(["rgb(227, 243, 228)", "rgb(251, 228, 226)"]));
    // At least a second on the question, so the wait reads in seconds.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    app.click(".approval-buttons .danger").await;
    app.wait_for_text(".message.assistant .md", "Left the notes alone.")
        .await;
    let card = ".card.denied[data-card='w1']";
    app.wait_for_text(&format!("{card} .card-head"), "write_file")
        .await;
    app.wait_for_text(&format!("{card} .card-subject"), "notes.md")
        .await;
    // Seconds on the question, apart from the call's own milliseconds.
    let waited = text_of(&app.wait_for(&format!("{card} .card-waited")).await).await;
    let own = text_of(&app.wait_for(&format!("{card} .card-time")).await).await;
    assert!(
        waited.starts_with("waited ") && waited.ends_with(" s") && own.ends_with(" ms"),
        "{waited:?} then {own:?}"
    );
    app.wait_for_text(&format!("{card} .card-denied"), "Denied by you")
        .await;
    assert_eq!(
        app.count(&format!("{card} .card-result")).await,
        0,
        "what the model was told stays the model's"
    );
    let read = pixels::readable_text(&app, card, "denied-card").await;
    pixels::assert_reads(
        &read,
        &["write_file", "notes.md", "waited", "Denied by you"],
        "the card",
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.md")).unwrap(),
        "alpha\nbeta\ngamma\n"
    );
    let live = app.outline().await;
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("Shout beta").await;
    app.wait_for_text(&format!("{card} .card-waited"), &waited)
        .await;
    app.wait_for_text(&format!("{card} .card-time"), &own).await;
    app.wait_for_text(&format!("{card} .card-denied"), "Denied by you")
        .await;
    // What the tool said it acts on was kept with the answer, not guessed again.
    app.wait_for_text(&format!("{card} .card-subject"), "notes.md")
        .await;
    assert_eq!(app.outline().await, live);
    app.screenshot("denied-card-restarted").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_call_shows_while_the_model_writes_it_then_runs_in_the_same_card() {
    let model = Model::start().await;
    let parts = sse::call_parts(
        "w1",
        "write_file",
        &[
            "{\"path\": \"notes.md\", \"content\": \"Line one\\nLine two\\n",
            "Line three\\n",
            "Line four\\n\"}",
        ],
    );
    // The opening and the first piece, then the rest once the test has looked.
    let mut reply = Reply::new(200, "text/event-stream");
    for (n, part) in parts.into_iter().enumerate() {
        if n == 2 {
            reply = reply.then(Piece::Gate("rest".into()));
        }
        reply = reply.then(Piece::Bytes(part));
    }
    model.push(CHAT, reply);
    model.says(&["Wrote the notes."]);
    let home = Home::new();
    let workspace = home.workspace();
    let app = model.launch(&home).await;
    app.choose_mode("auto").await;
    app.choose_workspace(&workspace).await;
    app.send("Write four lines").await;

    let card = ".card[data-card='w1']";
    let pending = app
        .wait_for_text(&format!("{card} .card-pending"), "Line two")
        .await;
    // The content its tool says grows, not the arguments' JSON around it.
    let shown = text_of(&pending).await;
    assert!(
        shown.starts_with("Line one\nLine two") && !shown.contains("\"content\""),
        "{shown:?}"
    );
    app.wait_for_text(&format!("{card} .card-subject"), "notes.md")
        .await;
    let read = pixels::readable_text(&app, card, "call-being-written").await;
    pixels::assert_reads(
        &read,
        &["write_file", "notes.md", "Line one", "Line two"],
        "the call being written",
    );
    assert!(
        !workspace.join("notes.md").exists(),
        "not run while written"
    );

    model.open_gate("rest");
    app.wait_for_text(".message.assistant .md", "Wrote the notes.")
        .await;
    assert_eq!(app.count(".card").await, 1, "the same card became the call");
    assert_eq!(app.count(".card-pending").await, 0);
    app.wait_for(&format!("{card}.done")).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.md")).unwrap(),
        "Line one\nLine two\nLine three\nLine four\n"
    );
    app.screenshot("call-written").await;
    app.quit().await;
}

/// How a test answers an approval: the way a user would.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// A click on Allow.
    ClickAllow,
    /// The `A` key: allow for this chat.
    KeyAllowForChat,
    /// A click on Deny.
    ClickDeny,
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_answered_approval_leaves_its_card_painted_and_readable() {
    let model = Model::start().await;
    let answers = [
        Answer::ClickAllow,
        Answer::KeyAllowForChat,
        Answer::ClickDeny,
    ];
    let mut turns = Vec::new();
    for depth in [0, 1] {
        for answer in answers {
            let n = turns.len();
            if depth == 1 {
                model.calls(
                    &format!("s{n}"),
                    "run_subtask",
                    json!({"title": format!("Write part {n}"), "instructions": "Write it."}),
                );
            }
            model.calls(
                &format!("w{n}"),
                "write_file",
                json!({"path": format!("notes-{n}.md"), "content": "kept"}),
            );
            if depth == 1 {
                model.says(&[&format!("Part {n} handled.")]);
            }
            model.says(&[&format!("Turn {n} over.")]);
            turns.push((n, depth, answer));
        }
    }
    let home = Home::new();
    let workspace = home.workspace();
    let app = model.launch(&home).await;
    for (n, depth, answer) in turns {
        app.click(".new-chat").await;
        app.choose_workspace(&workspace).await;
        app.send(&format!("Write notes {n}")).await;
        app.wait_for_text(".approval", &format!("notes-{n}.md"))
            .await;
        match answer {
            Answer::ClickAllow => app.click(".approval-buttons .primary").await,
            Answer::KeyAllowForChat => {
                // The question has the keyboard's focus (the composer is empty).
                app.wait_for_js(
                    "return document.activeElement.matches('.approval-buttons .primary');",
                )
                .await;
                app.wait_for(".approval-buttons .primary")
                    .await
                    .send_keys("a")
                    .await
                    .expect("the A key");
            }
            Answer::ClickDeny => app.click(".approval-buttons .danger").await,
        }
        app.wait_for_text(".message.assistant .md", &format!("Turn {n} over."))
            .await;
        assert_eq!(app.count(".approval").await, 0, "the question went away");
        let name = format!("answered-{answer:?}-depth-{depth}").to_lowercase();
        app.screenshot(&name).await;
        let card = format!(".card[data-card='w{n}']");
        let read = pixels::readable_text(&app, &card, &format!("{name}-card")).await;
        pixels::assert_reads(&read, &["write_file", &format!("notes-{n}")], &name);
        if matches!(answer, Answer::ClickDeny) {
            pixels::assert_reads(&read, &["denied"], &name);
        }
        if depth == 1 {
            let subtask = format!(".card[data-card='s{n}'] > .card-head");
            let read = pixels::readable_text(&app, &subtask, &format!("{name}-subtask")).await;
            pixels::assert_reads(&read, &[&format!("Write part {n}")], &name);
        }
    }
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn in_plan_mode_a_write_is_blocked() {
    let model = Model::start().await;
    write_turn(&model, "Plan: 1. write notes.md with the summary.");
    let home = Home::new();
    let workspace = home.workspace();
    let app = model.launch(&home).await;
    app.choose_mode("plan").await;
    app.choose_workspace(&workspace).await;
    app.send("Plan the notes").await;
    app.wait_for_text(".message.assistant .md", "Plan: 1. write notes.md")
        .await;
    let card = app.wait_for(".card.failed").await;
    card.click().await.ok();
    assert_eq!(
        app.count(".approval").await,
        0,
        "plan mode never asks: it blocks"
    );
    assert!(!workspace.join("notes.md").exists());
    app.wait_for_text(".notice.plan", "The plan is ready").await;
    let request = first_chat_request(&model);
    assert!(
        cairn_testkit::wire::context_block(&request).contains("Permission mode: plan"),
        "{request}"
    );
    app.screenshot("plan-mode-blocked").await;
    app.quit().await;
}
