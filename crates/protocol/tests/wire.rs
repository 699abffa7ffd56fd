//! The wire contract: exact `type` tags and field names, and serde round trips.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use cairn_protocol::*;
use serde_json::{Value, json};

fn round_trip(event: Event, expected: Value) {
    let encoded = serde_json::to_value(&event).unwrap();
    assert_eq!(encoded, expected, "encoding of {}", event.type_name());
    assert_eq!(encoded["type"], event.type_name());
    let decoded: Event = serde_json::from_value(encoded.clone()).unwrap();
    assert_eq!(decoded, event);
    let by_tag = Event::from_tagged(event.type_name(), encoded).unwrap();
    assert_eq!(by_tag, event, "{} read by its tag", event.type_name());
}

/// The tags serde's derived reader of `T` knows: it names them all when it meets one
/// it does not.
fn derived_tags<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
    let unknown = serde_json::from_value::<T>(json!({"type": "nope"})).unwrap_err();
    let message = unknown.to_string();
    let expected = message.split("expected one of ").nth(1).unwrap();
    expected
        .split(", ")
        .map(|tag| tag.trim_matches('`').to_owned())
        .collect()
}

#[test]
fn the_tags_read_by_hand_are_the_derived_readers_own() {
    use cairn_protocol::desktop::ShellEvent;
    // A variant added to the enum but not to its hand reader fails here, not in the
    // webview, which would only warn of an unreadable message.
    assert_eq!(derived_tags::<Event>(), Event::TAGS);
    assert_eq!(derived_tags::<ShellEvent>(), ShellEvent::TAGS);
    for tag in Event::TAGS {
        let read = Event::from_tagged(tag, json!({}));
        assert!(
            !format!("{read:?}").contains("unknown variant"),
            "{tag}: {read:?}"
        );
    }
    for tag in ShellEvent::TAGS {
        let read = ShellEvent::from_tagged(tag, json!({}));
        assert!(
            !format!("{read:?}").contains("unknown variant"),
            "{tag}: {read:?}"
        );
    }

    let unknown = Event::from_tagged("nope", json!({})).unwrap_err();
    assert!(
        unknown
            .to_string()
            .starts_with("unknown variant `nope`, expected one of `chunk`"),
        "{unknown}"
    );
}

#[test]
fn prompt_progress_and_cut() {
    round_trip(
        Event::PromptProgress(PromptProgress {
            parent_id: None,
            depth: 0,
            total: 1500,
            cached: 200,
            read: 700,
            elapsed_ms: 9000,
            left_ms: Some(8000),
        }),
        json!({"type": "prompt_progress", "parent_id": null, "depth": 0, "total": 1500,
               "cached": 200, "read": 700, "elapsed_ms": 9000, "left_ms": 8000}),
    );
    round_trip(
        Event::PromptCut(PromptCut {
            parent_id: Some("call_2".into()),
            depth: 1,
            sent: 5000,
            read: 2048,
            window: 2048,
            refused: false,
        }),
        json!({"type": "prompt_cut", "parent_id": "call_2", "depth": 1, "sent": 5000,
               "read": 2048, "window": 2048, "refused": false}),
    );
}

#[test]
fn chunk_and_reasoning_carry_parent_and_depth_even_at_the_root() {
    round_trip(
        Event::Chunk(Chunk {
            content: "Hi".into(),
            parent_id: None,
            depth: 0,
        }),
        json!({"type": "chunk", "content": "Hi", "parent_id": null, "depth": 0}),
    );
    round_trip(
        Event::Reasoning(Reasoning {
            content: "hmm".into(),
            parent_id: Some("call_1".into()),
            depth: 1,
        }),
        json!({"type": "reasoning", "content": "hmm", "parent_id": "call_1", "depth": 1}),
    );
}

