//! The shared turn flow: a stored thread's settings apply, bad requests are refused
//! before anything is stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use cairn_core::Limits;
use cairn_protocol::{Event, MessageStatus, PermissionMode, Role, ThreadInfo, TurnStatus};
use cairn_runtime::{ModelChoice, Runtime, RuntimeError};
use cairn_store::Store;
use cairn_testkit::{ScriptedModel, ScriptedTurn, server_error};
use serde_json::json;

fn choice(model: &ScriptedModel) -> ModelChoice {
    common::choice_of(model, "scripted")
}

async fn runtime() -> (tempfile::TempDir, Arc<Runtime>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    (dir, Runtime::new(store, Limits::default()))
}

/// A thread in Default mode, with no workspace.
async fn default_thread(runtime: &Runtime) -> ThreadInfo {
    runtime
        .new_thread("x", PermissionMode::Default)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_thread_runs_in_its_own_mode_with_its_workspace() {
    let (dir, runtime) = runtime().await;
    let thread = runtime
        .new_thread("Write the notes", PermissionMode::Plan)
        .await
        .unwrap();
    runtime
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
    // The mode is the thread's own: it opens the thread's first message.
    assert!(
        request.messages[1]
            .content()
            .contains("Permission mode: plan")
    );
    let stored = runtime.thread(&thread.id).await.unwrap();
    assert_eq!(
        (stored.model.as_deref(), stored.dialect.as_deref()),
        (Some("scripted"), Some("openai"))
    );
    assert_eq!(runtime.messages(&thread.id).await.unwrap().len(), 2);
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_stored() {
    let (dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
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
        .set_workspace(&thread.id, Some(&gone))
        .await
        .unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let err = runtime
        .send(&thread.id, "hi", choice(&model))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Workspace(_)), "{err}");
    assert!(runtime.messages(&thread.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failed_answer_is_retried_in_place_without_repeating_the_question() {
    let (_dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
    let model = ScriptedModel::new();
    assert!(
        runtime.retry(&thread.id, choice(&model)).await.is_err(),
        "nothing to retry in an empty chat"
    );
    model.root([ScriptedTurn::new().fail(server_error("the server fell over"))]);
    let live = runtime
        .send(&thread.id, "What is 2 + 2?", choice(&model))
        .await
        .unwrap();
    assert_eq!(live.finished().await.unwrap().status, TurnStatus::Failed);

    model.root([ScriptedTurn::text("4")]);
    let live = runtime.retry(&thread.id, choice(&model)).await.unwrap();
    assert_eq!(live.finished().await.unwrap().status, TurnStatus::Completed);
    let messages = runtime.messages(&thread.id).await.unwrap();
    let shown: Vec<_> = messages
        .iter()
        .map(|m| (m.role, m.content.as_str(), m.status))
        .collect();
    assert_eq!(
        shown,
        [
            (Role::User, "What is 2 + 2?", MessageStatus::Complete),
            (Role::Assistant, "4", MessageStatus::Complete),
        ]
    );
    let asked = &model.requests()[1].messages;
    assert_eq!(
        asked
            .iter()
            .filter(|m| m.content().ends_with("What is 2 + 2?"))
            .count(),
        1,
        "the model saw the question once: {asked:?}"
    );
    assert!(
        runtime.retry(&thread.id, choice(&model)).await.is_err(),
        "a good answer is not retried"
    );
}

#[tokio::test]
async fn two_sends_racing_on_one_thread_store_one_message() {
    let (_dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("first")]);
    // Both are polled before either has stored anything: the store's awaits let the
    // second run its checks while the first is still preparing.
    let (first, second) = tokio::join!(
        runtime.send(&thread.id, "one", choice(&model)),
        runtime.send(&thread.id, "two", choice(&model)),
    );
    let live = first.unwrap();
    assert!(
        matches!(
            second,
            Err(RuntimeError::Session(
                cairn_core::SessionError::AlreadyRunning
            ))
        ),
        "{:?}",
        second.map(|_| ())
    );
    live.finished().await.unwrap();
    let messages = runtime.messages(&thread.id).await.unwrap();
    assert_eq!(
        messages.len(),
        2,
        "one question and its answer: {messages:?}"
    );

    // A plan run refused for a busy thread leaves its mode alone.
    model.root([ScriptedTurn::text("second")]);
    let live = runtime
        .send(&thread.id, "three", choice(&model))
        .await
        .unwrap();
    assert!(
        runtime
            .run_plan(&thread.id, PermissionMode::Auto, choice(&model), None)
            .await
            .is_err()
    );
    live.finished().await.unwrap();
    let stored = runtime.thread(&thread.id).await.unwrap();
    assert_eq!(stored.mode, PermissionMode::Default);
    // And once the thread is free it can be claimed again.
    model.root([ScriptedTurn::text("third")]);
    let live = runtime
        .send(&thread.id, "four", choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
}

#[tokio::test]
async fn a_front_end_can_leave_and_come_back_to_a_running_turn() {
    let (_dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
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
        .live_turn(&thread.id)
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

#[tokio::test]
async fn the_workspace_agents_md_guides_the_model() {
    let (dir, runtime) = runtime().await;
    std::fs::write(
        dir.path().join("AGENTS.md"),
        "Always run `cargo fmt` before committing.",
    )
    .unwrap();
    let thread = default_thread(&runtime).await;
    runtime
        .set_workspace(&thread.id, Some(dir.path()))
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("noted")]);
    runtime
        .send(&thread.id, "hi", choice(&model))
        .await
        .unwrap()
        .finished()
        .await
        .unwrap();
    // The project's instructions are the thread's own: they open its first message.
    let first = model.requests()[0].messages[1].content().to_owned();
    assert!(first.contains("Project instructions (AGENTS.md in the workspace):\nAlways run `cargo fmt` before committing."), "{first}");
    assert!(first.ends_with("hi"), "{first}");
    let tools: Vec<_> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    for name in [
        "read_file",
        "list_dir",
        "search_files",
        "write_file",
        "edit_file",
        "run_command",
        "web_fetch",
        "run_subtask",
        "load_tools",
    ] {
        assert!(
            tools.contains(&name.to_owned()),
            "{name} missing from {tools:?}"
        );
    }
    // The rarely needed ones wait until loaded, named where the model looks.
    let load = model.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == "load_tools")
        .unwrap()
        .description
        .clone();
    assert_eq!(
        load,
        "Make more tools callable: llm (set_llm_params), memory (memory_list, memory_read, \
         memory_write), plans (create_plan), todo (todo_write)."
    );
}

#[tokio::test]
async fn a_thread_without_a_workspace_has_no_file_or_command_tools() {
    let (_dir, runtime) = runtime().await;
    let thread = runtime.new_thread("x", PermissionMode::Auto).await.unwrap();
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("ok")]);
    runtime
        .send(&thread.id, "hi", choice(&model))
        .await
        .unwrap()
        .finished()
        .await
        .unwrap();
    let tools: Vec<_> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        !tools.iter().any(|t| [
            "read_file",
            "write_file",
            "run_command",
            "search_files",
            "edit_file",
            "list_dir"
        ]
        .contains(&t.as_str())),
        "{tools:?}"
    );
    assert!(tools.contains(&"web_fetch".to_owned()));
}

#[tokio::test]
async fn a_plan_is_offered_then_carried_out_in_another_mode() {
    let (dir, runtime) = runtime().await;
    let thread = runtime
        .new_thread("Tidy the notes", PermissionMode::Plan)
        .await
        .unwrap();
    runtime
        .set_workspace(&thread.id, Some(dir.path()))
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::text("1. Write notes.md with a heading."),
        ScriptedTurn::call(
            "write_file",
            json!({"path": "notes.md", "content": "# Notes\n"}),
        ),
        ScriptedTurn::text("Done."),
    ]);
    let live = runtime
        .send(&thread.id, "Tidy the notes", choice(&model))
        .await
        .unwrap();
    let (mut events, mut rest) = live.attach();
    while let Some(event) = rest.recv().await {
        let done = matches!(event, Event::Done(_));
        events.push(event);
        if done {
            break;
        }
    }
    let plan = events.iter().find_map(|e| match e {
        Event::PlanReady(plan) => Some(plan.clone()),
        _ => None,
    });
    let plan = plan.expect("a plan_ready event");
    assert_eq!(
        (plan.thread_id.as_str(), plan.plan.as_str()),
        (thread.id.as_str(), "1. Write notes.md with a heading.")
    );
    assert!(matches!(
        runtime
            .run_plan(&thread.id, PermissionMode::Plan, choice(&model), None)
            .await,
        Err(RuntimeError::Plan)
    ));

    let outcome = runtime
        .run_plan(&thread.id, PermissionMode::Auto, choice(&model), None)
        .await
        .unwrap()
        .finished()
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "# Notes\n"
    );
    assert_eq!(
        runtime.thread(&thread.id).await.unwrap().mode,
        PermissionMode::Auto
    );
    let second = &model.requests()[1];
    assert_eq!(
        second.messages.last().unwrap().content(),
        "Carry out the plan above."
    );
    assert!(
        second
            .messages
            .iter()
            .any(|m| m.content() == "1. Write notes.md with a heading."),
        "the plan is in the history"
    );
    // Stored as the model read it, shown as what the user did.
    let messages = runtime.messages(&thread.id).await.unwrap();
    let question = &messages[messages.len() - 2];
    assert_eq!(
        (question.content.as_str(), question.shown.as_deref()),
        ("Carry out the plan above.", Some("Carry out the plan"))
    );
}

