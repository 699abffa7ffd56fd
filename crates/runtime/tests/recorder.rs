//! Turns recorded through the engine into a real SQLite file: the answer written as
//! it builds up and committed at the end, replayed exactly after a restart, searched,
//! exported; a full disk; the rules and the memory the engine and tools read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use cairn_core::{Engine, Limits, RuleList, SessionGrants, Sessions, Toolbelt, TurnRequest};
use cairn_protocol::{
    ChatMessage, ErrorKind, Event, MessageStatus, MessageView, PermissionMode, Role, TurnStatus,
};
use cairn_providers::Sampling;
use cairn_runtime::{Recorder, RuntimeError, StoredMemory};
use cairn_store::{NewThread, Store, StoreError, StoreOptions};
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use cairn_tools::MemoryStore;
use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, SqliteConnection};

async fn fresh() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("nested/cairn.db"))
        .await
        .unwrap();
    (dir, store)
}

fn request(thread: &str, message: &str, history: Vec<ChatMessage>) -> TurnRequest {
    TurnRequest {
        thread_id: thread.into(),
        message_id: message.into(),
        model: "scripted".into(),
        history,
        mode: PermissionMode::Auto,
        tools: Toolbelt::new(cairn_tools::file_tools()).unwrap(),
        workspace: None,
        sampling: Sampling::default(),
        rules: Default::default(),
        instructions: None,
        agents: Default::default(),
        plans: None,
        load_tools: Vec::new(),
    }
}

/// Runs one turn the way front ends do: rows first, then the engine under the
/// session manager with the recorder, to its committed end.
async fn turn(
    store: &Store,
    model: &ScriptedModel,
    thread: &str,
    prompt: &str,
) -> (String, cairn_core::TurnOutcome, Vec<Event>) {
    let mut history = store.history(thread).await.unwrap();
    history.push(ChatMessage::user(prompt));
    let start = store.begin_turn(thread, prompt).await.unwrap();
    let recorder = Recorder::start(store.clone(), thread.to_owned(), start.assistant_id.clone());
    let sessions = Sessions::new();
    let engine = Engine::new(Arc::new(model.clone()), Limits::default());
    let live = sessions
        .start(
            engine,
            request(thread, &start.assistant_id, history),
            Arc::new(SessionGrants::new()),
            recorder,
        )
        .unwrap();
    let (mut events, mut receiver) = live.attach();
    while let Some(event) = receiver.recv().await {
        let done = matches!(event, Event::Done(_));
        events.push(event);
        if done {
            break;
        }
    }
    let outcome = live.finished().await.unwrap();
    (start.assistant_id, outcome, events)
}

async fn raw(path: &std::path::Path) -> SqliteConnection {
    SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_turn_is_committed_with_its_tree_usage_and_model_calls() {
    let (_dir, store) = fresh().await;
    let thread = store
        .create_thread(NewThread {
            title: "t".into(),
            ..NewThread::default()
        })
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .think("hmm")
            .say("I'll delegate.")
            .tool(
                "run_subtask",
                json!({"title": "Survey", "instructions": "look around"}),
            )
            .usage(50, 5),
        ScriptedTurn::text("All done.").usage(80, 3),
    ]);
    model.subtask("Survey", [ScriptedTurn::text("nothing here").usage(20, 2)]);
    let (assistant_id, outcome, events) = turn(&store, &model, &thread.id, "look around").await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(matches!(events.last(), Some(Event::Done(_))));

    let messages = store.messages(&thread.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (messages[0].role, messages[0].content.as_str()),
        (Role::User, "look around")
    );
    let answer = &messages[1];
    assert_eq!(
        answer,
        &MessageView {
            id: assistant_id,
            thread_id: thread.id.clone(),
            role: Role::Assistant,
            content: "I'll delegate.\n\nAll done.".into(),
            reasoning: Some("hmm".into()),
            execution_tree: Some(outcome.tree.clone()),
            usage: Some(outcome.usage),
            status: MessageStatus::Complete,
            error: None,
            synthetic: false,
            handover: None,
            created_at: answer.created_at,
            updated_at: answer.updated_at,
            restorable: Vec::new(),
            shown: None,
        }
    );
    assert_eq!(outcome.tree.nodes[0].title.as_deref(), Some("Survey"));
    let usage = store.thread_usage(&thread.id).await.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.llm_calls
        ),
        (150, 10, 3)
    );
    assert_eq!(store.thread(&thread.id).await.unwrap().message_count, 2);
}