#[test]
fn tool_call_update_start_and_end() {
    round_trip(
        Event::ToolCallUpdate(ToolCallUpdate {
            kind: None,
            streams: None,
            subject: None,
            change: None,
            changed: Vec::new(),
            tool_call_id: "call_1".into(),
            name: "read_file".into(),
            args: Some(json!({"path": "a.txt"})),
            result: None,
            is_error: None,
            parent_id: None,
            depth: 0,
            status: ToolCallStatus::Start,
            duration_ms: None,
            waited_ms: None,
            denied: false,
            images: Vec::new(),
        }),
        json!({"type": "tool_call_update", "tool_call_id": "call_1", "name": "read_file",
               "args": {"path": "a.txt"}, "parent_id": null, "depth": 0, "status": "start"}),
    );
    round_trip(
        Event::ToolCallUpdate(ToolCallUpdate {
            kind: None,
            streams: None,
            subject: None,
            change: None,
            changed: Vec::new(),
            tool_call_id: "call_2".into(),
            name: "write_file".into(),
            args: None,
            result: Some(json!("denied")),
            is_error: Some(true),
            parent_id: Some("call_0".into()),
            depth: 2,
            status: ToolCallStatus::End,
            duration_ms: Some(37),
            waited_ms: None,
            denied: false,
            images: Vec::new(),
        }),
        json!({"type": "tool_call_update", "tool_call_id": "call_2", "name": "write_file",
               "result": "denied", "is_error": true, "parent_id": "call_0", "depth": 2,
               "status": "end", "duration_ms": 37}),
    );
    // A call the user denied after 6 s: both extensions on the wire.
    round_trip(
        Event::ToolCallUpdate(ToolCallUpdate {
            kind: None,
            streams: None,
            subject: None,
            change: None,
            changed: Vec::new(),
            tool_call_id: "call_3".into(),
            name: "write_file".into(),
            args: None,
            result: Some(json!("Error: the user denied this call")),
            is_error: Some(true),
            parent_id: None,
            depth: 0,
            status: ToolCallStatus::End,
            duration_ms: Some(6_012),
            waited_ms: Some(6_000),
            denied: true,
            images: Vec::new(),
        }),
        json!({"type": "tool_call_update", "tool_call_id": "call_3", "name": "write_file",
               "result": "Error: the user denied this call", "is_error": true,
               "parent_id": null, "depth": 0, "status": "end", "duration_ms": 6012,
               "waited_ms": 6000, "denied": true}),
    );
    // A write being written: the argument its tool shows as it grows.
    round_trip(
        Event::ToolCallUpdate(ToolCallUpdate {
            args: Some(json!("{\"path\": \"a.txt\", \"content\": \"Hel")),
            streams: Some("content".into()),
            ..ToolCallUpdate::new("call_5", "write_file", None, 0, ToolCallStatus::Pending)
        }),
        json!({"type": "tool_call_update", "tool_call_id": "call_5", "name": "write_file",
               "args": "{\"path\": \"a.txt\", \"content\": \"Hel", "parent_id": null,
               "depth": 0, "status": "pending", "streams": "content"}),
    );
    // A subtask, as its tool says: what a card nests and is titled by.
    round_trip(
        Event::ToolCallUpdate(ToolCallUpdate {
            args: Some(json!({"title": "Survey", "instructions": "List the files."})),
            kind: Some(CallKind::Subtask),
            ..ToolCallUpdate::new("call_6", "run_subtask", None, 0, ToolCallStatus::Start)
        }),
        json!({"type": "tool_call_update", "tool_call_id": "call_6", "name": "run_subtask",
               "args": {"title": "Survey", "instructions": "List the files."},
               "parent_id": null, "depth": 0, "status": "start", "kind": "subtask"}),
    );
    for (kind, word) in [
        (CallKind::Subtask, "subtask"),
        (CallKind::Plan, "plan"),
        (CallKind::Finish, "finish"),
        (CallKind::HandOver, "hand_over"),
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(word));
    }
    // A write that ran: the change it made, for its card.
    round_trip(
        Event::ToolCallUpdate(ToolCallUpdate {
            result: Some(json!("edited `a.txt`: 1 lines replaced with 1")),
            is_error: Some(false),
            duration_ms: Some(3),
            change: Some(ApprovalPreview::Diff {
                path: "a.txt".into(),
                diff: "@@ -1 +1 @@\n-a\n+b\n".into(),
            }),
            ..ToolCallUpdate::new("call_4", "edit_file", None, 0, ToolCallStatus::End)
        }),
        json!({"type": "tool_call_update", "tool_call_id": "call_4", "name": "edit_file",
               "result": "edited `a.txt`: 1 lines replaced with 1", "is_error": false,
               "parent_id": null, "depth": 0, "status": "end", "duration_ms": 3,
               "change": {"kind": "diff", "path": "a.txt", "diff": "@@ -1 +1 @@\n-a\n+b\n"}}),
    );
}