#[tokio::test]
async fn memory_outlives_the_thread_that_wrote_it() {
    let (_dir, runtime) = runtime().await;
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("memory_write", json!({"key": "user.name", "value": "Ada"})),
        ScriptedTurn::text("I'll remember."),
        ScriptedTurn::call("memory_read", json!({"key": "user.name"})),
        ScriptedTurn::text("You are Ada."),
    ]);
    let first = runtime.new_thread("x", PermissionMode::Auto).await.unwrap();
    runtime
        .send(&first.id, "I am Ada", choice(&model))
        .await
        .unwrap()
        .finished()
        .await
        .unwrap();
    let second = runtime
        .new_thread("y", PermissionMode::Default)
        .await
        .unwrap();
    let outcome = runtime
        .send(&second.id, "who am I?", choice(&model))
        .await
        .unwrap()
        .finished()
        .await
        .unwrap();
    assert_eq!(outcome.text, "You are Ada.");
    let read = &model.requests()[3].messages;
    assert_eq!(
        read.last().unwrap().content(),
        "Ada",
        "memory_read ran without asking (a read) and found it"
    );
}

#[tokio::test]
async fn the_agent_sets_its_threads_parameters_only_once_the_user_allows_it() {
    let (_dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("set_llm_params", json!({"temperature": 5})),
        ScriptedTurn::call(
            "set_llm_params",
            json!({"temperature": 0.2, "model": "big"}),
        ),
        ScriptedTurn::text("Set."),
    ]);
    let live = runtime
        .send(&thread.id, "be precise", choice(&model))
        .await
        .unwrap();
    let (seen, mut events) = live.attach();
    let mut seen = seen.into_iter();
    let mut asked = Vec::new();
    // Default mode: each call asks (allowed here); the first is then refused by its
    // own check. A question may already be in what streamed before the attach.
    while asked.len() < 2 {
        let event = match seen.next() {
            Some(event) => event,
            None => tokio::time::timeout(std::time::Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap(),
        };
        if let Event::ToolApprovalRequest(request) = event {
            live.approvals()
                .answer(
                    &request.approval_id,
                    cairn_protocol::ApprovalDecision::Allow,
                )
                .unwrap();
            asked.push(request);
        }
    }
    live.finished().await.unwrap();
    assert!(
        asked
            .iter()
            .all(|r| r.category == cairn_protocol::ToolCategory::Write)
    );
    let settings = runtime.llm_settings(Some(&thread.id)).await.unwrap();
    let mine = settings.thread.unwrap();
    assert_eq!(
        (mine.temperature, mine.model.as_deref()),
        (Some(0.2), Some("big"))
    );
    assert!(settings.defaults.is_empty(), "only this thread's");
    let results: Vec<String> = Store::open(runtime.database_path())
        .await
        .unwrap()
        .history(&thread.id)
        .await
        .unwrap()
        .iter()
        .filter(|m| matches!(m, cairn_protocol::ChatMessage::Tool { .. }))
        .map(|m| m.content().to_owned())
        .collect();
    assert!(
        results[0].contains("temperature takes a number from 0 to 2, not `5`"),
        "{results:?}"
    );
    assert!(
        results[1].contains("it applies from the next message"),
        "{results:?}"
    );
}

