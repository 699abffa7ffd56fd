//! Taking back an answer's changes, on real files and a real database: a write, an
//! edit and a new file put back (the new one removed); a file changed afterwards stops
//! the restore with nothing changed; an answer given again still reaches back past
//! the one it replaced; and all of it after a restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use cairn_core::Limits;
use cairn_protocol::{PermissionMode, RestoreAction, RestorePlan, ThreadInfo, TurnStatus};
use cairn_runtime::{Redo, Runtime, RuntimeError};
use cairn_store::Store;
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;

async fn open(db: &Path) -> Arc<Runtime> {
    Runtime::new(Store::open(db).await.unwrap(), Limits::default())
}

/// A thread in Auto mode (nothing asks) working in `folder`.
async fn auto_thread_in(runtime: &Runtime, folder: &Path) -> ThreadInfo {
    let thread = runtime
        .new_thread("Change the files", PermissionMode::Auto)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(folder))
        .await
        .unwrap();
    thread
}

/// Runs one turn of `calls` then a closing text in `thread_id`; the answer's id.
async fn answer(runtime: &Runtime, thread_id: &str, calls: Vec<ScriptedTurn>) -> String {
    run(runtime, thread_id, None, calls).await
}

/// As [`answer`], asking the question again (`redo`) when given.
async fn run(
    runtime: &Runtime,
    thread_id: &str,
    redo: Option<Redo<'_>>,
    calls: Vec<ScriptedTurn>,
) -> String {
    let model = ScriptedModel::new();
    model.root(calls.into_iter().chain([ScriptedTurn::text("Done.")]));
    let choice = common::choice_of(&model, "scripted");
    let live = match redo {
        None => runtime.send(thread_id, "Change the files", choice).await,
        Some(redo) => runtime.redo(thread_id, redo, choice).await,
    }
    .unwrap();
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    runtime
        .messages(thread_id)
        .await
        .unwrap()
        .last()
        .unwrap()
        .id
        .clone()
}

/// The model's call to write `content` to `path`.
fn write(path: &str, content: &str) -> ScriptedTurn {
    ScriptedTurn::call("write_file", json!({"path": path, "content": content}))
}

/// Each file of a restore plan: its path, what it would do, and whether it can.
fn said(plan: &RestorePlan) -> Vec<(&str, RestoreAction, bool)> {
    plan.files
        .iter()
        .map(|file| (file.path.as_str(), file.action, file.problem.is_none()))
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test]
async fn an_answers_writes_edits_and_new_files_are_put_back_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("project");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("notes.md"), "alpha\nbeta\n").unwrap();
    std::fs::write(folder.join("app.py"), "print('hi')\n").unwrap();
    let db = dir.path().join("cairn.db");

    let runtime = open(&db).await;
    let thread = auto_thread_in(&runtime, &folder).await;
    let answer_id = answer(
        &runtime,
        &thread.id,
        vec![
            write("notes.md", "ALPHA\n"),
            // Written twice: the first write's "before" is what comes back.
            write("notes.md", "ALPHA\nGAMMA\n"),
            ScriptedTurn::call(
                "edit_file",
                json!({"path": "app.py", "old_text": "'hi'", "new_text": "'hello'"}),
            ),
            write("docs/new.md", "# New\n"),
        ],
    )
    .await;
    assert_eq!(read(&folder.join("app.py")), "print('hello')\n");
    let stored = runtime.messages(&thread.id).await.unwrap();
    assert_eq!(
        stored.last().unwrap().restorable,
        ["app.py", "docs/new.md", "notes.md"]
    );
    drop(runtime);

    // After a restart: the plan says what each file goes back to, then it is done.
    let runtime = open(&db).await;
    let plan = runtime.restore_plan(&thread.id, None).await.unwrap();
    assert_eq!(plan.answer_id, answer_id);
    assert_eq!(
        said(&plan),
        [
            ("app.py", RestoreAction::PutBack, true),
            ("docs/new.md", RestoreAction::Remove, true),
            ("notes.md", RestoreAction::PutBack, true),
        ]
    );
    let notes = &plan.files[2].diff;
    assert!(
        notes.contains("-ALPHA") && notes.contains("+alpha") && notes.contains("+beta"),
        "{notes}"
    );
    assert_eq!(
        read(&folder.join("notes.md")),
        "ALPHA\nGAMMA\n",
        "the plan changes nothing"
    );
    runtime.restore(&thread.id, &answer_id).await.unwrap();
    assert_eq!(read(&folder.join("notes.md")), "alpha\nbeta\n");
    assert_eq!(read(&folder.join("app.py")), "print('hi')\n");
    assert!(
        !folder.join("docs/new.md").exists(),
        "the file it made is gone"
    );
    // Put back once: not offered again.
    assert!(
        runtime
            .messages(&thread.id)
            .await
            .unwrap()
            .last()
            .unwrap()
            .restorable
            .is_empty()
    );
    assert!(matches!(
        runtime.restore_plan(&thread.id, None).await,
        Err(RuntimeError::NothingToRestore(_))
    ));
}