#[test]
fn approval_request_and_response() {
    round_trip(
        Event::ToolApprovalRequest(ToolApprovalRequest {
            action: None,
            approval_id: "ap_1".into(),
            tool_call_id: "call_1".into(),
            name: "write_file".into(),
            args: json!({"path": "x", "content": "y"}),
            category: ToolCategory::Write,
            parent_id: None,
            depth: 0,
            subtask_title: None,
            session_grant: Some("write_file".into()),
            preview: None,
        }),
        json!({"type": "tool_approval_request", "approval_id": "ap_1", "tool_call_id": "call_1",
               "name": "write_file", "args": {"path": "x", "content": "y"}, "category": "write",
               "parent_id": null, "depth": 0, "session_grant": "write_file"}),
    );
    // What the call would do, when the tool can say: tagged by kind.
    let previews = [
        (
            ApprovalPreview::Diff {
                path: "x".into(),
                diff: "@@ -1 +1 @@\n-a\n+y\n".into(),
            },
            json!({"kind": "diff", "path": "x", "diff": "@@ -1 +1 @@\n-a\n+y\n"}),
        ),
        (
            ApprovalPreview::NewFile {
                path: "x".into(),
                content: "y".into(),
            },
            json!({"kind": "new_file", "path": "x", "content": "y"}),
        ),
        (
            ApprovalPreview::Command {
                folder: "/w".into(),
                command: "ls".into(),
            },
            json!({"kind": "command", "folder": "/w", "command": "ls"}),
        ),
    ];
    for (preview, wire) in previews {
        assert!(!preview.changes_nothing(), "{preview:?} changes something");
        assert_eq!(serde_json::to_value(&preview).unwrap(), wire);
        assert_eq!(
            serde_json::from_value::<ApprovalPreview>(wire).unwrap(),
            preview
        );
    }
    let same = ApprovalPreview::Diff {
        path: "x".into(),
        diff: String::new(),
    };
    assert!(
        same.changes_nothing(),
        "a diff without hunks changes nothing"
    );
    for (decision, word) in [
        (ApprovalDecision::Allow, "allow"),
        (ApprovalDecision::AllowSession, "allow_session"),
        (ApprovalDecision::Deny, "deny"),
    ] {
        let line =
            format!(r#"{{"type":"approval_response","approval_id":"ap_9","decision":"{word}"}}"#);
        let parsed: ClientMessage = serde_json::from_str(&line).unwrap();
        let ClientMessage::ApprovalResponse(response) = &parsed else {
            panic!("not an approval response: {parsed:?}")
        };
        assert_eq!(response.approval_id, "ap_9");
        assert_eq!(response.decision, decision);
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            serde_json::to_value(&parsed).unwrap()
        );
    }
}

