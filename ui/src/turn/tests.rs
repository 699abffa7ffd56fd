use super::*;
use cairn_protocol::*;
use serde_json::json;

fn chunk(text: &str, parent: Option<&str>, depth: u32) -> Event {
    Event::Chunk(Chunk {
        content: text.into(),
        parent_id: parent.map(Into::into),
        depth,
    })
}

/// The kind the engine's tool of that name says its calls are.
fn engine_kind(name: &str) -> Option<CallKind> {
    match name {
        "run_subtask" => Some(CallKind::Subtask),
        "create_plan" => Some(CallKind::Plan),
        "finish_subtask" | "submit_plan" | "submit_review" => Some(CallKind::Finish),
        "switch_agent" => Some(CallKind::HandOver),
        _ => None,
    }
}

fn start(id: &str, name: &str, args: Value, parent: Option<&str>, depth: u32) -> Event {
    Event::ToolCallUpdate(ToolCallUpdate {
        kind: engine_kind(name),
        streams: None,
        subject: None,
        change: None,
        changed: Vec::new(),
        tool_call_id: id.into(),
        name: name.into(),
        args: Some(args),
        result: None,
        is_error: None,
        parent_id: parent.map(Into::into),
        depth,
        status: ToolCallStatus::Start,
        duration_ms: None,
        waited_ms: None,
        denied: false,
        images: Vec::new(),
    })
}

fn end(id: &str, result: &str, error: bool, parent: Option<&str>, depth: u32) -> Event {
    Event::ToolCallUpdate(ToolCallUpdate {
        kind: None,
        streams: None,
        subject: None,
        change: None,
        changed: Vec::new(),
        tool_call_id: id.into(),
        name: String::new(),
        args: None,
        result: Some(json!(result)),
        is_error: Some(error),
        parent_id: parent.map(Into::into),
        depth,
        status: ToolCallStatus::End,
        duration_ms: None,
        waited_ms: None,
        denied: false,
        images: Vec::new(),
    })
}

#[test]
fn the_roots_prompt_reading_is_kept_and_a_subtasks_is_not() {
    let progress = |parent_id: Option<&str>, read: u64| {
        Event::PromptProgress(PromptProgress {
            parent_id: parent_id.map(str::to_owned),
            depth: u32::from(parent_id.is_some()),
            total: 1900,
            cached: 100,
            read,
            elapsed_ms: 0,
            left_ms: Some(8_000),
        })
    };
    let mut view = TurnView::new();
    view.apply(&progress(None, 100), 0.0);
    let reading = view.reading.clone().expect("the root's reading");
    assert!(reading.worth_showing());
    assert_eq!(
        crate::format::reading(&reading),
        "Reading the prompt: 0 of 1,800 tokens · 8 s left"
    );
    view.apply(&progress(Some("sub"), 1900), 1.0);
    assert_eq!(view.reading.as_ref().map(|r| r.read), Some(100));
    view.apply(&progress(None, 1900), 2.0);
    assert!(
        !view
            .reading
            .as_ref()
            .is_some_and(PromptProgress::worth_showing)
    );
}