#[tokio::test]
async fn the_next_turn_after_a_restart_sends_exactly_what_it_would_have() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .say("Reading.")
            .tool_with_id("call_a", "list_dir", json!({"path": "."}))
            .tool_raw("read_file", "{broken"),
        ScriptedTurn::text("Here it is."),
        ScriptedTurn::text("Second answer."),
    ]);
    let thread_id = {
        let store = Store::open(&path).await.unwrap();
        let thread = store.create_thread(NewThread::default()).await.unwrap();
        turn(&store, &model, &thread.id, "first question").await;
        store.close().await;
        thread.id
    };
    // What the second request would have been had nothing stopped: the first turn's
    // request, plus everything it added, plus the new question.
    let first_request = model.requests()[0].clone();
    let first_outcome_messages: Vec<ChatMessage> = {
        let replies = model.requests()[1].messages.clone();
        let added = replies[first_request.messages.len()..].to_vec();
        let mut all = added;
        all.push(ChatMessage::assistant("Here it is."));
        all
    };
    let mut expected = first_request.messages[1..].to_vec();
    expected.extend(first_outcome_messages);
    expected.push(ChatMessage::user("second question"));

    let store = Store::open(&path).await.unwrap();
    turn(&store, &model, &thread_id, "second question").await;
    let after_restart = model.requests().last().unwrap().clone();
    assert_eq!(
        after_restart.messages[1..],
        expected[..],
        "replayed history, system prompt aside"
    );
    assert_eq!(after_restart.messages[0], first_request.messages[0]);
}

#[tokio::test]
async fn a_turn_that_never_finished_replays_as_a_valid_history() {
    let (_dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().say("Checking.").tool_with_id(
            "call_1",
            "list_dir",
            json!({"path": "."}),
        ),
        ScriptedTurn::new().say("Half an answ").hang(),
    ]);
    let start = store.begin_turn(&thread.id, "go").await.unwrap();
    let recorder = Recorder::start(store.clone(), thread.id.clone(), start.assistant_id.clone());
    let sessions = Sessions::new();
    let engine = Engine::new(Arc::new(model.clone()), Limits::default());
    let live = sessions
        .start(
            engine,
            request(
                &thread.id,
                &start.assistant_id,
                vec![ChatMessage::user("go")],
            ),
            Arc::new(SessionGrants::new()),
            recorder,
        )
        .unwrap();
    let (_, mut events) = live.attach();
    loop {
        if let Some(Event::Chunk(chunk)) = events.recv().await
            && chunk.content == "Half an answ"
        {
            break;
        }
    }
    // What a crash right now would leave: wait past the text flush, then read the file
    // from a second, independent store without ending the turn.
    tokio::time::sleep(cairn_runtime::TEXT_FLUSH + Duration::from_millis(200)).await;
    let other = Store::open(store.path()).await.unwrap();
    let messages = other.messages(&thread.id).await.unwrap();
    assert_eq!(messages[1].status, MessageStatus::Partial);
    assert_eq!(messages[1].content, "Checking.\n\nHalf an answ");
    assert_eq!(messages[1].execution_tree.as_ref().unwrap().nodes.len(), 1);
    let history = other.history(&thread.id).await.unwrap();
    let roles: Vec<_> = history.iter().map(ChatMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(history[3], ChatMessage::assistant("Half an answ"));
    assert_eq!(other.integrity_check().await.unwrap(), "ok");
    live.stop();
    live.finished().await.unwrap();
    assert_eq!(
        store.messages(&thread.id).await.unwrap()[1].status,
        MessageStatus::Cancelled
    );
}