#[test]
fn budget_state_done_and_error() {
    round_trip(
        Event::BudgetExceeded(BudgetExceeded {
            reason: BudgetReason::LlmCalls,
            limit: 60,
            observed: 61,
        }),
        json!({"type": "budget_exceeded", "reason": "llm_calls", "limit": 60, "observed": 61}),
    );
    round_trip(
        Event::ServerState(ServerState {
            parent_id: Some("s1".into()),
            depth: 1,
            server: "gpu".into(),
            waiting: true,
        }),
        json!({"type": "server_state", "parent_id": "s1", "depth": 1, "server": "gpu",
               "waiting": true}),
    );
    for (state, word) in [
        (AgentStateKind::Thinking, "thinking"),
        (AgentStateKind::Executing, "executing"),
        (AgentStateKind::WaitingOnUser, "waiting_on_user"),
        (AgentStateKind::Reconnecting, "reconnecting"),
        (AgentStateKind::Idle, "idle"),
    ] {
        round_trip(
            Event::AgentState(AgentState { state }),
            json!({"type": "agent_state", "state": word}),
        );
    }
    round_trip(
        Event::Done(Done {
            thread_id: "t".into(),
            message_id: "m".into(),
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                llm_calls: 2,
                tool_calls: 1,
                estimated: false,
                cached_prompt_tokens: 0,
            },
            status: TurnStatus::Completed,
            cut: None,
        }),
        json!({"type": "done", "thread_id": "t", "message_id": "m",
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "llm_calls": 2, "tool_calls": 1},
               "status": "completed"}),
    );
    // An answer the server cut at its length limit: completed, and said so.
    for (cut, word) in [(Cut::Length, "length"), (Cut::Repetition, "repetition")] {
        round_trip(
            Event::Done(Done {
                thread_id: "t".into(),
                message_id: "m".into(),
                usage: Usage::default(),
                status: TurnStatus::Completed,
                cut: Some(cut),
            }),
            json!({"type": "done", "thread_id": "t", "message_id": "m",
                   "usage": {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "tool_calls": 0},
                   "status": "completed", "cut": word}),
        );
    }
    round_trip(
        Event::PlanReady(PlanReady {
            thread_id: "t".into(),
            message_id: "m".into(),
            plan: "1. read\n2. write".into(),
            plan_id: None,
            steps: None,
        }),
        json!({"type": "plan_ready", "thread_id": "t", "message_id": "m", "plan": "1. read\n2. write"}),
    );
    let step = PlanStep {
        id: "s2".into(),
        title: "Write".into(),
        instructions: "write it".into(),
        tools: None,
        agent: Some("writer".into()),
        depends_on: vec!["s1".into()],
    };
    let step_json = json!({"id": "s2", "title": "Write", "instructions": "write it",
                           "agent": "writer", "depends_on": ["s1"]});
    round_trip(
        Event::PlanReady(PlanReady {
            thread_id: "t".into(),
            message_id: "m".into(),
            plan: "Paused for review.".into(),
            plan_id: Some("p1".into()),
            steps: Some(vec![step.clone()]),
        }),
        json!({"type": "plan_ready", "thread_id": "t", "message_id": "m",
               "plan": "Paused for review.", "plan_id": "p1", "steps": [step_json.clone()]}),
    );
    round_trip(
        Event::PlanCreated(PlanCreated {
            plan_id: "p1".into(),
            objective: "ship".into(),
            steps: vec![step],
            execution_mode: ExecutionMode::AgentReview,
            tool_call_id: "c1".into(),
            parent_id: None,
            depth: 0,
        }),
        json!({"type": "plan_created", "plan_id": "p1", "objective": "ship", "steps": [step_json],
               "execution_mode": "agent_review", "tool_call_id": "c1", "parent_id": null, "depth": 0}),
    );
    round_trip(
        Event::PlanReview(PlanReview {
            plan_id: "p1".into(),
            verdict: Verdict::NeedsChanges,
            notes: "test first".into(),
            tool_call_id: "c1".into(),
        }),
        json!({"type": "plan_review", "plan_id": "p1", "verdict": "needs_changes",
               "notes": "test first", "tool_call_id": "c1"}),
    );
    round_trip(
        Event::AgentSwitched(AgentSwitched {
            from: "auto".into(),
            to: "reviewer".into(),
            reason: Some("a review".into()),
            follow_up: "Review the diff.".into(),
            thread_id: "t".into(),
            message_id: "m2".into(),
        }),
        json!({"type": "agent_switched", "from": "auto", "to": "reviewer", "reason": "a review",
               "follow_up": "Review the diff.", "thread_id": "t", "message_id": "m2"}),
    );
    round_trip(
        Event::Error(ErrorEvent {
            message: "could not connect".into(),
            kind: ErrorKind::Provider,
        }),
        json!({"type": "error", "message": "could not connect", "kind": "provider"}),
    );
}