#[tokio::test]
async fn each_answer_is_accounted_with_its_calls_tools_time_and_priced_cost() {
    let (dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
    runtime
        .set_workspace(&thread.id, Some(dir.path()))
        .await
        .unwrap();
    std::fs::write(dir.path().join("notes.md"), "hello").unwrap();
    runtime.set_price("scripted", 2.0, 10.0).await.unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("read_file", json!({"path": "notes.md"})).usage(1_000, 100),
        ScriptedTurn::text("It says hello.").usage(2_000, 200),
    ]);
    let first = runtime
        .send(&thread.id, "What is in notes?", choice(&model))
        .await
        .unwrap();
    first.finished().await.unwrap();
    model.root([ScriptedTurn::text("Bye.").usage(500, 50)]);
    let second = runtime
        .send(&thread.id, "Thanks", choice(&model))
        .await
        .unwrap();
    second.finished().await.unwrap();

    let usage = runtime.thread_usage(&thread.id).await.unwrap();
    let answers: Vec<_> = runtime
        .messages(&thread.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.id)
        .collect();
    let ids: Vec<_> = usage.answers.iter().map(|a| a.message_id.clone()).collect();
    assert_eq!(ids, answers, "every answer, in order");
    let first = &usage.answers[0];
    assert_eq!(
        (
            first.calls.llm_calls,
            first.calls.prompt_tokens,
            first.calls.completion_tokens
        ),
        (2, 3_000, 300)
    );
    assert_eq!(first.tool_calls, 1);
    assert!((first.calls.cost - (3_000.0 * 2.0 + 300.0 * 10.0) / 1e6).abs() < 1e-12);
    assert_eq!(usage.answers[1].tool_calls, 0);
    assert_eq!(usage.total.llm_calls, 3);
    assert_eq!(usage.total.total_tokens(), 3_850);
    assert_eq!(usage.tool_calls, 1);
    let summed: f64 = usage.answers.iter().map(|a| a.calls.cost).sum();
    assert!((usage.total.cost - summed).abs() < 1e-12);
    // The sums match what the store reports for the thread.
    let stored = runtime.thread_detail(&thread.id).await.unwrap().usage;
    assert_eq!(stored.total_tokens(), usage.total.total_tokens());

    runtime.remove_price("scripted").await.unwrap();
    let free = runtime.thread_usage(&thread.id).await.unwrap();
    assert_eq!(free.total.cost, 0.0, "a model with no price costs nothing");
    assert!(
        runtime.thread_usage("no-such-thread").await.is_err(),
        "a thread that is not there is an error, not an empty log"
    );
}

