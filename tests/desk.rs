//! The desktop app's commands, without the window: a real SQLite file, real HTTP to
//! a fake OpenAI-compatible server, the shell's side effects recorded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cairn_desktop::desk::{Desk, DeskError, Overrides, Shell, forward};
use cairn_protocol::desktop::commands::{AddRule, ExportThread, ModelContext};
use cairn_protocol::desktop::{
    CommandError, CommandErrorKind, ContextInfo, ExportFormat, NewThreadOptions, Settings,
};
use cairn_protocol::{ApprovalDecision, Event, PermissionMode, TurnStatus};
use cairn_protocol::{Dialect, RuleList};
use cairn_runtime::{Limits, Runtime};
use cairn_secrets::{MemoryStore, SecretStore};
use cairn_store::Store;
use cairn_testkit::{FakeServer, Reply, sse};
use serde_json::json;

const CHAT: &str = "POST /v1/chat/completions";

/// What the desk asked of the desktop.
#[derive(Debug, Default)]
struct Recorded {
    events: Mutex<Vec<(String, String, String)>>,
    running: Mutex<Vec<Vec<String>>>,
}

impl Shell for Recorded {
    fn turn_event(&self, thread_id: &str, title: &str, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((
                thread_id.to_owned(),
                title.to_owned(),
                event.type_name().to_owned(),
            ));
    }

    fn running_changed(&self, running: &[String]) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(running.to_vec());
    }
}

struct Setup {
    dir: tempfile::TempDir,
    server: FakeServer,
    shell: Arc<Recorded>,
    secrets: Arc<MemoryStore>,
    desk: Arc<Desk>,
}

async fn setup(model: Option<&str>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await;
    let shell = Arc::new(Recorded::default());
    let secrets = Arc::new(MemoryStore::new());
    let desk = open(&dir, &server, &shell, &secrets, model).await;
    Setup {
        dir,
        server,
        shell,
        secrets,
        desk,
    }
}

async fn open(
    dir: &tempfile::TempDir,
    server: &FakeServer,
    shell: &Arc<Recorded>,
    secrets: &Arc<MemoryStore>,
    model: Option<&str>,
) -> Arc<Desk> {
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    let overrides = Overrides {
        base_url: Some(server.url()),
        dialect: None,
        model: model.map(str::to_owned),
    };
    Desk::open(
        Runtime::new(store, Limits::default()),
        secrets.clone(),
        shell.clone(),
        &overrides,
    )
    .await
    .unwrap()
}

/// Every event of a turn, as the webview's channel would get them.
async fn collect(live: &cairn_core::LiveTurn) -> Vec<Event> {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    forward(live, move |event| sender.send(event).is_ok());
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
        .await
        .expect("the turn ended in time")
    {
        events.push(event);
    }
    events
}

/// Starts a new chat with `prompt` and waits for its turn to end; the thread's id.
async fn chat_to_the_end(desk: &Arc<Desk>, prompt: &str) -> String {
    let live = desk
        .send_message(None, prompt, NewThreadOptions::default(), None)
        .await
        .unwrap();
    collect(&live).await;
    live.thread_id.clone()
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Chunk(chunk) if chunk.depth == 0 => Some(chunk.content.as_str()),
            _ => None,
        })
        .collect()
}

fn kind(err: DeskError) -> CommandErrorKind {
    CommandError::from(err).kind
}