#[test]
fn every_budget_reason_has_its_wire_name() {
    for (reason, word) in [
        (BudgetReason::Subtasks, "subtasks"),
        (BudgetReason::LlmCalls, "llm_calls"),
        (BudgetReason::ToolCalls, "tool_calls"),
        (BudgetReason::WallClock, "wall_clock"),
        (BudgetReason::Tokens, "tokens"),
        (BudgetReason::Bytes, "bytes"),
    ] {
        assert_eq!(serde_json::to_value(reason).unwrap(), json!(word));
        assert_eq!(reason.as_str(), word);
    }
}

#[test]
fn execution_tree_version_one_round_trips() {
    let tree = ExecutionTree::new(vec![
        ExecutionTreeNode {
            subject: None,
            change: None,
            result_bytes: None,
            server: Some("gpu".into()),
            id: "call_1".into(),
            parent_id: None,
            name: "run_subtask".into(),
            kind: Some(CallKind::Subtask),
            title: Some("Survey".into()),
            args_preview: Some("{\"title\":\"Survey\"}".into()),
            result_preview: Some("done".into()),
            is_error: Some(false),
            duration_ms: 12,
            waited_ms: 0,
            denied: false,
            images: Vec::new(),
        },
        ExecutionTreeNode {
            subject: None,
            change: None,
            result_bytes: None,
            server: None,
            id: "call_2".into(),
            parent_id: Some("call_1".into()),
            name: "read_file".into(),
            kind: None,
            title: None,
            args_preview: None,
            result_preview: None,
            is_error: None,
            duration_ms: 3,
            waited_ms: 0,
            denied: false,
            images: Vec::new(),
        },
    ]);
    let encoded = serde_json::to_value(&tree).unwrap();
    assert_eq!(encoded["version"], 1);
    assert_eq!(encoded["nodes"][0]["server"], "gpu");
    assert_eq!(encoded["nodes"][0]["kind"], "subtask");
    assert_eq!(
        encoded["nodes"][1],
        json!({"id": "call_2", "parent_id": "call_1", "name": "read_file", "duration_ms": 3})
    );
    let decoded: ExecutionTree = serde_json::from_value(encoded).unwrap();
    assert_eq!(decoded, tree);
    let children: Vec<_> = decoded.children(Some("call_1")).map(|n| &n.id).collect();
    assert_eq!(children, ["call_2"]);
}

#[test]
fn preview_cuts_at_500_characters_on_a_char_boundary() {
    assert_eq!(preview("short"), "short");
    let exactly = "é".repeat(PREVIEW_MAX_CHARS);
    assert_eq!(preview(&exactly), exactly);
    let long = "é".repeat(PREVIEW_MAX_CHARS + 1);
    let cut = preview(&long);
    assert_eq!(cut.chars().count(), PREVIEW_MAX_CHARS);
    assert!(cut.ends_with('…'));
    assert!(cut.starts_with(&"é".repeat(PREVIEW_MAX_CHARS - 1)));
}

#[test]
fn chat_messages_are_tagged_by_role() {
    let message = ChatMessage::Assistant {
        content: String::new(),
        reasoning: None,
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "list_dir".into(),
            arguments: "{\"path\":\".\"}".into(),
            written: None,
        }],
    };
    let encoded = serde_json::to_value(&message).unwrap();
    assert_eq!(
        encoded,
        json!({"role": "assistant", "content": "",
               "tool_calls": [{"id": "call_1", "name": "list_dir", "arguments": "{\"path\":\".\"}"}]})
    );
    assert_eq!(
        serde_json::from_value::<ChatMessage>(encoded).unwrap(),
        message
    );
    let tool = ChatMessage::Tool {
        tool_call_id: "call_1".into(),
        name: "list_dir".into(),
        content: "a.txt".into(),
        is_error: false,
        images: Vec::new(),
    };
    assert_eq!(
        serde_json::to_value(&tool).unwrap(),
        json!({"role": "tool", "tool_call_id": "call_1", "name": "list_dir", "content": "a.txt"})
    );
}

