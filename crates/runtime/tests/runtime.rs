//! The shared turn flow: a stored thread's settings apply, bad requests are refused
//! before anything is stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cairn_core::Limits;
use cairn_protocol::{Event, PermissionMode, TurnStatus};
use cairn_providers::{Sampling, ScriptedModel, ScriptedTurn};
use cairn_runtime::{ModelChoice, Runtime, RuntimeError};
use cairn_store::Store;
use serde_json::json;

fn choice(model: &ScriptedModel) -> ModelChoice {
    ModelChoice {
        client: Arc::new(model.clone()),
        dialect: "openai".into(),
        base_url: "http://localhost:1234".into(),
        model: "scripted".into(),
        sampling: Sampling::default(),
    }
}

async fn runtime() -> (tempfile::TempDir, Arc<Runtime>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    (dir, Runtime::new(store, Limits::default()))
}

#[tokio::test]
async fn a_thread_runs_in_its_own_mode_with_its_workspace() {
    let (dir, runtime) = runtime().await;
    let thread = runtime
        .new_thread("Write the notes", PermissionMode::Plan)
        .await
        .unwrap();
    runtime
        .store()
        .set_workspace(&thread.id, Some(dir.path()))
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("write_file", json!({"path": "notes.md", "content": "x"})),
        ScriptedTurn::text("1. write notes.md"),
    ]);
    let live = runtime
        .send(&thread.id, "Write the notes", choice(&model))
        .await
        .unwrap();
    assert!(matches!(
        runtime.send(&thread.id, "again", choice(&model)).await,
        Err(RuntimeError::Session(
            cairn_core::SessionError::AlreadyRunning
        ))
    ));
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(
        !dir.path().join("notes.md").exists(),
        "plan mode blocked the write"
    );
    let request = &model.requests()[0];
    assert!(
        request.tools.iter().any(|t| t.name == "write_file"),
        "the workspace brought the file tools"
    );
    assert!(
        request.messages[0]
            .content()
            .contains("Permission mode: plan")
    );
    let stored = runtime.store().thread(&thread.id).await.unwrap();
    assert_eq!(
        (stored.model.as_deref(), stored.dialect.as_deref()),
        (Some("scripted"), Some("openai"))
    );
    assert_eq!(runtime.store().messages(&thread.id).await.unwrap().len(), 2);
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_stored() {
    let (dir, runtime) = runtime().await;
    let thread = runtime
        .new_thread("x", PermissionMode::Default)
        .await
        .unwrap();
    let model = ScriptedModel::new();
    assert!(matches!(
        runtime.send(&thread.id, "  ", choice(&model)).await,
        Err(RuntimeError::EmptyPrompt)
    ));
    assert!(matches!(
        runtime.send("no-such-thread", "hi", choice(&model)).await,
        Err(RuntimeError::Store(_))
    ));
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    runtime
        .store()
        .set_workspace(&thread.id, Some(&gone))
        .await
        .unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let err = runtime
        .send(&thread.id, "hi", choice(&model))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Workspace(_)), "{err}");
    assert!(
        runtime
            .store()
            .messages(&thread.id)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_front_end_can_leave_and_come_back_to_a_running_turn() {
    let (_dir, runtime) = runtime().await;
    let thread = runtime
        .new_thread("x", PermissionMode::Default)
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .say("first half ")
        .delay(std::time::Duration::from_millis(150))
        .say("second half")]);
    let live = runtime
        .send(&thread.id, "go", choice(&model))
        .await
        .unwrap();
    drop(live);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let again = runtime
        .sessions()
        .get(&thread.id)
        .expect("still running without a front end");
    let (so_far, mut rest) = again.attach();
    let mut text: String = so_far
        .iter()
        .filter_map(|e| match e {
            Event::Chunk(c) => Some(c.content.clone()),
            _ => None,
        })
        .collect();
    while let Some(event) = rest.recv().await {
        match event {
            Event::Chunk(c) => text.push_str(&c.content),
            Event::Done(_) => break,
            _ => {}
        }
    }
    assert_eq!(text, "first half second half");
}
