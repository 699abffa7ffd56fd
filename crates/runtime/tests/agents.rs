//! Agent profiles over stored threads: the thread keeps its profile, the router
//! hands over into a stored synthetic message, and what was shown live is what a
//! reload reads back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::Limits;
use cairn_protocol::{Event, Handover, PermissionMode, Role, TurnStatus};
use cairn_runtime::{FailureKind, ModelChoice, Runtime, RuntimeError};
use cairn_store::Store;
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;

fn choice(model: &ScriptedModel) -> ModelChoice {
    common::choice_of(model, "small")
}

/// A runtime whose user folder holds a `reviewer` on a bigger model.
async fn runtime(dir: &Path) -> Arc<Runtime> {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\ndescription: Reviews changes\nbase: chat\nmodel: big\n\
         tools: {remove: ['write_file|edit_file|run_command']}\n---\nReview carefully.\n",
    )
    .unwrap();
    std::fs::write(agents.join("broken.md"), "---\nbase: nowhere\n---\n").unwrap();
    let store = Store::open(dir.join("cairn.db")).await.unwrap();
    Runtime::with_agents_dir(store, Limits::default(), Some(agents))
}

async fn events_until_done(live: &cairn_core::LiveTurn) -> Vec<Event> {
    let (mut seen, mut receiver) = live.attach();
    while !seen.iter().any(|event| matches!(event, Event::Done(_))) {
        let event = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .unwrap()
            .unwrap();
        seen.push(event);
    }
    seen
}