#[test]
fn modes_parse_and_reject_unknown_names() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.as_str().parse::<PermissionMode>().unwrap(), mode);
        assert_eq!(serde_json::to_value(mode).unwrap(), json!(mode.as_str()));
    }
    assert_eq!(PermissionMode::default(), PermissionMode::Default);
    let err = "yolo".parse::<PermissionMode>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown permission mode `yolo`: use plan, default or auto"
    );
}

#[test]
fn only_a_subtask_call_has_a_subtask_title() {
    // What the engine's tools say of their calls.
    let call = |name: &str, args| ToolCallUpdate {
        kind: (name == RUN_SUBTASK).then_some(CallKind::Subtask),
        streams: None,
        subject: None,
        change: None,
        changed: Vec::new(),
        tool_call_id: "c".into(),
        name: name.into(),
        args,
        result: None,
        is_error: None,
        parent_id: None,
        depth: 0,
        status: ToolCallStatus::Start,
        duration_ms: None,
        waited_ms: None,
        denied: false,
        images: Vec::new(),
    };
    let titled = call(
        RUN_SUBTASK,
        Some(json!({"title": "Survey", "instructions": "x"})),
    );
    assert_eq!(titled.subtask_title().as_deref(), Some("Survey"));
    assert_eq!(
        call(RUN_SUBTASK, Some(json!({"instructions": "x"}))).subtask_title(),
        None
    );
    assert_eq!(call(RUN_SUBTASK, None).subtask_title(), None);
    assert_eq!(
        call("read_file", Some(json!({"title": "x"}))).subtask_title(),
        None
    );
    // By what its tool says, not its name.
    let unsaid = ToolCallUpdate {
        kind: None,
        ..call(RUN_SUBTASK, Some(json!({"title": "Survey"})))
    };
    assert_eq!(unsaid.subtask_title(), None);
}

#[test]
fn every_command_error_kind_has_its_wire_name() {
    use cairn_protocol::desktop::{CommandError, CommandErrorKind as Kind};
    for (kind, name) in [
        (Kind::Invalid, "invalid"),
        (Kind::NotFound, "not_found"),
        (Kind::Busy, "busy"),
        (Kind::NoModel, "no_model"),
        (Kind::Provider, "provider"),
        (Kind::Keychain, "keychain"),
        (Kind::Storage, "storage"),
        (Kind::System, "system"),
    ] {
        let error = CommandError {
            message: "m".into(),
            kind,
        };
        let encoded = serde_json::to_value(&error).unwrap();
        assert_eq!(encoded, json!({"message": "m", "kind": name}));
        assert_eq!(
            serde_json::from_value::<CommandError>(encoded).unwrap(),
            error
        );
    }
}

#[test]
fn a_budget_says_what_was_used_in_its_unit_and_how_to_raise_it() {
    use cairn_protocol::{BudgetExceeded, BudgetReason};
    let time = BudgetExceeded {
        reason: BudgetReason::WallClock,
        limit: 180_000,
        observed: 180_400,
    };
    assert_eq!(time.used(), "181 s of 180 s");
    assert!(
        time.how_to_raise()
            .starts_with("raise it with CAIRN_MAX_WALL_CLOCK_MS (milliseconds;"),
        "{}",
        time.how_to_raise()
    );
    let calls = BudgetExceeded {
        reason: BudgetReason::LlmCalls,
        limit: 60,
        observed: 61,
    };
    assert_eq!(calls.used(), "61 of 60");
    assert_eq!(
        calls.how_to_raise(),
        "raise it with CAIRN_MAX_TOTAL_LLM_CALLS"
    );
}

