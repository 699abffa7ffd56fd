//! A plain answer, single tool calls, streaming, agent states, the request shape.

use std::time::Duration;

use cairn_protocol::{
    AgentStateKind, ChatMessage, Event, ExecutionTreeNode, ToolCallStatus, ToolCategory, TurnStatus,
};
use cairn_testkit::{ScriptedModel, ScriptedTurn};

use serde_json::json;

use super::support::{Harness, Probe, assert_calls_paired};

#[tokio::test]
async fn a_model_that_calls_no_tool_gives_one_answer_and_no_nested_events() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .think("Easy.")
        .say("Hello")
        .say(", world")
        .usage(12, 3)]);
    let run = Harness::new(&model).run("hi").await;

    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "Hello, world");
    assert_eq!(run.root_chunks(), "Hello, world");
    assert_eq!(run.outcome.reasoning, "Easy.");
    assert_eq!(
        run.outcome.messages,
        [ChatMessage::Assistant {
            content: "Hello, world".into(),
            reasoning: Some("Easy.".into()),
            tool_calls: vec![],
        }]
    );
    assert!(run.outcome.tree.is_empty());
    assert!(run.of_type("tool_call_update").is_empty());
    let kinds: Vec<_> = run.events.iter().map(Event::type_name).collect();
    assert_eq!(
        kinds,
        ["agent_state", "reasoning", "chunk", "chunk", "agent_state"]
    );
    assert_eq!(run.outcome.usage.prompt_tokens, 12);
    assert_eq!(run.outcome.usage.completion_tokens, 3);
    assert_eq!(run.outcome.usage.llm_calls, 1);
    assert!(!run.outcome.usage.estimated);
    assert_eq!(
        run.outcome.done_event(),
        Event::Done(cairn_protocol::Done {
            thread_id: "thread-1".into(),
            message_id: "msg-1".into(),
            usage: run.outcome.usage,
            status: TurnStatus::Completed,
            cut: None,
        })
    );
}

#[tokio::test]
async fn the_request_carries_the_system_prompt_history_and_tools() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("ok")]);
    let mut harness = Harness::new(&model).tool(Probe::new("probe"));
    harness.history = vec![
        ChatMessage::user("earlier"),
        ChatMessage::assistant("answer"),
    ];
    harness.run("now").await;

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let ChatMessage::System { content } = &request.messages[0] else {
        panic!("no system prompt first: {:?}", request.messages[0]);
    };
    assert!(content.starts_with("You are Cairn"), "{content}");
    // The thread's own lines open its first message, not the system prompt.
    assert!(!content.contains("Permission mode"), "{content}");
    let first = request.messages[1].content();
    let context = first
        .strip_suffix("earlier")
        .expect("the first message, after its context");
    assert!(
        context.starts_with(cairn_core::prompt::CONTEXT_OPEN),
        "{first}"
    );
    assert!(context.contains("Permission mode: auto"), "{first}");
    assert!(
        context.ends_with(cairn_core::prompt::CONTEXT_CLOSE),
        "{first}"
    );
    assert_eq!(
        request.messages[2..],
        [ChatMessage::assistant("answer"), ChatMessage::user("now")]
    );
    let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["probe", "run_subtask", "load_tools"],
        "create_plan waits until loaded"
    );
    assert_eq!(request.origin.depth, 0);
}

#[tokio::test]
async fn a_tool_round_trip_feeds_the_result_back_and_builds_the_tree() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .say("Let me look.")
            .tool("probe", json!({"q": 1})),
        ScriptedTurn::text("Found it."),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("find")
        .await;

    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "Let me look.\n\nFound it.");
    assert_eq!(run.outcome.messages.len(), 3);
    assert_calls_paired(&run.outcome.messages);
    let ChatMessage::Tool {
        content, is_error, ..
    } = &run.outcome.messages[1]
    else {
        panic!("{:?}", run.outcome.messages);
    };
    assert_eq!(content, r#"probe {"q":1}"#);
    assert!(!is_error);
    // The second request saw the call and its result.
    let second = &model.requests()[1];
    assert_eq!(second.messages.last().unwrap(), &run.outcome.messages[1]);

    let tree = &run.outcome.tree;
    assert_eq!(tree.version, 1);
    assert_eq!(tree.nodes.len(), 1);
    let node = &tree.nodes[0];
    // The whole node: what a reopened thread shows of the call (its id and time are
    // the run's own).
    assert_eq!(
        node,
        &ExecutionTreeNode {
            id: node.id.clone(),
            parent_id: None,
            name: "probe".into(),
            args_preview: Some(r#"{"q":1}"#.into()),
            result_preview: Some(r#"probe {"q":1}"#.into()),
            is_error: Some(false),
            duration_ms: node.duration_ms,
            // Its only argument is a number: no text names what it acts on.
            subject: None,
            ..ExecutionTreeNode::default()
        }
    );
    // The stored figure is the one the end event carried, so a reopened thread shows
    // what the live card showed.
    let ended = run.events.iter().find_map(|event| match event {
        Event::ToolCallUpdate(update) if update.status == ToolCallStatus::End => update.duration_ms,
        _ => None,
    });
    assert_eq!(ended, Some(node.duration_ms));
    assert_eq!(run.outcome.usage.tool_calls, 1);
    assert_eq!(run.outcome.usage.llm_calls, 2);
    assert!(run.outcome.usage.estimated, "the script reported no usage");
}

#[tokio::test]
async fn deltas_are_emitted_while_the_model_is_still_streaming() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new().say("Hel").hang()]);
    let mut running = Harness::new(&model).start("hi");
    // The stream never ends, so this chunk can only have come out mid-stream.
    let first = running.wait_for(|e| matches!(e, Event::Chunk(_))).await;
    assert!(matches!(first, Event::Chunk(ref c) if c.content == "Hel"));
    running.control.cancel.cancel();
    let run = running.handle.await.unwrap();
    assert_eq!(run.outcome.status, TurnStatus::Cancelled);
    assert_eq!(run.outcome.text, "Hel");
}