#[tokio::test]
async fn a_message_starts_a_thread_streams_its_answer_and_is_stored() {
    let s = setup(Some("test-model")).await;
    s.server
        .push(CHAT, Reply::sse(sse::text(&["Hello", " there."])));
    let live = s
        .desk
        .send_message(None, "Say hello", NewThreadOptions::default(), None)
        .await
        .unwrap();
    let events = collect(&live).await;
    assert_eq!(text_of(&events), "Hello there.");
    assert!(
        matches!(events.last(), Some(Event::Done(done)) if done.status == TurnStatus::Completed)
    );

    let request = &s.server.requests_to(CHAT)[0];
    assert_eq!(request.json()["model"], "test-model");
    let thread = s.desk.load_thread(&live.thread_id).await.unwrap();
    assert_eq!(thread.thread.title, "Say hello");
    assert_eq!(thread.thread.mode, PermissionMode::Default);
    assert_eq!(thread.messages.len(), 2);
    assert_eq!(thread.messages[1].content, "Hello there.");
    assert!(!thread.running);

    // The shell heard about the turn whether or not a window watched it.
    live.finished().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let running = s.shell.running.lock().unwrap().clone();
    assert_eq!(running.first(), Some(&vec![live.thread_id.clone()]));
    assert_eq!(running.last(), Some(&Vec::<String>::new()));
    let heard = s.shell.events.lock().unwrap().clone();
    assert!(heard.contains(&(live.thread_id.clone(), "Say hello".into(), "done".into())));
}

