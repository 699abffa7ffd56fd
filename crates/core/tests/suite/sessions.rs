//! The session manager: turns that outlive their front ends, late attach, approvals
//! by id across threads, commit before `done`, the journal.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cairn_core::{
    CommitError, Engine, Journal, Limits, SessionError, SessionGrants, Sessions, Toolbelt,
    TurnOutcome, TurnPersistence, TurnRequest,
};
use cairn_protocol::{
    ApprovalDecision, ChatMessage, ErrorKind, Event, PermissionMode, ToolCategory, TurnStatus,
};
use cairn_providers::Sampling;
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use cairn_tools::Tool;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::support::Probe;

#[derive(Default)]
struct Recorded {
    journal: Mutex<Vec<ChatMessage>>,
    events: Mutex<Vec<String>>,
    fail_commit: bool,
}

impl Journal for Recorded {
    fn root_message(&self, message: &ChatMessage) {
        self.journal.lock().unwrap().push(message.clone());
    }
}

#[async_trait]
impl TurnPersistence for Recorded {
    fn event(&self, event: &Event) {
        self.events
            .lock()
            .unwrap()
            .push(event.type_name().to_owned());
    }

    async fn commit(&self, outcome: &TurnOutcome) -> Result<(), CommitError> {
        self.events
            .lock()
            .unwrap()
            .push(format!("commit {:?}", outcome.status));
        if self.fail_commit {
            Err(CommitError::Store("database or disk is full".into()))
        } else {
            Ok(())
        }
    }
}

fn request(thread: &str, tools: Vec<Arc<dyn Tool>>) -> TurnRequest {
    TurnRequest {
        thread_id: thread.into(),
        message_id: format!("{thread}-m1"),
        model: "m".into(),
        history: vec![ChatMessage::user("go")],
        mode: PermissionMode::Default,
        tools: Toolbelt::new(tools).unwrap(),
        workspace: None,
        sampling: Sampling::default(),
        rules: Default::default(),
        instructions: None,
        agents: Default::default(),
        plans: None,
        load_tools: Vec::new(),
    }
}

async fn until_done(receiver: &mut UnboundedReceiver<Event>) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .unwrap()
            .unwrap();
        let done = matches!(event, Event::Done(_));
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Chunk(c) => Some(c.content.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_late_front_end_gets_what_streamed_then_the_rest() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .say("Hello, ")
        .say("wor")
        .delay(Duration::from_millis(200))
        .say("ld!")]);
    let sessions = Sessions::new();
    let recorded = Arc::new(Recorded::default());
    let engine = Engine::new(Arc::new(model), Limits::default());
    let turn = sessions
        .start(
            engine.clone(),
            request("t1", vec![]),
            Arc::new(SessionGrants::new()),
            recorded.clone(),
        )
        .unwrap();
    assert_eq!(sessions.running(), ["t1"]);
    // A second turn in the same thread is refused while this one runs.
    let again = sessions.start(
        engine,
        request("t1", vec![]),
        Arc::new(SessionGrants::new()),
        recorded.clone(),
    );
    assert_eq!(again.err(), Some(SessionError::AlreadyRunning));

    tokio::time::sleep(Duration::from_millis(100)).await;
    let (so_far, mut live) = turn.attach();
    assert_eq!(text_of(&so_far), "Hello, wor", "the deltas so far, merged");
    let rest = until_done(&mut live).await;
    assert_eq!(
        format!("{}{}", text_of(&so_far), text_of(&rest)),
        "Hello, world!"
    );
    let outcome = turn.finished().await.unwrap();
    assert_eq!(outcome.text, "Hello, world!");
    assert!(sessions.running().is_empty());
    // Commit happened before done.
    let events = recorded.events.lock().unwrap().clone();
    let commit = events.iter().position(|e| e.starts_with("commit")).unwrap();
    assert_eq!(&events[commit..], ["commit Completed", "done"]);
}