#[tokio::test]
async fn agent_state_follows_thinking_executing_and_idle() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("probe", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe").delay(Duration::from_millis(5)))
        .run("go")
        .await;
    let states: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::AgentState(s) => Some(s.state),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            AgentStateKind::Thinking,
            AgentStateKind::Executing,
            AgentStateKind::Thinking,
            AgentStateKind::Idle
        ]
    );
}

#[tokio::test]
async fn repeated_or_missing_call_ids_are_made_unique() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool_with_id("call_x", "probe", json!({"n": 1}))
            .tool_with_id("call_x", "probe", json!({"n": 2}))
            .tool("probe", json!({"n": 3})),
        ScriptedTurn::text("ok"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    let ids: Vec<_> = run
        .outcome
        .tree
        .nodes
        .iter()
        .map(|n| n.id.clone())
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], "call_x", "a usable model id is kept");
    assert!(
        ids[1] != ids[0] && ids[2] != ids[0] && ids[1] != ids[2],
        "{ids:?}"
    );
    assert_calls_paired(&run.outcome.messages);
}

#[tokio::test]
async fn plan_mode_blocks_actions_and_default_mode_lets_reads_run() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool("reader", json!({}))
            .tool("writer", json!({})),
        ScriptedTurn::text("1. write the file"),
    ]);
    let writer = Probe::new("writer").category(ToolCategory::Write);
    let run = Harness::new(&model)
        .mode(cairn_protocol::PermissionMode::Plan)
        .tool(Probe::new("reader"))
        .tool(writer.clone())
        .run("plan it")
        .await;
    let ends = run.tool_ends();
    let by_name = |name: &str| ends.iter().find(|e| e.0 == name).unwrap().clone();
    assert!(!by_name("reader").2, "read ran: {ends:?}");
    let (_, blocked, is_error) = by_name("writer");
    assert!(is_error, "write blocked: {ends:?}");
    assert!(blocked.as_str().unwrap().contains("plan mode"), "{ends:?}");
    assert_eq!(writer.calls(), 0);
    let system = model.requests()[0].messages[0].content().to_owned();
    assert!(system.contains("numbered plan"), "{system}");
}

#[tokio::test(start_paused = true)]
async fn a_call_is_shown_while_the_model_writes_it_under_the_id_it_then_runs_as() {
    let model = ScriptedModel::new();
    let piece = Duration::from_millis(100);
    model.root([
        ScriptedTurn::new()
            .draft(0, "", "echo", "{\"n\"")
            .delay(piece)
            .draft(0, "", "echo", ": ")
            .delay(piece * 3)
            .draft(0, "", "echo", "1}")
            .tool_raw("echo", "{\"n\": 1}"),
        ScriptedTurn::text("done"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("echo").category(ToolCategory::Read).streams("n"))
        .run("echo one")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let updates: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(u) => Some((u.status, u.tool_call_id.clone(), u.args.clone())),
            _ => None,
        })
        .collect();
    // While it is written, the argument its tool shows as it grows goes with it.
    let streams: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(u) if u.status == ToolCallStatus::Pending => {
                Some(u.streams.as_deref())
            }
            _ => None,
        })
        .collect();
    assert_eq!(streams, [Some("n"), Some("n")]);
    let id = updates[0].1.clone();
    assert!(!id.is_empty());
    assert_eq!(
        updates,
        [
            // At once; the next piece a quarter second on, though none followed it then;
            // the last comes as the whole call, which starts at once.
            (ToolCallStatus::Pending, id.clone(), Some(json!("{\"n\""))),
            (ToolCallStatus::Pending, id.clone(), Some(json!("{\"n\": "))),
            (ToolCallStatus::Start, id.clone(), Some(json!({"n": 1}))),
            (ToolCallStatus::End, id.clone(), None),
        ]
    );
    // The stored tree has the call, not the drafts.
    assert_eq!(run.outcome.tree.nodes.len(), 1);
    assert_eq!(run.outcome.tree.nodes[0].id, id);
}

#[tokio::test]
async fn a_level_that_acted_and_said_nothing_is_asked_once_what_it_did() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("probe", json!({})),
        ScriptedTurn::text(""),
        ScriptedTurn::text("I ran probe; it worked."),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("do it")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "I ran probe; it worked.");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].messages[requests[2].messages.len() - 2..],
        [
            ChatMessage::assistant(""),
            ChatMessage::user("Tell me in one or two sentences what you did and what came of it.")
        ]
    );

    // Asked once: silence again ends the turn as it is.
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("probe", json!({})),
        ScriptedTurn::text(""),
        ScriptedTurn::text(""),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("do it")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(model.requests().len(), 3);

    // A level that called nothing may answer with nothing.
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("")]);
    Harness::new(&model).run("hm").await;
    assert_eq!(model.requests().len(), 1);
}