#[tokio::test]
async fn without_a_model_nothing_is_sent_or_stored() {
    let s = setup(None).await;
    let err = s
        .desk
        .send_message(None, "hi", NewThreadOptions::default(), None)
        .await
        .unwrap_err();
    assert_eq!(kind(err), CommandErrorKind::NoModel);
    let err = s
        .desk
        .send_message(None, "   ", NewThreadOptions::default(), Some("m".into()))
        .await
        .unwrap_err();
    assert_eq!(kind(err), CommandErrorKind::Invalid);
    let options = NewThreadOptions {
        mode: PermissionMode::Auto,
        workspace: Some(s.dir.path().join("missing").display().to_string()),
        ..NewThreadOptions::default()
    };
    let err = s
        .desk
        .send_message(None, "hi", options, Some("m".into()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    let options = NewThreadOptions {
        agent: Some("ghost".into()),
        ..NewThreadOptions::default()
    };
    let err = s
        .desk
        .send_message(None, "hi", options, Some("m".into()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "there is no agent `ghost`. Agents: auto, chat"
    );
    assert_eq!(kind(err), CommandErrorKind::Invalid);
    assert!(s.desk.list_threads(0, 50).await.unwrap().is_empty());
    assert!(s.server.requests().is_empty());
}

#[tokio::test]
async fn a_new_chat_answers_as_the_agent_picked_and_settings_keep_a_usable_default() {
    let s = setup(Some("test-model")).await;
    s.server.push(CHAT, Reply::sse(sse::text(&["Routed."])));
    let options = NewThreadOptions {
        agent: Some("auto".into()),
        ..NewThreadOptions::default()
    };
    let live = s
        .desk
        .send_message(None, "hi", options, None)
        .await
        .unwrap();
    collect(&live).await;
    let thread = s.desk.runtime().thread(&live.thread_id).await.unwrap();
    assert_eq!(
        (thread.agent.as_deref(), thread.routes),
        (Some("auto"), true)
    );
    let agents = s.desk.agents(Some(&thread.id)).await.unwrap();
    let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["auto", "chat", "explore", "review"]);

    let mut settings = s.desk.settings();
    settings.default_agent = "explore".into();
    let err = s.desk.save_settings(settings.clone()).await.unwrap_err();
    assert!(err.to_string().contains("subtasks only"), "{err}");
    assert_eq!(
        s.desk.settings().default_agent,
        "chat",
        "the old settings stay"
    );
    settings.default_agent = "auto".into();
    s.desk.save_settings(settings).await.unwrap();
    assert_eq!(s.desk.runtime().default_agent().await.unwrap(), "auto");
}

#[tokio::test]
async fn a_write_in_default_mode_waits_for_the_user() {
    let s = setup(Some("test-model")).await;
    let work = s.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let write = json!({"path": "notes.md", "content": "kept"});
    for _ in 0..2 {
        s.server.push(
            CHAT,
            Reply::sse(sse::tool_calls(&[("call_1", "write_file", write.clone())])),
        );
        s.server.push(CHAT, Reply::sse(sse::text(&["Done."])));
    }
    let options = NewThreadOptions {
        mode: PermissionMode::Default,
        workspace: Some(work.display().to_string()),
        ..NewThreadOptions::default()
    };

    // Allowed: the file is written.
    let live = s
        .desk
        .send_message(None, "Write notes", options.clone(), None)
        .await
        .unwrap();
    let pending = wait_for_approval(&s.desk).await;
    assert_eq!(pending.thread_id, live.thread_id);
    assert_eq!(pending.request.name, "write_file");
    assert_eq!(pending.request.args, write);
    let err = s.desk.delete_thread(&live.thread_id).await.unwrap_err();
    assert!(err.to_string().contains("stop it"), "{err}");
    s.desk
        .answer_approval(&pending.request.approval_id, ApprovalDecision::Allow)
        .unwrap();
    collect(&live).await;
    assert_eq!(
        std::fs::read_to_string(work.join("notes.md")).unwrap(),
        "kept"
    );
    assert_eq!(
        kind(
            s.desk
                .answer_approval(&pending.request.approval_id, ApprovalDecision::Deny)
                .unwrap_err()
        ),
        CommandErrorKind::NotFound
    );

    // Denied in a second thread: nothing is written.
    std::fs::remove_file(work.join("notes.md")).unwrap();
    let live = s
        .desk
        .send_message(None, "Write notes again", options, None)
        .await
        .unwrap();
    let pending = wait_for_approval(&s.desk).await;
    s.desk
        .answer_approval(&pending.request.approval_id, ApprovalDecision::Deny)
        .unwrap();
    collect(&live).await;
    assert!(!work.join("notes.md").exists());
    let heard = s.shell.events.lock().unwrap().clone();
    assert!(
        heard
            .iter()
            .any(|(_, _, kind)| kind == "tool_approval_request"),
        "the shell is told, so it can notify"
    );
}

async fn wait_for_approval(desk: &Desk) -> cairn_protocol::desktop::PendingApproval {
    for _ in 0..200 {
        if let Some(pending) = desk.pending_approvals().pop() {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no approval was asked for");
}

#[tokio::test]
async fn stopping_keeps_the_partial_answer() {
    let s = setup(Some("test-model")).await;
    s.server.push(
        CHAT,
        Reply::sse(sse::text(&["Partial ", "answer ", "that ", "goes ", "on"]))
            .paced(60, Duration::from_millis(150)),
    );
    let live = s
        .desk
        .send_message(None, "Tell a long story", NewThreadOptions::default(), None)
        .await
        .unwrap();
    let thread_id = live.thread_id.clone();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    forward(&live, move |event| sender.send(event).is_ok());
    // Stop as soon as some text arrived.
    let mut events = Vec::new();
    while let Some(event) = receiver.recv().await {
        let first_text = matches!(event, Event::Chunk(_));
        events.push(event);
        if first_text {
            s.desk.stop_turn(&thread_id).unwrap();
            break;
        }
    }
    while let Some(event) = receiver.recv().await {
        events.push(event);
    }
    assert!(
        matches!(events.last(), Some(Event::Done(done)) if done.status == TurnStatus::Cancelled)
    );
    let partial = text_of(&events);
    assert!(
        partial.starts_with("Partial") && !partial.ends_with("on"),
        "{partial}"
    );
    let stored = s.desk.load_thread(&thread_id).await.unwrap();
    assert_eq!(stored.messages[1].content, partial);
    assert_eq!(
        kind(s.desk.stop_turn(&thread_id).unwrap_err()),
        CommandErrorKind::Busy
    );
}

#[tokio::test]
async fn threads_are_renamed_exported_and_deleted() {
    let s = setup(Some("test-model")).await;
    s.server.push(
        CHAT,
        Reply::sse(sse::text(&["| a | b |\n|---|---|\n| 1 | 2 |"])),
    );
    let id = chat_to_the_end(&s.desk, "Make a table").await;
    assert_eq!(
        kind(s.desk.rename_thread(&id, "  ").await.unwrap_err()),
        CommandErrorKind::Invalid
    );
    let renamed = s.desk.rename_thread(&id, " Tables: a / b ").await.unwrap();
    assert_eq!(renamed.title, "Tables: a / b");

    let md = s.desk.export_thread(&id, ExportFormat::Md).await.unwrap();
    assert_eq!(md.file_name, "tables-a-b.md");
    assert!(md.contents.contains("| 1 | 2 |"), "{}", md.contents);
    let export = s.desk.export_thread(&id, ExportFormat::Json).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&export.contents).unwrap();
    assert_eq!(value["thread"]["title"], "Tables: a / b");
    // An unknown format never reaches the desk: the command's arguments refuse it.
    let refused = serde_json::from_value::<ExportThread>(json!({"threadId": id, "format": "pdf"}));
    assert!(refused.is_err());

    let hits = s.desk.search_threads("table").await.unwrap();
    assert!(hits.iter().any(|hit| hit.thread_id == id));
    assert!(s.desk.search_threads("  ").await.unwrap().is_empty());

    s.desk.delete_thread(&id).await.unwrap();
    assert_eq!(
        kind(s.desk.load_thread(&id).await.unwrap_err()),
        CommandErrorKind::NotFound
    );
    assert_eq!(
        kind(s.desk.delete_thread(&id).await.unwrap_err()),
        CommandErrorKind::NotFound
    );
}

#[tokio::test]
async fn settings_are_checked_kept_and_survive_a_restart() {
    let s = setup(None).await;
    let mut bad = s.desk.settings();
    bad.temperature = Some(7.0);
    let err = s.desk.save_settings(bad).await.unwrap_err();
    assert_eq!(kind(err), CommandErrorKind::Invalid);
    assert_eq!(s.desk.settings().temperature, None, "the old settings stay");

    let good = Settings {
        temperature: Some(0.2),
        model: Some("  qwen3:8b ".into()),
        notifications: false,
        ..s.desk.settings()
    };
    let kept = s.desk.save_settings(good).await.unwrap();
    assert_eq!(kept.model.as_deref(), Some("qwen3:8b"));
    assert_eq!(s.desk.set_zoom(150).await.unwrap().zoom_percent, 150);
    let err = s.desk.set_zoom(20).await.unwrap_err();
    assert_eq!(kind(err), CommandErrorKind::Invalid);
    assert_eq!(
        s.desk.settings().zoom_percent,
        150,
        "a refused zoom changes nothing"
    );
    drop(s.desk);
    let again = open(&s.dir, &s.server, &s.shell, &s.secrets, None).await;
    let settings = again.settings();
    assert_eq!(settings.temperature, Some(0.2));
    assert_eq!(settings.model.as_deref(), Some("qwen3:8b"));
    assert!(!settings.notifications);
    assert_eq!(settings.zoom_percent, 150);

    // The sampling settings reach the server.
    s.server.push(CHAT, Reply::sse(sse::text(&["ok"])));
    chat_to_the_end(&again, "hi").await;
    let body = s.server.requests_to(CHAT)[0].json();
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["model"], "qwen3:8b");
}

#[tokio::test]
async fn api_keys_go_to_the_keychain_and_to_the_server_only() {
    let s = setup(Some("test-model")).await;
    let base = s.server.url();
    assert!(!s.desk.has_api_key(&base).unwrap());
    assert_eq!(
        kind(s.desk.set_api_key(&base, "  ").unwrap_err()),
        CommandErrorKind::Invalid
    );
    assert_eq!(
        kind(s.desk.set_api_key("not a url", "sk-1").unwrap_err()),
        CommandErrorKind::Invalid
    );
    s.desk
        .set_api_key(&format!("{base}/v1"), "sk-secret")
        .unwrap();
    assert!(
        s.desk.has_api_key(&base).unwrap(),
        "one key per server, /v1 or not"
    );
    assert!(
        s.secrets
            .get(&cairn_secrets::key_name(&base))
            .unwrap()
            .is_some()
    );

    s.server.push(CHAT, Reply::sse(sse::text(&["ok"])));
    chat_to_the_end(&s.desk, "hi").await;
    assert_eq!(
        s.server.requests_to(CHAT)[0].header("authorization"),
        Some("Bearer sk-secret")
    );
    let db = std::fs::read(s.dir.path().join("cairn.db")).unwrap();
    assert!(!db.windows(9).any(|w| w == b"sk-secret"), "never stored");

    assert!(s.desk.delete_api_key(&base).unwrap());
    assert!(!s.desk.has_api_key(&base).unwrap());
}

#[tokio::test]
async fn models_rules_tools_and_modes() {
    let s = setup(Some("test-model")).await;
    s.server.push(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"b-model"},{"id":"a-model"}]}"#,
        ),
    );
    assert_eq!(
        s.desk.list_models(None).await.unwrap(),
        ["a-model", "b-model"]
    );
    let err = s
        .desk
        .list_models(Some((Dialect::Openai, "http://127.0.0.1:9".into())))
        .await
        .unwrap_err();
    assert_eq!(kind(err), CommandErrorKind::Provider);

    let rule = s
        .desk
        .add_rule(RuleList::Deny, "run_command(rm *)")
        .await
        .unwrap();
    assert_eq!(rule.list, RuleList::Deny);
    let refused = serde_json::from_value::<AddRule>(json!({"list": "maybe", "rule": "x"}));
    assert!(refused.is_err(), "no such list");
    assert_eq!(
        kind(
            s.desk
                .add_rule(RuleList::Allow, "no such syntax(")
                .await
                .unwrap_err()
        ),
        CommandErrorKind::Invalid
    );
    assert_eq!(
        s.desk.list_rules().await.unwrap(),
        std::slice::from_ref(&rule)
    );
    s.desk.remove_rule(rule.id).await.unwrap();
    assert!(s.desk.remove_rule(rule.id).await.is_err());

    let tools: Vec<_> = s
        .desk
        .list_tools(None)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(tools.contains(&"web_fetch".to_owned()));
    assert!(
        !tools.contains(&"write_file".to_owned()),
        "no workspace, no file tools"
    );

    s.server.push(CHAT, Reply::sse(sse::text(&["ok"])));
    let id = chat_to_the_end(&s.desk, "hi").await;
    let planned = s.desk.set_mode(&id, PermissionMode::Plan).await.unwrap();
    assert_eq!(planned.mode, PermissionMode::Plan);
    let work = s
        .desk
        .set_workspace(&id, Some(&s.dir.path().display().to_string()))
        .await
        .unwrap();
    assert!(work.workspace.is_some());
    let tools: Vec<_> = s
        .desk
        .list_tools(Some(&id))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(tools.contains(&"write_file".to_owned()));
    assert!(
        s.desk
            .set_workspace(&id, Some("/no/such/folder"))
            .await
            .is_err()
    );
    let cleared = s.desk.set_workspace(&id, None).await.unwrap();
    assert!(cleared.workspace.is_none());
    assert_eq!(
        kind(s.desk.list_threads(0, 0).await.unwrap_err()),
        CommandErrorKind::Invalid
    );
}