#[test]
fn tagged_shapes_read_by_hand_take_what_they_write_in_any_order() {
    let entries = [
        TimelineEntry::Text {
            parent_id: None,
            content: "Looking.".into(),
        },
        TimelineEntry::Text {
            parent_id: Some("call_1".into()),
            content: "Inside.".into(),
        },
        TimelineEntry::Call {
            id: "call_2".into(),
        },
    ];
    for entry in entries {
        let wire = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            serde_json::from_value::<TimelineEntry>(wire).unwrap(),
            entry
        );
    }
    // The tag need not come first, and an absent optional field is none.
    let text: TimelineEntry = serde_json::from_str(r#"{"content": "Hi", "kind": "text"}"#).unwrap();
    assert_eq!(
        text,
        TimelineEntry::Text {
            parent_id: None,
            content: "Hi".into()
        }
    );
    let diff: ApprovalPreview =
        serde_json::from_str(r#"{"diff": "@@", "path": "a", "kind": "diff", "extra": 1}"#).unwrap();
    assert_eq!(
        diff,
        ApprovalPreview::Diff {
            path: "a".into(),
            diff: "@@".into()
        }
    );

    let problems = [
        (
            serde_json::from_str::<ApprovalPreview>(r#"{"kind": "blob", "path": "a"}"#),
            "unknown variant `blob`, expected one of `new_file`, `diff`, `command`",
        ),
        (
            serde_json::from_str::<ApprovalPreview>(r#"{"kind": "diff", "path": "a"}"#),
            "missing field `diff`",
        ),
        (
            serde_json::from_str::<ApprovalPreview>(r#"{"path": "a", "diff": "@@"}"#),
            "missing field `kind`",
        ),
    ];
    for (read, problem) in problems {
        let err = read.unwrap_err().to_string();
        assert!(err.starts_with(problem), "{err}");
    }
    let err = serde_json::from_str::<TimelineEntry>(r#"{"kind": "call"}"#).unwrap_err();
    assert!(err.to_string().starts_with("missing field `id`"), "{err}");
}

#[test]
fn every_shell_event_reads_by_its_tag() {
    use cairn_protocol::desktop::{PendingApproval, ShellEvent};
    let request = ToolApprovalRequest {
        approval_id: "ap_1".into(),
        tool_call_id: "call_1".into(),
        name: "run_command".into(),
        args: json!({"command": "ls"}),
        category: ToolCategory::Execute,
        parent_id: None,
        depth: 0,
        session_grant: None,
        subtask_title: None,
        action: None,
        preview: Some(ApprovalPreview::Command {
            folder: "/w".into(),
            command: "ls".into(),
        }),
    };
    let events = [
        ShellEvent::OpenThread {
            thread_id: "t1".into(),
        },
        ShellEvent::FocusComposer,
        ShellEvent::NewChat,
        ShellEvent::Running {
            threads: vec!["t1".into(), "t2".into()],
        },
        ShellEvent::Pending {
            approvals: vec![PendingApproval {
                thread_id: "t1".into(),
                request,
            }],
        },
        ShellEvent::Answered {
            approval_id: "ap_1".into(),
        },
        ShellEvent::Notice {
            message: "The shortcut is taken.".into(),
        },
        ShellEvent::ConfirmQuit,
    ];
    let mut tags = Vec::new();
    for event in events {
        let wire = serde_json::to_value(&event).unwrap();
        let tag = wire["type"].as_str().unwrap().to_owned();
        assert_eq!(ShellEvent::from_tagged(&tag, wire.clone()).unwrap(), event);
        assert_eq!(serde_json::from_value::<ShellEvent>(wire).unwrap(), event);
        tags.push(tag);
    }
    assert_eq!(
        tags,
        ShellEvent::TAGS,
        "a sample of every variant, in order"
    );
    let err = ShellEvent::from_tagged("open_thread", json!({})).unwrap_err();
    assert_eq!(err.to_string(), "missing field `thread_id`");
}