#[tokio::test]
async fn search_finds_words_across_threads() {
    let (_dir, store) = fresh().await;
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::text("Rust's borrow checker keeps lifetimes honest."),
        ScriptedTurn::text("Paella needs saffron."),
    ]);
    let a = store
        .create_thread(NewThread {
            title: "Rust".into(),
            ..NewThread::default()
        })
        .await
        .unwrap();
    let b = store
        .create_thread(NewThread {
            title: "Cooking".into(),
            ..NewThread::default()
        })
        .await
        .unwrap();
    turn(&store, &model, &a.id, "explain the borrow checker").await;
    turn(&store, &model, &b.id, "how do I make paella?").await;

    let hits = store.search("borrow", 10).await.unwrap();
    assert_eq!(hits.len(), 2, "the question and the answer");
    assert!(
        hits.iter()
            .all(|hit| hit.thread_id == a.id && hit.thread_title == "Rust")
    );
    assert!(
        hits.iter()
            .any(|hit| hit.role == Role::Assistant && hit.snippet.contains("[borrow]"))
    );
    let prefix = store.search("saffr", 10).await.unwrap();
    assert_eq!(prefix.len(), 1, "the last word matches as a prefix");
    assert_eq!(prefix[0].thread_id, b.id);
    assert!(
        store.search("\"unbalanced (", 10).await.unwrap().is_empty(),
        "odd input is no error"
    );
}

#[tokio::test]
async fn a_thread_exports_as_json_that_imports_back_the_same_and_as_markdown() {
    let (_dir, store) = fresh().await;
    let thread = store
        .create_thread(NewThread {
            title: "Survey".into(),
            ..NewThread::default()
        })
        .await
        .unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().say("Looking.").tool(
            "run_subtask",
            json!({"title": "Count", "instructions": "count"}),
        ),
        ScriptedTurn::text("There are **3**."),
    ]);
    model.subtask(
        "Count",
        [
            ScriptedTurn::call("list_dir", json!({"path": "."})),
            ScriptedTurn::text("3 files"),
        ],
    );
    turn(&store, &model, &thread.id, "how many files?").await;
    let export = store.export_json(&thread.id).await.unwrap();
    let json = serde_json::to_string_pretty(&export).unwrap();
    let parsed: cairn_store::ThreadExport = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed, export);
    assert!(json.contains("\"execution_tree\""));

    let (_other_dir, other) = fresh().await;
    other.import(&parsed).await.unwrap();
    assert_eq!(other.export_json(&thread.id).await.unwrap(), export);
    assert_eq!(
        other.history(&thread.id).await.unwrap(),
        store.history(&thread.id).await.unwrap()
    );
    assert!(
        matches!(other.import(&parsed).await, Err(StoreError::Invalid(_))),
        "not twice"
    );

    let markdown = store.export_markdown(&thread.id).await.unwrap();
    assert!(markdown.starts_with("# Survey\n"));
    assert!(markdown.contains("## You\n\nhow many files?"));
    // The answer in the order it was shown, the subtask's own text under its card.
    let answer = &markdown[markdown.find("## Cairn").unwrap()..];
    assert!(
        answer.starts_with(
            "## Cairn\n\n\
             Looking.\n\n\
             - ✓ run_subtask “Count” → 3 files"
        ),
        "{answer}"
    );
    let after_card = &answer[answer.find("run_subtask").unwrap()..];
    assert!(
        after_card.contains("\n  - ✗ list_dir `{\"path\":\".\"}` → Error: refused"),
        "a failed call is marked, inside its subtask: {answer}"
    );
    let child_text = after_card.find("\n  3 files\n").expect(answer);
    let closing = after_card.find("\nThere are **3**.\n").expect(answer);
    assert!(
        after_card.find("list_dir").unwrap() < child_text && child_text < closing,
        "the subtask's call, then its text, then the answer's last words: {answer}"
    );
}