#[tokio::test]
async fn the_router_hands_over_and_the_thread_continues_as_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let thread = runtime
        .new_thread("review", PermissionMode::Default)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(dir.path()))
        .await
        .unwrap();
    runtime.set_thread_agent(&thread.id, "auto").await.unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().say("A review, then.").tool(
            "switch_agent",
            json!({"agent": "reviewer", "reason": "it reviews", "follow_up": "Review the change."}),
        ),
        ScriptedTurn::text("Looks right."),
    ]);
    let live = runtime
        .send(&thread.id, "review my change", choice(&model))
        .await
        .unwrap();
    let events = events_until_done(&live).await;
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);

    // The router was offered the visible profiles, the broken file was skipped.
    let requests = model.requests();
    let router = requests[0].messages[0].content();
    assert!(router.contains("You are the router"), "{router}");
    assert!(router.contains("- reviewer: Reviews changes"), "{router}");
    assert!(!router.contains("broken"), "{router}");
    assert_eq!(requests[0].model, "small");
    // The next turn ran as the reviewer: its model, instructions, narrower tools,
    // the follow-up as the last message, and switch_agent still offered.
    let second = &requests[1];
    assert_eq!(second.model, "big");
    assert!(second.messages[0].content().contains("Review carefully."));
    assert_eq!(
        second.messages.last().unwrap().content(),
        "Review the change."
    );
    let names = |request: &cairn_providers::ChatRequest| -> Vec<String> {
        request.tools.iter().map(|t| t.name.clone()).collect()
    };
    let (routing, reviewing) = (names(&requests[0]), names(second));
    assert!(routing.contains(&"write_file".to_owned()), "{routing:?}");
    assert!(reviewing.contains(&"read_file".to_owned()), "{reviewing:?}");
    assert!(
        reviewing.contains(&"switch_agent".to_owned()),
        "{reviewing:?}"
    );
    for removed in ["write_file", "edit_file", "run_command"] {
        assert!(!reviewing.contains(&removed.to_owned()), "{reviewing:?}");
    }

    // One `done`, for the last answer; the switch between the two answers.
    let done: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Done(d) => Some(d.message_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(done, [outcome.message_id.as_str()]);
    let switched = events
        .iter()
        .find_map(|e| match e {
            Event::AgentSwitched(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (
            switched.from.as_str(),
            switched.to.as_str(),
            switched.message_id.as_str()
        ),
        ("auto", "reviewer", outcome.message_id.as_str())
    );

    // What a reload reads: the question, the router's answer, the synthetic
    // follow-up marked as the hand-over, the reviewer's answer.
    let reopened = Store::open(dir.path().join("cairn.db")).await.unwrap();
    let messages = reopened.messages(&thread.id).await.unwrap();
    let shape: Vec<(Role, &str, bool)> = messages
        .iter()
        .map(|m| (m.role, m.content.as_str(), m.synthetic))
        .collect();
    assert_eq!(
        shape,
        [
            (Role::User, "review my change", false),
            (Role::Assistant, "A review, then.", false),
            (Role::User, "Review the change.", true),
            (Role::Assistant, "Looks right.", false),
        ]
    );
    assert_eq!(
        messages[2].handover,
        Some(Handover {
            from: "auto".into(),
            to: "reviewer".into(),
            reason: Some("it reviews".into()),
        })
    );
    assert_eq!(messages[3].id, outcome.message_id);
    let thread = reopened.thread(&thread.id).await.unwrap();
    assert_eq!(
        (thread.agent.as_deref(), thread.routes),
        (Some("reviewer"), true)
    );

    // The next real message resets the count and continues with the reviewer.
    model.root([ScriptedTurn::text("Still fine.")]);
    let live = runtime
        .send(&thread.id, "and now?", choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
    let third = model.requests().pop().unwrap();
    assert_eq!(third.model, "big");
    assert!(third.tools.iter().any(|t| t.name == "switch_agent"));
}

#[tokio::test]
async fn a_thread_starts_with_the_default_agent_and_refuses_one_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    assert_eq!(runtime.default_agent().await.unwrap(), "chat");
    let thread = runtime
        .new_thread("hi", PermissionMode::Default)
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("hello")]);
    let live = runtime
        .send(&thread.id, "hi", choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
    let stored = runtime.thread(&thread.id).await.unwrap();
    assert_eq!(
        (stored.agent.as_deref(), stored.routes),
        (Some("chat"), false)
    );
    assert!(
        !model.requests()[0]
            .tools
            .iter()
            .any(|t| t.name == "switch_agent")
    );

    for (id, expected) in [
        (
            "explore",
            "`explore` is an agent for subtasks only. Agents: auto, chat, reviewer",
        ),
        (
            "ghost",
            "there is no agent `ghost`. Agents: auto, chat, reviewer",
        ),
    ] {
        let err = runtime.set_thread_agent(&thread.id, id).await.unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert_eq!(err.kind(), FailureKind::Invalid);
        let err = runtime.set_default_agent(id).await.unwrap_err();
        assert!(matches!(err, RuntimeError::Agent(_)));
    }
    let err = runtime
        .set_thread_agent(&thread.id, "broken")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("its base `nowhere` is unknown"),
        "{err}"
    );

    // A new default applies to chats that have not answered yet.
    runtime.set_default_agent("auto").await.unwrap();
    let routed = runtime
        .new_thread("next", PermissionMode::Default)
        .await
        .unwrap();
    model.root([ScriptedTurn::text("routed")]);
    let live = runtime
        .send(&routed.id, "hi", choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
    let stored = runtime.thread(&routed.id).await.unwrap();
    assert_eq!(
        (stored.agent.as_deref(), stored.routes),
        (Some("auto"), true)
    );
    assert!(
        model
            .requests()
            .last()
            .unwrap()
            .tools
            .iter()
            .any(|t| t.name == "switch_agent")
    );
}

#[tokio::test]
async fn a_workspace_profile_overrides_the_users_for_its_threads() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".cairn/agents")).unwrap();
    std::fs::write(
        project.join(".cairn/agents/reviewer.md"),
        "---\ndescription: The project's reviewer\ntools: {add: [read_file]}\n---\nProject rules.\n",
    )
    .unwrap();
    let thread = runtime
        .new_thread("x", PermissionMode::Default)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(&project))
        .await
        .unwrap();
    runtime
        .set_thread_agent(&thread.id, "reviewer")
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("ok")]);
    let live = runtime
        .send(&thread.id, "go", choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
    let request = &model.requests()[0];
    assert_eq!(
        request.model, "small",
        "the project's reviewer names no model"
    );
    assert!(request.messages[0].content().contains("Project rules."));
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["read_file"]);
}
