//! Named model servers over real HTTP: two scripted servers on their own ports, one
//! with a single slot, one with four; profiles that pick them with `server:`; the
//! list kept in the store; the usage log naming who answered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::Limits;
use cairn_protocol::desktop::SavedEndpoint;
use cairn_protocol::{Dialect, Event, PermissionMode, Role, TurnStatus};
use cairn_providers::ServerKind;
use cairn_runtime::{FailureKind, Runtime, RuntimeError};
use cairn_store::Store;
use cairn_testkit::machines::{self, CHAT};
use cairn_testkit::{FakeServer, Piece, Reply, ScriptedModel, ScriptedTurn, sse};
use serde_json::json;

/// A llama.cpp-like server with `slots` slots whose every answer takes `answer_in`.
async fn box_with(slots: u32, answer_in: Duration) -> FakeServer {
    machines::llama_box(slots, answer_in, "step done").await
}

fn named(name: &str, server: &FakeServer) -> SavedEndpoint {
    SavedEndpoint {
        name: name.into(),
        dialect: Dialect::Openai,
        base_url: server.url(),
        slots: None,
    }
}

/// A runtime whose profiles `slow` and `fast` run on the servers of those names.
async fn runtime(dir: &Path) -> Arc<Runtime> {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    for name in ["slow", "fast"] {
        machines::profile_on(&agents, name, name);
    }
    std::fs::write(
        agents.join("lost.md"),
        "---\ndescription: nowhere\nserver: nowhere\n---\nBe brief.\n",
    )
    .unwrap();
    let store = Store::open(dir.join("cairn.db")).await.unwrap();
    Runtime::with_agents_dir(store, Limits::default(), Some(agents))
}

#[tokio::test]
async fn servers_are_listed_added_and_removed_with_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let gpu = box_with(2, Duration::ZERO).await;
    runtime.add_server(named("gpu", &gpu)).await.unwrap();
    runtime
        .add_server(SavedEndpoint {
            slots: Some(3),
            ..named("pinned", &gpu)
        })
        .await
        .unwrap();
    let down = SavedEndpoint {
        base_url: "http://127.0.0.1:9".into(),
        ..named("down", &gpu)
    };
    runtime.add_server(down).await.unwrap();

    let reports = runtime.server_reports().await.unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.server.name.as_str()).collect();
    assert_eq!(names, ["gpu", "pinned", "down"]);
    let facts = reports[0].facts.expect("the server said what it is");
    assert_eq!(facts.kind, ServerKind::LlamaCpp);
    assert_eq!((facts.slots, facts.window), (Some(2), Some(8192)));
    assert_eq!(reports[0].slots, 2, "its own figure");
    assert_eq!(reports[1].slots, 3, "the user's setting wins");
    assert!(reports[2].facts.is_none());
    assert!(reports[2].error.is_some(), "{:?}", reports[2]);

    // Mistakes are refused with the reason, and nothing changes.
    let taken = runtime.add_server(named("gpu", &gpu)).await.unwrap_err();
    assert!(taken.to_string().contains("already named `gpu`"), "{taken}");
    let bad = runtime
        .add_server(SavedEndpoint {
            base_url: "gpu box".into(),
            ..named("box", &gpu)
        })
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), FailureKind::Invalid);
    let unknown = runtime.remove_server("nope").await.unwrap_err();
    assert!(
        matches!(unknown, RuntimeError::UnknownServer { .. }),
        "{unknown}"
    );
    assert_eq!(runtime.servers().await.unwrap().len(), 3);

    runtime.remove_server("pinned").await.unwrap();
    let names: Vec<String> = runtime
        .servers()
        .await
        .unwrap()
        .into_iter()
        .map(|server| server.name)
        .collect();
    assert_eq!(names, ["gpu", "down"]);
}