#[test]
fn a_call_shows_while_written_becomes_the_call_and_one_never_made_goes() {
    let pending = |id: &str, name: &str, text: &str| {
        let Event::ToolCallUpdate(mut update) = start(id, name, json!(text), None, 0) else {
            unreachable!()
        };
        update.status = ToolCallStatus::Pending;
        Event::ToolCallUpdate(update)
    };
    let mut view = TurnView::new();
    view.apply(
        &pending("w1", "write_file", r#"{"path": "a.md", "con"#),
        0.0,
    );
    view.apply(
        &pending("w1", "write_file", r#"{"path": "a.md", "content": "Hi"#),
        10.0,
    );
    view.apply(&pending("w2", "run_command", r#"{"comm"#), 20.0);
    assert_eq!(
        view.segments,
        [Segment::Card("w1".into()), Segment::Card("w2".into())]
    );
    let card = &view.cards["w1"];
    assert!(card.pending && card.state == CardState::Running);
    assert!(!card.settled(), "being written");
    assert_eq!(card.args, Some(json!(r#"{"path": "a.md", "content": "Hi"#)));
    view.apply(
        &start(
            "w1",
            "write_file",
            json!({"path": "a.md", "content": "Hi"}),
            None,
            0,
        ),
        30.0,
    );
    let card = &view.cards["w1"];
    assert!(
        !card.pending,
        "the call was made: the same card, now the call"
    );
    assert_eq!(card.args, Some(json!({"path": "a.md", "content": "Hi"})));
    assert_eq!(view.segments.len(), 2, "not placed twice");
    // A late pending update changes nothing once the call started.
    view.apply(&pending("w1", "write_file", "{"), 35.0);
    assert_eq!(
        view.cards["w1"].args,
        Some(json!({"path": "a.md", "content": "Hi"}))
    );
    assert!(!view.cards["w1"].settled(), "running");
    view.apply(&end("w1", "written", false, None, 0), 40.0);
    assert!(view.cards["w1"].settled(), "ended");
    view.apply(
        &Event::Done(Done {
            thread_id: "t".into(),
            message_id: "m".into(),
            usage: Usage::default(),
            status: TurnStatus::Completed,
            cut: None,
        }),
        50.0,
    );
    assert_eq!(
        view.segments,
        [Segment::Card("w1".into())],
        "w2 was never made"
    );
    assert!(!view.cards.contains_key("w2"));
}

#[test]
fn a_subtask_names_its_server_and_says_while_it_waits_for_a_slot_live_and_stored() {
    let state = |parent: Option<&str>, waiting| {
        Event::ServerState(ServerState {
            parent_id: parent.map(Into::into),
            depth: u32::from(parent.is_some()),
            server: "gpu".into(),
            waiting,
        })
    };
    let mut live = TurnView::new();
    live.apply(
        &start("s1", "run_subtask", json!({"title": "Count"}), None, 0),
        0.0,
    );
    live.apply(&state(Some("s1"), false), 0.0);
    assert_eq!(live.cards["s1"].server.as_deref(), Some("gpu"));
    assert!(!live.cards["s1"].waiting_for_slot);
    live.apply(&state(Some("s1"), true), 0.0);
    assert!(live.cards["s1"].waiting_for_slot);
    live.apply(&state(Some("s1"), false), 0.0);
    assert!(!live.cards["s1"].waiting_for_slot);
    // An answer handed to a profile on another machine names it, and its wait.
    live.apply(&state(None, true), 0.0);
    assert_eq!(live.waiting_for_slot.as_deref(), Some("gpu"));
    live.apply(&state(None, false), 0.0);
    assert_eq!(live.waiting_for_slot, None);
    assert_eq!(live.server.as_deref(), Some("gpu"));

    let tree = ExecutionTree {
        server: Some("gpu".into()),
        ..ExecutionTree::new(vec![ExecutionTreeNode {
            id: "s1".into(),
            name: "run_subtask".into(),
            title: Some("Count".into()),
            server: Some("gpu".into()),
            ..ExecutionTreeNode::default()
        }])
    };
    let stored = TurnView::from_stored("", Some(&tree), MessageStatus::Complete);
    assert_eq!(stored.cards["s1"].server, live.cards["s1"].server);
    assert_eq!(stored.server, live.server);
}

#[test]
fn a_denial_a_wait_and_a_finishing_call_read_the_same_live_and_stored() {
    let mut denied = end("w1", "Error: the user denied this call", true, None, 0);
    if let Event::ToolCallUpdate(update) = &mut denied {
        update.duration_ms = Some(6_200);
        update.waited_ms = Some(6_000);
        update.denied = true;
    }
    let events = [
        start("s1", "run_subtask", json!({"title": "Survey"}), None, 0),
        start(
            "f1",
            "finish_subtask",
            json!({"result": "ok"}),
            Some("s1"),
            1,
        ),
        end("f1", "ok", false, Some("s1"), 1),
        start("f2", "finish_subtask", json!({}), Some("s1"), 1),
        end("f2", "Error: a result is needed", true, Some("s1"), 1),
        end("s1", "ok", false, None, 0),
        start("w1", "write_file", json!({"path": "a.md"}), None, 0),
        denied,
    ];
    let live = TurnView::from_events(&events, 0.0);
    let write = &live.cards["w1"];
    assert_eq!(write.state, CardState::Denied);
    assert_eq!((write.own_time_ms(), write.waited_ms), (Some(200), 6_000));
    assert!(
        live.cards["f1"].folded(),
        "a finishing call that worked folds"
    );
    assert!(!live.cards["f2"].folded(), "one that failed stays in sight");
    assert!(!live.cards["s1"].folded());

    let tree = ExecutionTree::new(
        ["s1", "f1", "f2", "w1"]
            .iter()
            .map(|id| {
                let card = &live.cards[*id];
                ExecutionTreeNode {
                    id: card.id.clone(),
                    parent_id: card.parent_id.clone(),
                    name: card.name.clone(),
                    kind: card.kind,
                    title: card.title.clone(),
                    is_error: Some(matches!(card.state, CardState::Failed | CardState::Denied)),
                    duration_ms: card.duration_ms.unwrap_or(0),
                    waited_ms: card.waited_ms,
                    denied: card.state == CardState::Denied,
                    ..ExecutionTreeNode::default()
                }
            })
            .collect(),
    );
    let stored = TurnView::from_stored("", Some(&tree), MessageStatus::Complete);
    for id in ["s1", "f1", "f2", "w1"] {
        let (a, b) = (&live.cards[id], &stored.cards[id]);
        assert_eq!(
            (a.state, a.folded(), a.own_time_ms(), a.waited_ms),
            (b.state, b.folded(), b.own_time_ms(), b.waited_ms),
            "{id}"
        );
    }
}

#[test]
fn events_build_nested_cards_with_their_own_text_in_order() {
    let events = [
        chunk("Let me ", None, 0),
        chunk("split it.", None, 0),
        start(
            "s1",
            "run_subtask",
            json!({"title": "Survey", "instructions": "x"}),
            None,
            0,
        ),
        chunk("Child says hi", Some("s1"), 1),
        start("r1", "read_file", json!({"path": "a"}), Some("s1"), 1),
        end("r1", "contents", false, Some("s1"), 1),
        end("s1", "survey done", false, None, 0),
        chunk("All done.", None, 0),
    ];
    let mut view = TurnView::new();
    for (n, event) in events.iter().enumerate() {
        view.apply(event, n as f64 * 10.0);
    }
    assert_eq!(
        view.segments,
        [
            Segment::Text("Let me split it.".into()),
            Segment::Card("s1".into()),
            Segment::Text("All done.".into()),
        ]
    );
    let subtask = &view.cards["s1"];
    assert_eq!(
        (subtask.label(), subtask.state, subtask.expanded),
        ("Survey", CardState::Done, true)
    );
    assert_eq!(
        subtask.children,
        [
            Segment::Text("Child says hi".into()),
            Segment::Card("r1".into())
        ]
    );
    assert_eq!(subtask.duration_ms, Some(40));
    let read = &view.cards["r1"];
    assert_eq!(
        (read.depth, read.expanded, read.result.as_deref()),
        (1, false, Some(&json!("contents")))
    );
    assert_eq!(view.text(), "Let me split it.\n\nAll done.");
}

#[test]
fn a_subtask_result_that_repeats_its_last_text_is_not_shown_twice_live_or_stored() {
    // Long enough that the stored result is a cut preview of the text.
    let said = format!("Found the files. {}", "Every one of them. ".repeat(40));
    let events = [
        start("s1", "run_subtask", json!({"title": "Survey"}), None, 0),
        chunk("Looking around.", Some("s1"), 1),
        start("r1", "list_dir", json!({"path": "."}), Some("s1"), 1),
        end("r1", "README.md", false, Some("s1"), 1),
        chunk(&said, Some("s1"), 1),
        end("s1", &said, false, None, 0),
        start("s2", "run_subtask", json!({"title": "Check"}), None, 0),
        chunk("Checked.", Some("s2"), 1),
        end("s2", "Something else entirely", false, None, 0),
    ];
    let live = TurnView::from_events(&events, 0.0);
    assert!(live.cards["s1"].result_repeats_text());
    assert!(
        !live.cards["s2"].result_repeats_text(),
        "a result that says more is shown"
    );
    assert!(
        !live.cards["r1"].result_repeats_text(),
        "a call with no text of its own"
    );

    let mut builder = TimelineBuilder::new();
    for event in &events {
        builder.observe(event);
    }
    let node = |id: &str, parent: Option<&str>, result: &str| ExecutionTreeNode {
        id: id.into(),
        parent_id: parent.map(Into::into),
        name: live.cards[id].name.clone(),
        result_preview: Some(preview(result)),
        ..ExecutionTreeNode::default()
    };
    let mut tree = ExecutionTree::new(vec![
        node("s1", None, &said),
        node("r1", Some("s1"), "README.md"),
        node("s2", None, "Something else entirely"),
    ]);
    tree.timeline = builder.entries().to_vec();
    let stored = TurnView::from_stored("", Some(&tree), MessageStatus::Complete);
    assert_ne!(
        stored.cards["s1"].result.as_deref(),
        Some(&json!(said)),
        "the stored result is cut"
    );
    assert!(stored.cards["s1"].result_repeats_text());
    assert!(!stored.cards["s2"].result_repeats_text());
}

#[test]
fn while_the_answer_streams_it_is_writing_not_thinking() {
    let thinking = Event::AgentState(AgentState {
        state: AgentStateKind::Thinking,
    });
    let mut view = TurnView::new();
    view.apply(&thinking, 0.0);
    assert!(!view.writing, "nothing written yet: thinking");
    view.apply(&chunk("Hello", None, 0), 1.0);
    assert!(view.writing);
    view.apply(&start("r1", "read_file", json!({}), None, 0), 2.0);
    assert!(!view.writing, "a call interrupts the text");
    view.apply(&end("r1", "ok", false, None, 0), 3.0);
    view.apply(&thinking, 4.0);
    assert!(!view.writing, "thinking over the result");
    view.apply(&chunk("child", Some("r1"), 1), 5.0);
    assert!(!view.writing, "a subtask's text is not the answer's");
}

#[test]
fn a_duration_the_engine_measured_beats_the_webview_clock() {
    let mut view = TurnView::new();
    view.apply(&start("r1", "read_file", json!({}), None, 0), 0.0);
    let Event::ToolCallUpdate(mut update) = end("r1", "ok", false, None, 0) else {
        unreachable!("end() builds a tool call update")
    };
    update.duration_ms = Some(16);
    // The end reached the webview 236 ms after the start; the call took 16 ms.
    view.apply(&Event::ToolCallUpdate(update), 236.0);
    assert_eq!(view.cards["r1"].duration_ms, Some(16));
}

#[test]
fn an_approval_sits_in_its_card_and_opens_the_way_to_it() {
    let mut view = TurnView::new();
    view.apply(
        &start("s1", "run_subtask", json!({"title": "T"}), None, 0),
        0.0,
    );
    view.toggle("s1");
    view.apply(
        &start("w1", "write_file", json!({"path": "x"}), Some("s1"), 1),
        1.0,
    );
    assert!(!view.cards["s1"].expanded && !view.cards["w1"].expanded);
    let request = ToolApprovalRequest {
        action: None,
        approval_id: "ap1".into(),
        tool_call_id: "w1".into(),
        name: "write_file".into(),
        args: json!({"path": "x"}),
        category: ToolCategory::Write,
        parent_id: Some("s1".into()),
        depth: 1,
        subtask_title: Some("T".into()),
        session_grant: Some("write_file".into()),
        preview: None,
    };
    view.apply(&Event::ToolApprovalRequest(request.clone()), 2.0);
    assert_eq!(view.cards["w1"].approval.as_ref(), Some(&request));
    assert!(view.cards["s1"].expanded && view.cards["w1"].expanded);
    assert_eq!(view.pending_approvals(), [&request]);
    view.answered("ap1");
    assert!(view.pending_approvals().is_empty());
    assert!(!view.cards["w1"].settled(), "asked, not yet ended");
    view.apply(&end("w1", "denied", true, Some("s1"), 1), 3.0);
    assert!(view.cards["w1"].settled());
}

#[test]
fn resync_from_the_buffer_equals_the_live_view() {
    let events = vec![
        chunk("a", None, 0),
        start("c1", "list_dir", json!({"path": "."}), None, 0),
        end("c1", "x", true, None, 0),
        Event::BudgetExceeded(BudgetExceeded {
            reason: BudgetReason::ToolCalls,
            limit: 1,
            observed: 2,
        }),
        Event::Done(Done {
            thread_id: "t".into(),
            message_id: "m".into(),
            usage: Usage::default(),
            status: TurnStatus::BudgetExceeded,
            cut: None,
        }),
    ];
    let mut live = TurnView::new();
    for event in &events {
        live.apply(event, 5.0);
    }
    assert_eq!(TurnView::from_events(&events, 5.0), live);
    assert_eq!(live.cards["c1"].state, CardState::Failed);
    assert_eq!(live.finished, Some(TurnStatus::BudgetExceeded));
    assert!(live.budget.is_some());
}

#[test]
fn a_cut_answer_says_so_live_and_stored() {
    let mut live = TurnView::new();
    live.apply(&chunk("The code word is", None, 0), 1.0);
    live.apply(
        &Event::Done(Done {
            thread_id: "t".into(),
            message_id: "m".into(),
            usage: Usage::default(),
            status: TurnStatus::Completed,
            cut: Some(Cut::Length),
        }),
        2.0,
    );
    assert_eq!(live.cut, Some(Cut::Length));
    assert_eq!(live.finished, Some(TurnStatus::Completed));
    let tree = ExecutionTree {
        cut: Some(Cut::Length),
        ..ExecutionTree::default()
    };
    let stored = TurnView::from_stored("The code word is", Some(&tree), MessageStatus::Partial);
    assert_eq!(stored.cut, Some(Cut::Length));
    assert_eq!(
        stored.finished,
        Some(TurnStatus::Completed),
        "a cut answer is not a budget that ran out"
    );
    let budget = TurnView::from_stored("so far", None, MessageStatus::Partial);
    assert_eq!(budget.finished, Some(TurnStatus::BudgetExceeded));
}

#[test]
fn what_a_command_changed_is_offered_to_restore_at_once() {
    let mut live = TurnView::new();
    live.apply(
        &start("c1", "run_command", json!({"command": "make"}), None, 0),
        1.0,
    );
    let Event::ToolCallUpdate(ended) = end("c1", "exit code: 0", false, None, 0) else {
        unreachable!()
    };
    live.apply(
        &Event::ToolCallUpdate(ToolCallUpdate {
            changed: vec!["made.txt".into(), "notes.md".into()],
            ..ended
        }),
        2.0,
    );
    assert_eq!(live.restorable, ["made.txt", "notes.md"]);
}

#[test]
fn a_prompt_the_server_cut_is_said_live_and_stored() {
    let cut = PromptCut {
        parent_id: None,
        depth: 0,
        sent: 14_000,
        read: 4096,
        window: 4096,
        refused: false,
    };
    let subtasks = PromptCut {
        parent_id: Some("c1".into()),
        depth: 1,
        ..cut.clone()
    };
    let mut live = TurnView::new();
    live.apply(&Event::PromptCut(cut.clone()), 1.0);
    live.apply(&chunk("The notes are about a garden.", None, 0), 2.0);
    live.apply(&Event::PromptCut(subtasks), 3.0);
    assert_eq!(
        live.prompt_cut.as_ref(),
        Some(&cut),
        "the root's, not a subtask's"
    );
    let tree = ExecutionTree {
        prompt_cut: Some(cut.clone()),
        ..ExecutionTree::default()
    };
    let stored = TurnView::from_stored(
        "The notes are about a garden.",
        Some(&tree),
        MessageStatus::Complete,
    );
    assert_eq!(stored.prompt_cut, live.prompt_cut);
}

#[test]
fn a_stored_tree_brings_the_nested_cards_back() {
    let tree = ExecutionTree::new(vec![
        ExecutionTreeNode {
            subject: None,
            change: None,
            result_bytes: None,
            server: None,
            id: "s1".into(),
            parent_id: None,
            name: "run_subtask".into(),
            kind: Some(CallKind::Subtask),
            title: Some("Survey".into()),
            args_preview: None,
            result_preview: Some("ok".into()),
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
            id: "r1".into(),
            parent_id: Some("s1".into()),
            name: "read_file".into(),
            kind: None,
            title: None,
            args_preview: Some("{\"path\":\"a\"}".into()),
            result_preview: None,
            is_error: Some(true),
            duration_ms: 3,
            waited_ms: 0,
            denied: false,
            images: Vec::new(),
        },
    ]);
    let view = TurnView::from_stored("Answer.", Some(&tree), MessageStatus::Complete);
    assert_eq!(
        view.segments,
        [Segment::Card("s1".into()), Segment::Text("Answer.".into())]
    );
    assert_eq!(view.cards["s1"].children, [Segment::Card("r1".into())]);
    assert_eq!(
        (
            view.cards["r1"].depth,
            view.cards["r1"].expanded,
            view.cards["r1"].state
        ),
        (1, false, CardState::Failed)
    );
    assert_eq!(view.cards["r1"].args, Some(json!({"path": "a"})));
    assert_eq!(view.cards["s1"].result.as_deref(), Some(&json!("ok")));
    assert_eq!(view.finished, Some(TurnStatus::Completed));
}

/// The turn as a reader sees it: every level's text and cards in order, nested.
fn outline(view: &TurnView, segments: &[Segment], depth: usize, out: &mut Vec<String>) {
    for segment in segments {
        match segment {
            Segment::Text(text) => out.push(format!("{}text {text}", "  ".repeat(depth))),
            Segment::Card(id) => {
                let card = &view.cards[id];
                out.push(format!(
                    "{}card {} {}",
                    "  ".repeat(depth),
                    id,
                    card.label()
                ));
                outline(view, &card.children, depth + 1, out);
            }
        }
    }
}

fn outline_of(view: &TurnView) -> Vec<String> {
    let mut out = Vec::new();
    outline(view, &view.segments, 0, &mut out);
    out
}

/// The nodes the engine stores for the calls `events` started.
fn nodes_of(events: &[Event]) -> Vec<ExecutionTreeNode> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(update) if update.status == ToolCallStatus::Start => {
                Some(ExecutionTreeNode {
                    subject: None,
                    change: None,
                    result_bytes: None,
                    server: None,
                    id: update.tool_call_id.clone(),
                    parent_id: update.parent_id.clone(),
                    name: update.name.clone(),
                    kind: update.kind,
                    title: update.subtask_title(),
                    args_preview: None,
                    result_preview: None,
                    is_error: Some(false),
                    duration_ms: 1,
                    waited_ms: 0,
                    denied: false,
                    images: Vec::new(),
                })
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_stored_answer_reads_as_it_did_live_at_every_depth() {
    // Two subtasks run side by side: their text arrives interleaved.
    let events = vec![
        chunk("First I look. ", None, 0),
        start("s1", "run_subtask", json!({"title": "Left"}), None, 0),
        start("s2", "run_subtask", json!({"title": "Right"}), None, 0),
        chunk("Left begins. ", Some("s1"), 1),
        chunk("Right begins. ", Some("s2"), 1),
        chunk("Left goes on.", Some("s1"), 1),
        start("r1", "read_file", json!({"path": "a"}), Some("s1"), 1),
        end("r1", "a", false, Some("s1"), 1),
        chunk("Left read a.", Some("s1"), 1),
        end("s1", "left done", false, None, 0),
        end("s2", "right done", false, None, 0),
        chunk("Both are done.", None, 0),
    ];
    let live = TurnView::from_events(&events, 0.0);
    let mut timeline = TimelineBuilder::new();
    for event in &events {
        timeline.observe(event);
    }
    let tree = ExecutionTree::new(nodes_of(&events)).with_timeline(timeline.entries().to_vec());
    // What the store keeps as the message's text: the root's, joined.
    let stored = TurnView::from_stored(&live.text(), Some(&tree), MessageStatus::Complete);
    assert_eq!(
        outline_of(&stored),
        [
            "text First I look. ",
            "card s1 Left",
            "  text Left begins. Left goes on.",
            "  card r1 read_file",
            "  text Left read a.",
            "card s2 Right",
            "  text Right begins. ",
            "text Both are done.",
        ]
    );
    assert_eq!(outline_of(&stored), outline_of(&live));
    assert_eq!(
        (stored.cards["r1"].depth, stored.cards["r1"].expanded),
        (1, false)
    );
}

#[test]
fn a_preview_cut_mid_json_stays_text() {
    assert_eq!(preview_value("{\"path\":\"a"), json!("{\"path\":\"a"));
    assert_eq!(
        preview_value("42"),
        json!("42"),
        "a bare result is text, not a number"
    );
    assert_eq!(preview_value("[1,2]"), json!([1, 2]));
}
#[test]
fn a_plan_ticks_its_steps_live_and_reads_the_same_when_stored() {
    use cairn_protocol::{PlanCreated, ToolCallUpdate};
    let step = |id: &str| PlanStep {
        id: id.into(),
        title: id.to_uppercase(),
        instructions: format!("do {id}"),
        tools: None,
        agent: None,
        depends_on: Vec::new(),
    };
    let update = |id: &str,
                  name: &str,
                  parent: Option<&str>,
                  status,
                  args: Option<Value>,
                  result: Option<&str>,
                  failed| {
        Event::ToolCallUpdate(ToolCallUpdate {
            kind: engine_kind(name),
            streams: None,
            subject: None,
            change: None,
            changed: Vec::new(),
            tool_call_id: id.into(),
            name: name.into(),
            args,
            result: result.map(|r| Value::String(r.into())),
            is_error: failed,
            parent_id: parent.map(Into::into),
            depth: u32::from(parent.is_some()),
            status,
            duration_ms: Some(1),
            waited_ms: None,
            denied: false,
            images: Vec::new(),
        })
    };
    let events = vec![
        update(
            "p",
            "create_plan",
            None,
            ToolCallStatus::Start,
            Some(serde_json::json!({})),
            None,
            None,
        ),
        Event::PlanCreated(PlanCreated {
            plan_id: "p1".into(),
            objective: "ship".into(),
            steps: vec![step("a"), step("b"), step("c")],
            execution_mode: ExecutionMode::AutoExecute,
            tool_call_id: "p".into(),
            parent_id: None,
            depth: 0,
        }),
        update(
            "pa",
            "run_subtask",
            Some("p"),
            ToolCallStatus::Start,
            Some(serde_json::json!({"title": "A", "instructions": "do a", "step_id": "a"})),
            None,
            None,
        ),
        update(
            "pa",
            "run_subtask",
            Some("p"),
            ToolCallStatus::End,
            None,
            Some("ok"),
            Some(false),
        ),
        update(
            "pb",
            "run_subtask",
            Some("p"),
            ToolCallStatus::Start,
            Some(serde_json::json!({"title": "B", "instructions": "do b", "step_id": "b"})),
            None,
            None,
        ),
    ];
    let mut live = TurnView::new();
    for event in &events {
        live.apply(event, 0.0);
    }
    let states = |view: &TurnView| -> Vec<StepState> {
        view.plan_steps("p")
            .into_iter()
            .map(|(_, state)| state)
            .collect()
    };
    assert_eq!(
        states(&live),
        [StepState::Done, StepState::Running, StepState::Waiting]
    );
    assert_eq!(live.cards["p"].label(), "ship");
    let rest = [
        update(
            "pb",
            "run_subtask",
            Some("p"),
            ToolCallStatus::End,
            None,
            Some("failed here"),
            Some(true),
        ),
        update(
            "pc",
            "run_subtask",
            Some("p"),
            ToolCallStatus::Start,
            Some(serde_json::json!({"title": "C", "instructions": "do c", "step_id": "c"})),
            None,
            None,
        ),
        update(
            "pc",
            "run_subtask",
            Some("p"),
            ToolCallStatus::End,
            None,
            Some("skipped: step `b` did not finish"),
            Some(true),
        ),
    ];
    for event in &rest {
        live.apply(event, 0.0);
    }
    assert_eq!(
        states(&live),
        [StepState::Done, StepState::Failed, StepState::Skipped]
    );
    live.apply(
        &update(
            "p",
            "create_plan",
            None,
            ToolCallStatus::End,
            None,
            Some("done"),
            Some(false),
        ),
        0.0,
    );
    assert!(
        !live.cards["p"].settled(),
        "a plan's card keeps its checklist drawn from the turn's plans"
    );

    // Stored the way the engine builds its tree, it reads the same.
    let all: Vec<Event> = events.iter().chain(&rest).cloned().collect();
    let mut timeline = cairn_protocol::TimelineBuilder::new();
    let mut plans = Vec::new();
    let mut nodes: Vec<cairn_protocol::ExecutionTreeNode> = Vec::new();
    for event in &all {
        timeline.observe(event);
        match event {
            Event::PlanCreated(created) => plans.push(TreePlan {
                created: created.clone(),
                review: None,
            }),
            Event::ToolCallUpdate(u) if u.status == ToolCallStatus::Start => {
                nodes.push(cairn_protocol::ExecutionTreeNode {
                    subject: None,
                    change: None,
                    result_bytes: None,
                    server: None,
                    id: u.tool_call_id.clone(),
                    parent_id: u.parent_id.clone(),
                    name: u.name.clone(),
                    kind: u.kind,
                    title: u.subtask_title(),
                    args_preview: u.args.as_ref().map(|a| a.to_string()),
                    result_preview: None,
                    is_error: None,
                    duration_ms: 1,
                    waited_ms: 0,
                    denied: false,
                    images: Vec::new(),
                })
            }
            Event::ToolCallUpdate(u) => {
                if let Some(node) = nodes.iter_mut().find(|n| n.id == u.tool_call_id) {
                    node.result_preview =
                        u.result.as_ref().and_then(|r| r.as_str()).map(Into::into);
                    node.is_error = u.is_error;
                }
            }
            _ => {}
        }
    }
    let tree = ExecutionTree::new(nodes)
        .with_timeline(timeline.entries().to_vec())
        .with_plans(plans);
    let stored = TurnView::from_stored("", Some(&tree), MessageStatus::Complete);
    assert_eq!(
        states(&stored),
        [StepState::Done, StepState::Failed, StepState::Skipped]
    );
    assert_eq!(stored.cards["p"].label(), "ship");
    assert_eq!(stored.draft, None, "it ran: no draft to offer");
}