#[tokio::test]
async fn the_last_answer_can_be_given_again_and_the_last_question_rewritten() {
    use cairn_runtime::Redo;
    let (_dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("5")]);
    let live = runtime
        .send(&thread.id, "What is 2 + 2?", choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
    let shown = |messages: Vec<cairn_protocol::MessageView>| -> Vec<(Role, String)> {
        messages.into_iter().map(|m| (m.role, m.content)).collect()
    };

    // Regenerate: a good answer too, to the same question, in its place.
    model.root([ScriptedTurn::text("4")]);
    let live = runtime
        .redo(&thread.id, Redo::Answer, choice(&model))
        .await
        .unwrap();
    assert_eq!(live.finished().await.unwrap().status, TurnStatus::Completed);
    assert_eq!(
        shown(runtime.messages(&thread.id).await.unwrap()),
        [
            (Role::User, "What is 2 + 2?".into()),
            (Role::Assistant, "4".into())
        ]
    );
    let asked = &model.requests()[1].messages;
    assert!(
        asked.iter().all(|m| m.content() != "5"),
        "the answer given up is not shown to the model: {asked:?}"
    );

    // A blank edit is refused and loses nothing.
    assert!(
        runtime
            .redo(&thread.id, Redo::Edited("  "), choice(&model))
            .await
            .is_err()
    );
    assert_eq!(runtime.messages(&thread.id).await.unwrap().len(), 2);

    // Edit and resend: the question rewritten in place, then answered.
    model.root([ScriptedTurn::text("6")]);
    let live = runtime
        .redo(&thread.id, Redo::Edited("What is 3 + 3?"), choice(&model))
        .await
        .unwrap();
    live.finished().await.unwrap();
    assert_eq!(
        shown(runtime.messages(&thread.id).await.unwrap()),
        [
            (Role::User, "What is 3 + 3?".into()),
            (Role::Assistant, "6".into())
        ]
    );
    let asked = &model.requests()[2].messages;
    assert!(
        asked
            .last()
            .is_some_and(|m| m.content().ends_with("What is 3 + 3?")),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .all(|m| !m.content().contains("What is 2 + 2?"))
    );
    // The search finds the question as it now reads.
    let hits = runtime.search_threads("3 + 3", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
}

/// The threads this process marked as answering, read from the file as another
/// process would.
async fn marked(runtime: &Runtime) -> Vec<String> {
    use sqlx::{ConnectOptions, sqlite::SqliteConnectOptions};
    let mut connection = SqliteConnectOptions::new()
        .filename(runtime.database_path())
        .connect()
        .await
        .unwrap();
    sqlx::query_scalar("SELECT thread_id FROM answering")
        .fetch_all(&mut connection)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_thread_is_marked_answering_for_other_processes_until_its_turn_ends() {
    let (_dir, runtime) = runtime().await;
    let thread = default_thread(&runtime).await;
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("Done.").delay(std::time::Duration::from_millis(300))]);
    let live = runtime
        .send(&thread.id, "Go.", choice(&model))
        .await
        .unwrap();
    assert_eq!(marked(&runtime).await, vec![thread.id.clone()]);
    // Here too, the rule holds: not deleted or renamed while it answers.
    let refused = runtime.delete_thread(&thread.id).await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::Answering { doing: "deleting" }),
        "{refused}"
    );
    assert!(runtime.rename_thread(&thread.id, "New").await.is_err());
    live.finished().await.unwrap();
    // Released just after the commit, in the background: a long-lived app must not
    // keep its marks.
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while !marked(&runtime).await.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the mark is taken off");
    runtime.delete_thread(&thread.id).await.unwrap();
}