#[tokio::test]
async fn six_steps_on_two_machines_never_overrun_either_machines_slots() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let slow = box_with(1, Duration::from_millis(150)).await;
    let fast = box_with(4, Duration::from_millis(50)).await;
    runtime.add_server(named("slow", &slow)).await.unwrap();
    runtime.add_server(named("fast", &fast)).await.unwrap();
    let thread = runtime
        .new_thread("six", PermissionMode::Auto)
        .await
        .unwrap();
    let home = ScriptedModel::new();
    home.root([
        ScriptedTurn::call("create_plan", machines::spread_plan(6, &["fast", "slow"])),
        ScriptedTurn::text("All six are done."),
    ]);
    let live = runtime
        .send(
            &thread.id,
            "do six things",
            common::choice_of(&home, "small"),
        )
        .await
        .unwrap();
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.text, "All six are done.");

    assert_eq!(slow.requests_to(CHAT).len(), 3);
    assert_eq!(fast.requests_to(CHAT).len(), 3);
    assert_eq!(slow.peak_in_flight(CHAT), 1, "the slow box has one slot");
    assert!(fast.peak_in_flight(CHAT) <= 4);
    // The fast box was not held up behind the slow one: its three ran side by side.
    assert!(
        fast.peak_in_flight(CHAT) >= 2,
        "{}",
        fast.peak_in_flight(CHAT)
    );

    // The usage log names the server of every call.
    let log = runtime.usage_log(Some(&thread.id)).await.unwrap();
    let mut servers: Vec<&str> = log
        .iter()
        .map(|logged| logged.call.server.as_deref().unwrap_or("?"))
        .collect();
    servers.sort_unstable();
    assert_eq!(
        servers,
        [
            "fast", "fast", "fast", "lmstudio", "lmstudio", "slow", "slow", "slow"
        ]
    );
    let usage = runtime.thread_usage(&thread.id).await.unwrap();
    let mut split: Vec<(&str, u64)> = usage
        .by_server
        .iter()
        .map(|kept| (kept.server.as_str(), kept.totals.llm_calls))
        .collect();
    split.sort_unstable();
    assert_eq!(split, [("fast", 3), ("lmstudio", 2), ("slow", 3)]);
}

#[tokio::test]
async fn a_machine_killed_mid_subtask_fails_that_subtask_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let fast = box_with(4, Duration::ZERO).await;
    // The answer starts, then the machine goes away before it ends.
    fast.push(
        CHAT,
        Reply::sse(sse::text(&["half an"])[..40].to_vec()).then(Piece::Hang),
    );
    runtime.add_server(named("fast", &fast)).await.unwrap();
    let thread = runtime
        .new_thread("kill", PermissionMode::Auto)
        .await
        .unwrap();
    let home = ScriptedModel::new();
    home.root([
        ScriptedTurn::new()
            .tool(
                "run_subtask",
                json!({"title": "far", "instructions": "go far", "agent": "fast"}),
            )
            .tool(
                "run_subtask",
                json!({"title": "near", "instructions": "stay"}),
            ),
        ScriptedTurn::text("Went on with what came back."),
    ]);
    home.subtask("near", [ScriptedTurn::text("near done")]);
    let live = runtime
        .send(&thread.id, "two parts", common::choice_of(&home, "small"))
        .await
        .unwrap();
    let asked = async {
        while fast.requests_to(CHAT).is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .expect("the subtask asked the fast box");
    drop(fast);
    let outcome = tokio::time::timeout(Duration::from_secs(20), live.finished())
        .await
        .expect("the turn ended")
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.text, "Went on with what came back.");
    let far = outcome
        .tree
        .nodes
        .iter()
        .find(|node| node.title.as_deref() == Some("far"))
        .unwrap();
    assert_eq!(far.is_error, Some(true));
    assert_eq!(far.server.as_deref(), Some("fast"));
    let reason = far.result_preview.as_deref().unwrap();
    assert!(
        reason.contains("runs on the server `fast`, which failed"),
        "{reason}"
    );
    let near = outcome
        .tree
        .nodes
        .iter()
        .find(|node| node.title.as_deref() == Some("near"))
        .unwrap();
    assert_eq!(near.is_error, Some(false));
}

