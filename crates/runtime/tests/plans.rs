//! Plans on stored threads: a draft kept in the database runs in a later turn by its
//! id, and ids count per thread.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cairn_core::Limits;
use cairn_protocol::{Event, PermissionMode, TurnStatus};
use cairn_runtime::{ModelChoice, Runtime};
use cairn_store::Store;
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;

fn choice(model: &ScriptedModel) -> ModelChoice {
    common::choice_of(model, "scripted")
}

fn draft() -> ScriptedTurn {
    ScriptedTurn::call(
        "create_plan",
        json!({"objective": "tidy up", "execution_mode": "draft_only",
               "steps": [{"id": "s1", "title": "Sort", "instructions": "sort the notes"}]}),
    )
}

#[tokio::test]
async fn a_draft_kept_in_the_thread_runs_in_a_later_turn_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cairn.db");
    let runtime =
        Runtime::with_agents_dir(Store::open(&db).await.unwrap(), Limits::default(), None);
    let thread = runtime
        .new_thread("tidy", PermissionMode::Default)
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([
        draft(),
        ScriptedTurn::text("Plan p1: sort the notes. Run it?"),
    ]);
    let live = runtime
        .send(&thread.id, "plan a tidy-up", choice(&model))
        .await
        .unwrap();
    let (_, mut events) = live.attach();
    let mut ready = None;
    while let Some(event) = events.recv().await {
        match event {
            Event::PlanReady(plan) => ready = Some(plan),
            Event::Done(_) => break,
            _ => {}
        }
    }
    let ready = ready.expect("plan_ready");
    assert_eq!(ready.plan_id.as_deref(), Some("p1"));
    drop(runtime);

    // After a restart: "run it" runs p1 as it was stored.
    let runtime =
        Runtime::with_agents_dir(Store::open(&db).await.unwrap(), Limits::default(), None);
    model.root([
        ScriptedTurn::call(
            "create_plan",
            json!({"plan_id": "p1", "execution_mode": "auto_execute"}),
        ),
        ScriptedTurn::text("Sorted."),
    ]);
    model.subtask("Sort", [ScriptedTurn::text("sorted 4 notes")]);
    let live = runtime
        .send(&thread.id, "run it", choice(&model))
        .await
        .unwrap();
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    let sort = model
        .requests()
        .into_iter()
        .find(|r| r.origin.subtask_title.as_deref() == Some("Sort"))
        .expect("the stored step ran");
    assert_eq!(sort.messages.last().unwrap().content(), "sort the notes");

    // A second plan in the thread is p2; another thread starts again at p1.
    model.root([draft(), ScriptedTurn::text("Another.")]);
    runtime
        .send(&thread.id, "again", choice(&model))
        .await
        .unwrap()
        .finished()
        .await;
    let store = Store::open(runtime.database_path()).await.unwrap();
    assert!(store.plan(&thread.id, "p2").await.unwrap().is_some());
    let other = runtime
        .new_thread("other", PermissionMode::Default)
        .await
        .unwrap();
    model.root([draft(), ScriptedTurn::text("Mine.")]);
    runtime
        .send(&other.id, "plan", choice(&model))
        .await
        .unwrap()
        .finished()
        .await;
    let first = store.plan(&other.id, "p1").await.unwrap().unwrap();
    assert_eq!(first.objective, "tidy up");
    assert!(store.plan(&other.id, "p2").await.unwrap().is_none());
}