#[tokio::test]
async fn a_claimed_thread_is_held_until_its_turn_starts_or_the_claim_is_dropped() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("done")]);
    let sessions = Sessions::new();
    let claim = sessions.claim("t1").unwrap();
    assert_eq!(
        sessions.claim("t1").err(),
        Some(SessionError::AlreadyRunning)
    );
    assert!(sessions.claim("t2").is_ok(), "other threads are free");
    assert!(
        sessions.running().is_empty(),
        "a claim is not a running turn"
    );
    drop(claim);
    let claim = sessions
        .claim("t1")
        .expect("a dropped claim frees its thread");
    let turn = claim.start(
        Engine::new(Arc::new(model), Limits::default()),
        request("t1", vec![]),
        Arc::new(SessionGrants::new()),
        Arc::new(Recorded::default()),
    );
    assert_eq!(
        sessions.claim("t1").err(),
        Some(SessionError::AlreadyRunning),
        "the started turn holds it now"
    );
    turn.finished().await.unwrap();
    assert!(sessions.claim("t1").is_ok(), "a finished turn frees it");
}

#[tokio::test]
async fn approvals_are_answered_by_id_whichever_thread_asked() {
    let sessions = Sessions::new();
    let writer: Arc<dyn Tool> = Arc::new(Probe::new("writer").category(ToolCategory::Write));
    let mut turns = Vec::new();
    for thread in ["a", "b"] {
        // One model per thread, so each thread's script is its own.
        let model = ScriptedModel::new();
        model.root([
            ScriptedTurn::call("writer", json!({"thread": thread})),
            ScriptedTurn::text("written"),
        ]);
        let engine = Engine::new(Arc::new(model), Limits::default());
        let turn = sessions
            .start(
                engine.clone(),
                request(thread, vec![writer.clone()]),
                Arc::new(SessionGrants::new()),
                Arc::new(Recorded::default()),
            )
            .unwrap();
        turns.push(turn);
    }
    let pending = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let pending = sessions.pending();
            if pending.len() == 2 {
                break pending;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both threads ask");
    let threads: Vec<_> = pending.iter().map(|(thread, _)| thread.as_str()).collect();
    assert!(threads.contains(&"a") && threads.contains(&"b"));
    for (_, request) in pending.iter().rev() {
        sessions
            .answer(&request.approval_id, ApprovalDecision::Allow)
            .unwrap();
    }
    assert!(sessions.answer("nope", ApprovalDecision::Allow).is_err());
    for turn in turns {
        assert_eq!(turn.finished().await.unwrap().status, TurnStatus::Completed);
    }
}

#[tokio::test]
async fn a_front_end_attaching_after_an_answer_is_not_asked_again() {
    let sessions = Sessions::new();
    // The write runs until stopped: its card must read "running", not "asking".
    let writer = Probe::new("writer").category(ToolCategory::Write).hang();
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::call("writer", json!({"path": "a.md"}))]);
    let turn = sessions
        .start(
            Engine::new(Arc::new(model), Limits::default()),
            request("t1", vec![Arc::new(writer.clone())]),
            Arc::new(SessionGrants::new()),
            Arc::new(Recorded::default()),
        )
        .unwrap();
    let (_, mut live) = turn.attach();
    let asked = loop {
        let event = tokio::time::timeout(Duration::from_secs(10), live.recv())
            .await
            .unwrap()
            .unwrap();
        if let Event::ToolApprovalRequest(request) = event {
            break request;
        }
    };
    let (before, _) = turn.attach();
    assert!(
        before
            .iter()
            .any(|e| matches!(e, Event::ToolApprovalRequest(_))),
        "a question still waiting is replayed"
    );

    sessions
        .answer(&asked.approval_id, ApprovalDecision::Allow)
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while writer.calls() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the allowed call runs");
    let (after, _) = turn.attach();
    let names: Vec<_> = after.iter().map(Event::type_name).collect();
    assert!(
        !names.contains(&"tool_approval_request"),
        "an answered question is not replayed: {names:?}"
    );
    assert!(
        after
            .iter()
            .any(|e| matches!(e, Event::ToolCallUpdate(u) if u.tool_call_id == asked.tool_call_id)),
        "the call itself still shows: {names:?}"
    );
    turn.stop();
    assert_eq!(turn.finished().await.unwrap().status, TurnStatus::Cancelled);
}