#[tokio::test]
async fn a_file_changed_after_the_answer_stops_the_restore_with_nothing_changed() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("project");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("a.txt"), "a before\n").unwrap();
    std::fs::write(folder.join("b.txt"), "b before\n").unwrap();
    let runtime = open(&dir.path().join("cairn.db")).await;
    let thread = auto_thread_in(&runtime, &folder).await;
    let answer_id = answer(
        &runtime,
        &thread.id,
        vec![
            write("a.txt", "a by the answer\n"),
            write("b.txt", "b by the answer\n"),
        ],
    )
    .await;
    // The user's own edit, after the answer.
    std::fs::write(folder.join("b.txt"), "b by the user\n").unwrap();

    let plan = runtime
        .restore_plan(&thread.id, Some(&answer_id))
        .await
        .unwrap();
    assert_eq!(plan.files[0].problem, None);
    assert_eq!(
        plan.files[1].problem.as_deref(),
        Some("changed after this answer wrote it")
    );
    let err = runtime.restore(&thread.id, &answer_id).await.unwrap_err();
    let said = err.to_string();
    assert!(
        matches!(err, RuntimeError::RestoreRefused(_)) && said.contains("b.txt changed after"),
        "{said}"
    );
    assert!(said.contains("nothing was restored"), "{said}");
    assert_eq!(
        read(&folder.join("a.txt")),
        "a by the answer\n",
        "all or nothing"
    );
    assert_eq!(
        read(&folder.join("b.txt")),
        "b by the user\n",
        "the user's edit stays"
    );

    // A removed file is a change too; and an answer of another chat is not this one's.
    std::fs::write(folder.join("b.txt"), "b by the answer\n").unwrap();
    std::fs::remove_file(folder.join("a.txt")).unwrap();
    let plan = runtime
        .restore_plan(&thread.id, Some(&answer_id))
        .await
        .unwrap();
    assert_eq!(
        plan.files[0].problem.as_deref(),
        Some("was removed after this answer wrote it")
    );
    assert!(matches!(
        runtime
            .restore_plan(&thread.id, Some("no-such-answer"))
            .await,
        Err(RuntimeError::NothingToRestore(_))
    ));
}

#[tokio::test]
async fn an_answer_given_again_takes_back_what_the_replaced_answer_wrote_too() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("project");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("notes.md"), "alpha\n").unwrap();
    std::fs::write(folder.join("app.py"), "print('hi')\n").unwrap();
    let db = dir.path().join("cairn.db");
    let runtime = open(&db).await;
    let thread = auto_thread_in(&runtime, &folder).await;
    answer(
        &runtime,
        &thread.id,
        vec![
            write("notes.md", "one\n"),
            write("new.md", "# one\n"),
            write("app.py", "print('one')\n"),
        ],
    )
    .await;
    // The user's own edit between the two answers: the way back stops there.
    std::fs::write(folder.join("app.py"), "print('mine')\n").unwrap();
    let second = run(
        &runtime,
        &thread.id,
        Some(Redo::Answer),
        vec![
            write("notes.md", "two\n"),
            write("app.py", "print('two')\n"),
        ],
    )
    .await;
    let stored = runtime.messages(&thread.id).await.unwrap();
    assert_eq!(stored.len(), 2, "the first answer gave way");
    assert_eq!(
        stored[1].restorable,
        ["app.py", "new.md", "notes.md"],
        "the file only the first answer wrote is offered too"
    );
    drop(runtime);

    let runtime = open(&db).await;
    let plan = runtime
        .restore_plan(&thread.id, Some(&second))
        .await
        .unwrap();
    assert_eq!(
        said(&plan),
        [
            ("app.py", RestoreAction::PutBack, true),
            ("new.md", RestoreAction::Remove, true),
            ("notes.md", RestoreAction::PutBack, true),
        ]
    );
    runtime.restore(&thread.id, &second).await.unwrap();
    assert_eq!(
        read(&folder.join("notes.md")),
        "alpha\n",
        "before the question"
    );
    assert_eq!(
        read(&folder.join("app.py")),
        "print('mine')\n",
        "the user's edit, not what was there before it"
    );
    assert!(
        !folder.join("new.md").exists(),
        "the first answer's file is gone"
    );
}