#[tokio::test]
async fn allowed_mcp_servers_start_and_the_ones_that_fail_are_reported() {
    let s = setup(Some("test-model")).await;
    let path = s.dir.path().join("mcp.json");
    assert_eq!(
        s.desk.start_mcp(&path).await,
        Vec::<String>::new(),
        "no servers file: nothing to start, nothing to report"
    );

    std::fs::write(
        &path,
        r#"{"mcpServers": {
            "broken": {"command": "/nonexistent/cairn-mcp-server"},
            "unallowed": {"command": "/nonexistent/other-server"}
        }}"#,
    )
    .unwrap();
    s.desk
        .runtime()
        .allow_mcp_server("broken", true)
        .await
        .unwrap();
    let problems = s.desk.start_mcp(&path).await;
    assert_eq!(
        problems.len(),
        1,
        "only the allowed server was tried: {problems:?}"
    );
    assert!(
        problems[0].contains("broken") && problems[0].contains("not available"),
        "{problems:?}"
    );

    std::fs::write(&path, "{ not json").unwrap();
    let problems = s.desk.start_mcp(&path).await;
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].contains(&path.display().to_string()),
        "the file is named: {problems:?}"
    );
}

#[tokio::test]
async fn retry_uses_the_server_as_settings_have_it_now() {
    let s = setup(Some("test-model")).await;
    let right = s.desk.settings();
    // A server address nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let wrong = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let mut settings = right.clone();
    settings.base_url = wrong;
    s.desk.save_settings(settings).await.unwrap();
    let thread = chat_to_the_end(&s.desk, "What is 2 + 2?").await;
    let messages = s.desk.runtime().messages(&thread).await.unwrap();
    assert_eq!(
        messages.last().unwrap().status,
        cairn_protocol::MessageStatus::Failed
    );

    // The user fixes the server in Settings, then presses Retry.
    s.desk.save_settings(right).await.unwrap();
    s.server.push(CHAT, Reply::sse(sse::text(&["It is 4."])));
    let live = s.desk.retry(&thread, None).await.unwrap();
    let events = collect(&live).await;
    assert_eq!(text_of(&events), "It is 4.");
    assert_eq!(
        s.server.requests_to(CHAT).len(),
        1,
        "asked at the fixed address"
    );
    let stored = s.desk.runtime().thread(&thread).await.unwrap();
    assert_eq!(stored.base_url.as_deref(), Some(s.server.url().as_str()));
}