#[tokio::test]
async fn stop_keeps_the_partial_answer_and_the_journal_sees_root_messages_in_order() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().say("Looking.").tool("probe", json!({})),
        ScriptedTurn::new().say("Found half").hang(),
    ]);
    let sessions = Sessions::new();
    let recorded = Arc::new(Recorded::default());
    let engine = Engine::new(Arc::new(model), Limits::default());
    let turn = sessions
        .start(
            engine,
            request("t", vec![Arc::new(Probe::new("probe"))]),
            Arc::new(SessionGrants::new()),
            recorded.clone(),
        )
        .unwrap();
    let (_, mut live) = turn.attach();
    loop {
        if let Some(Event::Chunk(c)) = live.recv().await
            && c.content == "Found half"
        {
            break;
        }
    }
    assert_eq!(sessions.stop("t"), Ok(()));
    let outcome = turn.finished().await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(outcome.text, "Looking.\n\nFound half");
    let journal = recorded.journal.lock().unwrap().clone();
    assert_eq!(
        journal, outcome.messages,
        "the journal saw exactly the messages the outcome keeps"
    );
    let roles: Vec<_> = journal.iter().map(ChatMessage::role).collect();
    assert_eq!(roles, ["assistant", "tool", "assistant"]);
    assert_eq!(
        sessions.stop("t"),
        Err(SessionError::NotRunning("t".into()))
    );
}

#[tokio::test]
async fn a_failed_commit_is_reported_before_done() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("hi")]);
    let sessions = Sessions::new();
    let recorded = Arc::new(Recorded {
        fail_commit: true,
        ..Recorded::default()
    });
    let turn = sessions
        .start(
            Engine::new(Arc::new(model), Limits::default()),
            request("t", vec![]),
            Arc::new(SessionGrants::new()),
            recorded,
        )
        .unwrap();
    let (_, mut live) = turn.attach();
    let events = until_done(&mut live).await;
    let error = events.iter().find_map(|e| match e {
        Event::Error(error) => Some(error.clone()),
        _ => None,
    });
    let error = error.unwrap();
    assert_eq!(error.kind, ErrorKind::Storage);
    assert_eq!(
        error.message,
        "the answer could not be saved: database or disk is full"
    );
}

/// A front end that acts the moment it sees `done`: it tries to start the thread's
/// next turn (a Retry clicked as soon as the failure shows).
struct NextTurnAtDone {
    sessions: Arc<Sessions>,
    thread: String,
    claimed_at_done: Mutex<Option<Result<(), SessionError>>>,
}

impl Journal for NextTurnAtDone {
    fn root_message(&self, _message: &ChatMessage) {}
}

#[async_trait]
impl TurnPersistence for NextTurnAtDone {
    fn event(&self, event: &Event) {
        if matches!(event, Event::Done(_)) {
            let claim = self.sessions.claim(&self.thread).map(drop);
            *self.claimed_at_done.lock().unwrap() = Some(claim);
        }
    }

    async fn commit(&self, _outcome: &TurnOutcome) -> Result<(), CommitError> {
        Ok(())
    }
}

#[tokio::test]
async fn the_thread_is_free_for_its_next_turn_when_done_is_sent() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("over")]);
    let sessions = Sessions::new();
    let front = Arc::new(NextTurnAtDone {
        sessions: Arc::clone(&sessions),
        thread: "t1".into(),
        claimed_at_done: Mutex::new(None),
    });
    let live = sessions
        .start(
            Engine::new(Arc::new(model), Limits::default()),
            request("t1", Vec::new()),
            Arc::new(SessionGrants::new()),
            front.clone(),
        )
        .unwrap();
    live.finished().await.unwrap();
    assert_eq!(
        front.claimed_at_done.lock().unwrap().clone(),
        Some(Ok(())),
        "whoever sees `done` may start the next turn at once"
    );
}