#[tokio::test]
async fn a_committed_answer_keeps_its_timeline_and_an_old_one_still_loads() {
    let (_dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().say("Let me split it.").tool(
            "run_subtask",
            json!({"title": "Part", "instructions": "go"}),
        ),
        ScriptedTurn::text("All done."),
    ]);
    model.subtask(
        "Part",
        [
            ScriptedTurn::new()
                .say("Child here.")
                .tool("list_dir", json!({"path": "."})),
            ScriptedTurn::text("Child done."),
        ],
    );
    let (message_id, _, events) = turn(&store, &model, &thread.id, "split").await;
    let mut live = cairn_protocol::TimelineBuilder::new();
    for event in &events {
        live.observe(event);
    }
    let messages = store.messages(&thread.id).await.unwrap();
    let answer = messages.iter().find(|m| m.id == message_id).unwrap();
    let tree = answer.execution_tree.as_ref().unwrap();
    assert_eq!(tree.timeline, live.entries(), "stored as it streamed");
    let subtask = &tree.nodes[0].id;
    let read = |parent: Option<&str>| -> Vec<String> {
        cairn_protocol::pieces(Some(tree), &answer.content, parent)
            .into_iter()
            .map(|piece| match piece {
                cairn_protocol::Piece::Text(text) => text.to_owned(),
                cairn_protocol::Piece::Call(node) => format!("[{}]", node.name),
            })
            .collect()
    };
    assert_eq!(
        read(None),
        ["Let me split it.", "[run_subtask]", "All done."]
    );
    assert_eq!(
        read(Some(subtask)),
        ["Child here.", "[list_dir]", "Child done."]
    );
    assert_eq!(
        answer.content, "Let me split it.\n\nAll done.",
        "the text the model saw"
    );

    // A row written before timelines were kept: its calls, then its text.
    let mut old = tree.clone();
    old.timeline.clear();
    let json = serde_json::to_string(&old).unwrap();
    assert!(!json.contains("timeline"), "{json}");
    let mut connection = raw(store.path()).await;
    sqlx::query("UPDATE messages SET execution_tree = ? WHERE id = ?")
        .bind(&json)
        .bind(&message_id)
        .execute(&mut connection)
        .await
        .unwrap();
    let messages = store.messages(&thread.id).await.unwrap();
    let answer = messages.iter().find(|m| m.id == message_id).unwrap();
    let legacy: Vec<_> =
        cairn_protocol::pieces(answer.execution_tree.as_ref(), &answer.content, None)
            .into_iter()
            .map(|piece| matches!(piece, cairn_protocol::Piece::Text(_)))
            .collect();
    assert_eq!(legacy, [false, true], "the card, then the text");
}

#[tokio::test]
async fn a_full_disk_fails_the_commit_and_the_turn_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let store = Store::open(&path).await.unwrap();
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    store.close().await;
    let mut connection = raw(&path).await;
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    let pages = u64::try_from(pages).unwrap();
    let store = Store::open_with(
        &path,
        StoreOptions {
            max_pages: Some(pages + 8),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();

    // A turn whose answer does not fit: the commit fails, the user is told, and the
    // file stays sound.
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("y".repeat(200_000))]);
    let (_, outcome, events) = turn(&store, &model, &thread.id, "small question").await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    let error = events.iter().find_map(|e| match e {
        Event::Error(error) => Some(error.clone()),
        _ => None,
    });
    let error = error.expect("a storage error event");
    assert_eq!(error.kind, ErrorKind::Storage);
    assert!(error.message.contains("is full"), "{}", error.message);
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
    let messages = store.messages(&thread.id).await.unwrap();
    assert_eq!(
        messages[0].content, "small question",
        "what fit before is kept"
    );
    assert_eq!(messages[1].status, MessageStatus::Partial);
}

#[tokio::test]
async fn rules_are_checked_before_they_are_stored_and_memory_serves_the_tools() {
    let (_dir, store) = fresh().await;
    let runtime = cairn_runtime::Runtime::new(store.clone(), cairn_core::Limits::default());
    let added = runtime
        .add_rule(RuleList::Allow, "  run_command(cargo test:*) ")
        .await
        .unwrap();
    assert_eq!(
        added.rule, "run_command(cargo test:*)",
        "stored as the gate reads it"
    );
    let refused = runtime.add_rule(RuleList::Deny, "rm -rf").await;
    let err = refused.expect_err("not a rule");
    assert!(matches!(err, RuntimeError::Rule(_)), "{err}");
    assert_eq!(err.kind(), cairn_runtime::FailureKind::Invalid);
    assert_eq!(store.rules().await.unwrap().len(), 1, "nothing half-stored");
    // A rule stored by some other writer that the gate cannot read is skipped.
    store.add_rule(RuleList::Deny, "not a rule").await.unwrap();
    let set = cairn_runtime::rule_set(&store).await.unwrap();
    assert_eq!(set.rules(RuleList::Allow).len(), 1);
    assert!(set.rules(RuleList::Deny).is_empty());

    let memory = StoredMemory(store.clone());
    memory.write("user.name", "Ada\nlikes Rust").await.unwrap();
    assert_eq!(
        memory.list().await.unwrap(),
        [("user.name".to_owned(), "Ada".to_owned())],
        "the first line"
    );
    assert_eq!(
        memory.read("user.name").await.unwrap().as_deref(),
        Some("Ada\nlikes Rust")
    );
    assert_eq!(memory.read("nobody").await.unwrap(), None);
}