#[tokio::test]
async fn a_hand_over_to_a_profile_on_another_machine_answers_from_there() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let fast = box_with(4, Duration::ZERO).await;
    runtime.add_server(named("fast", &fast)).await.unwrap();
    let thread = runtime
        .new_thread("route", PermissionMode::Default)
        .await
        .unwrap();
    runtime.set_thread_agent(&thread.id, "auto").await.unwrap();
    let home = ScriptedModel::new();
    home.root([ScriptedTurn::call(
        "switch_agent",
        json!({"agent": "fast", "reason": "it is quick"}),
    )]);
    let live = runtime
        .send(&thread.id, "be quick", common::choice_of(&home, "small"))
        .await
        .unwrap();
    let (_, mut events) = live.attach();
    let mut switched = false;
    while let Some(event) = events.recv().await {
        if matches!(event, Event::AgentSwitched(_)) {
            switched = true;
        }
        if matches!(event, Event::Done(ref done) if switched && done.status == TurnStatus::Completed)
        {
            break;
        }
    }
    live.finished().await;
    // The follow-up turn ran on the fast box, and the stored answer says so.
    let asked = fast.requests_to(CHAT);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].json()["model"], "m");
    let last = wait_for_answer(&runtime, &thread.id, "step done").await;
    assert_eq!(
        last.execution_tree
            .as_ref()
            .and_then(|tree| tree.server.as_deref()),
        Some("fast")
    );
}

#[tokio::test]
async fn a_profile_naming_a_server_but_no_model_asks_the_one_model_served_there() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    std::fs::write(
        dir.path().join("agents/bare.md"),
        "---\ndescription: runs on gpu\nserver: gpu\n---\nBe brief.\n",
    )
    .unwrap();
    let gpu = box_with(2, Duration::ZERO).await;
    runtime.add_server(named("gpu", &gpu)).await.unwrap();
    let thread = runtime
        .new_thread("bare", PermissionMode::Default)
        .await
        .unwrap();
    runtime.set_thread_agent(&thread.id, "auto").await.unwrap();

    // A subtask on it, then the thread handed to it: both ask `m`, the one model the
    // box lists, not the thread's `small`, which it does not serve.
    let home = ScriptedModel::new();
    home.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "Count", "instructions": "count", "agent": "bare"}),
        ),
        ScriptedTurn::call(
            "switch_agent",
            json!({"agent": "bare", "reason": "it has the model"}),
        ),
    ]);
    let live = runtime
        .send(&thread.id, "count", common::choice_of(&home, "small"))
        .await
        .unwrap();
    live.finished().await;
    wait_for_answer(&runtime, &thread.id, "step done").await;
    let asked: Vec<String> = gpu
        .requests_to(CHAT)
        .iter()
        .map(|request| request.json()["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        asked,
        ["m", "m"],
        "the subtask, then the handed-over thread"
    );
}

/// The thread's last assistant message once it reads `text`.
async fn wait_for_answer(
    runtime: &Runtime,
    thread_id: &str,
    text: &str,
) -> cairn_protocol::MessageView {
    for _ in 0..200 {
        let messages = runtime.messages(thread_id).await.unwrap();
        if let Some(last) = messages.iter().rev().find(|m| m.role == Role::Assistant)
            && last.content == text
            && runtime.running().is_empty()
        {
            return last.clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no answer reading {text:?}");
}

#[tokio::test]
async fn a_profile_on_a_server_nobody_named_is_refused_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let options = cairn_runtime::ThreadOptions {
        mode: None,
        workspace: None,
        agent: Some("lost".into()),
    };
    let err = runtime
        .open_thread(None, "hello", &options)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), FailureKind::Invalid);
    let said = err.to_string();
    assert!(
        said.contains("no server named `nowhere`") && said.contains("ollama"),
        "{said}"
    );
    assert!(
        runtime.list_threads(10, 0).await.unwrap().is_empty(),
        "nothing stored"
    );
}