#[tokio::test]
async fn an_mcp_server_that_keeps_dying_shows_in_settings_until_started_again() {
    let s = setup(Some("test-model")).await;
    let path = s.dir.path().join("mcp.json");
    std::fs::write(
        &path,
        json!({"mcpServers": {"fragile": {"command": cairn_testkit::mcp::stdio_fixture()}}})
            .to_string(),
    )
    .unwrap();
    let listed = s
        .desk
        .set_mcp_server(&path, "fragile", Some(true), Some(false))
        .await
        .unwrap();
    assert_eq!((listed[0].tools.is_some(), &listed[0].error), (true, &None));

    // One turn: the server dies on every call, is started again three times, then
    // is off for the session.
    for n in 0..5 {
        s.server.push(
            CHAT,
            Reply::sse(sse::tool_calls(&[(
                &format!("c{n}"),
                "mcp__fragile__crash",
                // Each call differs: identical ones in a row would be refused as a loop.
                json!({"attempt": n}),
            )])),
        );
    }
    s.server
        .push(CHAT, Reply::sse(sse::text(&["It keeps dying."])));
    let live = s
        .desk
        .send_message(
            None,
            "Use the fragile tool",
            NewThreadOptions {
                mode: PermissionMode::Auto,
                workspace: None,
                agent: None,
            },
            None,
        )
        .await
        .unwrap();
    let events = collect(&live).await;
    let results: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(update) => update
                .result
                .as_ref()
                .map(|result| result.as_str().unwrap_or_default().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(
        results[4].contains("is off for this session"),
        "{results:?}"
    );
    let listed = s.desk.mcp_servers(&path).await.unwrap();
    assert!(
        listed[0]
            .error
            .as_deref()
            .is_some_and(|error| error.contains("off for this session")),
        "Settings shows why: {listed:?}"
    );

    // Switched off and on in Settings: started afresh.
    s.desk
        .set_mcp_server(&path, "fragile", Some(false), None)
        .await
        .unwrap();
    let listed = s
        .desk
        .set_mcp_server(&path, "fragile", Some(true), None)
        .await
        .unwrap();
    assert_eq!((listed[0].tools.is_some(), &listed[0].error), (true, &None));
}

/// A llama.cpp-style model list that says the context the model runs with.
fn models_with_context(model: &str, n_ctx: u32) -> Reply {
    Reply::json(
        200,
        json!({"object": "list", "data": [{"id": model, "object": "model", "meta": {"n_ctx": n_ctx}}]})
            .to_string(),
    )
}

#[tokio::test]
async fn the_model_picker_learns_the_context_and_whether_tools_wait_in_groups() {
    let s = setup(Some("test-model")).await;
    // Each question names another model: what a server said is remembered a while.
    let ask = |model: &str| ModelContext {
        thread_id: None,
        model: Some(model.to_owned()),
        mode: PermissionMode::Default,
        workspace: None,
    };
    s.server
        .push("GET /v1/models", models_with_context("test-model", 4096));
    let info = s.desk.model_context(ask("test-model")).await.unwrap();
    assert_eq!(
        info,
        ContextInfo {
            tokens: Some(4096),
            source: Some("llama.cpp server's n_ctx".into()),
            tools_on_demand: false,
            // A new chat's first turn has its own parameters' tool (llm) waiting too.
            on_demand: ["llm", "memory", "plans", "todo"]
                .map(String::from)
                .to_vec(),
            tools_in_text: false,
            checkup: None,
        }
    );

    // An MCP server's tools beside a small window: they wait in their group.
    let path = s.dir.path().join("mcp.json");
    std::fs::write(
        &path,
        json!({"mcpServers": {"fixture": {"command": cairn_testkit::mcp::stdio_fixture()}}})
            .to_string(),
    )
    .unwrap();
    s.desk
        .set_mcp_server(&path, "fixture", Some(true), Some(false))
        .await
        .unwrap();
    s.server
        .push("GET /v1/models", models_with_context("small-model", 1024));
    let small = s.desk.model_context(ask("small-model")).await.unwrap();
    assert_eq!(small.tokens, Some(1024));
    assert!(small.tools_on_demand, "{small:?}");
    assert!(
        small.on_demand.contains(&"mcp__fixture".to_owned())
            && small.on_demand.contains(&"web".to_owned()),
        "{small:?}"
    );
    s.server.push(
        "GET /v1/models",
        models_with_context("large-model", 131_072),
    );
    let large = s.desk.model_context(ask("large-model")).await.unwrap();
    assert!(!large.tools_on_demand, "{large:?}");

    // A server that does not say: nothing to show, nothing wrong.
    let unknown = s.desk.model_context(ask("quiet-model")).await.unwrap();
    assert_eq!(unknown.tokens, None);
    assert_eq!(unknown.checkup, None, "never checked");

    // A model checked before (by `cairn models check`, say): the picker says what was
    // learned.
    let store = Store::open(s.dir.path().join("cairn.db")).await.unwrap();
    store
        .set_model_habits(&s.server.url(), "checked-model", "text", "restated", true)
        .await
        .unwrap();
    let checked = s.desk.model_context(ask("checked-model")).await.unwrap();
    assert_eq!(
        checked.checkup.as_deref(),
        Some("needs the question restated (writes calls as text)")
    );
}

#[tokio::test]
async fn overrides_from_the_environment_are_never_saved_as_settings() {
    // CAIRN_BASE_URL and CAIRN_MODEL set for this run (the fake server, test-model).
    let s = setup(Some("test-model")).await;
    s.desk.set_zoom(150).await.unwrap();
    assert_eq!(s.desk.settings().base_url, s.server.url(), "still in force");
    // The next plain launch has the zoom, and its own server and model.
    let plain = || async {
        let store = Store::open(s.dir.path().join("cairn.db")).await.unwrap();
        let (secrets, shell) = (s.secrets.clone(), s.shell.clone());
        Desk::open(
            Runtime::new(store, Limits::default()),
            secrets,
            shell,
            &Overrides::default(),
        )
        .await
        .unwrap()
        .settings()
    };
    let saved = plain().await;
    let default = Settings::default();
    assert_eq!(saved.zoom_percent, 150);
    assert_eq!(
        (
            &saved.base_url,
            saved.dialect,
            &saved.model,
            saved.first_run_done
        ),
        (&default.base_url, default.dialect, &None, false)
    );
    // What the user changes in an overridden field is theirs, and kept.
    let mut mine = s.desk.settings();
    mine.base_url = "http://gpu-box:11434".into();
    mine.model = Some("qwen3:8b".into());
    s.desk.save_settings(mine).await.unwrap();
    let saved = plain().await;
    assert_eq!(saved.base_url, "http://gpu-box:11434");
    assert_eq!(saved.model.as_deref(), Some("qwen3:8b"));
    assert_eq!(saved.zoom_percent, 150);
}
