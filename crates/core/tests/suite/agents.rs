//! Agent profiles in the engine: what a subtask's profile changes, and the router's
//! hand-over (`switch_agent`) within a turn and across the session's chain of turns.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cairn_core::agent::NamedTools;
use cairn_core::{
    Agent, AgentSetup, AgentSwitch, Engine, Handover, Limits, NextTurn, NoPersistence, Sessions,
    Toolbelt, TurnOutcome, TurnRequest,
};
use cairn_protocol::{ChatMessage, Event, PermissionMode, TurnStatus};
use cairn_providers::{ChatRequest, Sampling};
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;

use super::support::{Harness, Probe, assert_calls_paired};

fn profile(id: &str, tools: &[&str]) -> Agent {
    Agent {
        description: format!("the {id} profile"),
        instructions: format!("You are {id}."),
        tools: Arc::new(NamedTools(tools.iter().map(|t| (*t).to_owned()).collect())),
        ..Agent::plain(id)
    }
}

/// `auto` (all tools), `chat`, `reader` (reads only, its own model), `hidden`
/// (subtasks only), `solo` (not runnable).
fn roster(current: &str, switches_left: Option<u32>) -> AgentSetup {
    let agents: Vec<Arc<Agent>> = [
        Agent {
            role: Some(cairn_core::AgentRole::Router),
            ..Agent::plain("auto")
        },
        Agent::plain("chat"),
        Agent {
            model: Some("big-model".into()),
            temperature: Some(0.7),
            ..profile("reader", &["read", "run_subtask"])
        },
        Agent {
            hidden: true,
            ..profile("hidden", &["read"])
        },
        Agent {
            runnable: false,
            ..profile("solo", &["read"])
        },
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    AgentSetup {
        current: agents.iter().find(|a| a.id == current).cloned().unwrap(),
        roster: agents.into(),
        switches_left,
    }
}

fn tool_names(request: &ChatRequest) -> Vec<String> {
    request.tools.iter().map(|spec| spec.name.clone()).collect()
}

fn system_of(request: &ChatRequest) -> &str {
    request.messages[0].content()
}

#[tokio::test]
async fn a_subtask_runs_with_its_profiles_instructions_model_and_a_narrower_toolbelt() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "look", "instructions": "look around", "agent": "reader"}),
        ),
        ScriptedTurn::text("done"),
    ]);
    model.subtask(
        "look",
        [
            // The profile allows no `write`: the call is refused, not run.
            ScriptedTurn::call("write", json!({})),
            ScriptedTurn::text("looked"),
        ],
    );
    let write = Probe::new("write");
    let run = Harness::new(&model)
        .tool(Probe::new("read"))
        .tool(write.clone())
        .agents(roster("chat", None))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(write.calls(), 0);
    let requests = model.requests();
    let root = &requests[0];
    assert_eq!(root.model, "scripted");
    // The root lists the profiles a subtask may run as, one line each; not `solo`.
    let system = system_of(root);
    assert!(
        system.contains("- reader: the reader profile\n"),
        "{system}"
    );
    assert!(
        system.contains("- hidden: the hidden profile\n"),
        "{system}"
    );
    assert!(!system.contains("- solo"), "{system}");
    let child = &requests[1];
    assert_eq!(child.origin.depth, 1);
    assert_eq!(child.model, "big-model");
    assert_eq!(child.sampling.temperature, Some(0.7));
    assert!(system_of(child).contains("You are reader."));
    let tools = tool_names(child);
    assert!(tools.contains(&"read".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"write".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"switch_agent".to_owned()), "{tools:?}");
    let (_, result, is_error) = run
        .tool_ends()
        .into_iter()
        .find(|(name, ..)| name == "write")
        .unwrap();
    assert!(is_error && result.as_str().unwrap().contains("no tool `write`"));
}

#[tokio::test]
async fn a_profile_never_gives_a_subtask_a_tool_its_parent_lacks() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "t", "instructions": "x", "agent": "reader"}),
        ),
        ScriptedTurn::text("done"),
    ]);
    model.subtask("t", [ScriptedTurn::text("ok")]);
    // The parent (`solo`) has only `read`; `reader` would add `run_subtask`.
    let run = Harness::new(&model)
        .tool(Probe::new("read"))
        .tool(Probe::new("write"))
        .agents(roster("solo", None))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let requests = model.requests();
    assert_eq!(tool_names(&requests[0]), ["read"], "solo cannot spawn");
    // It could not call run_subtask at all: the call was refused at the root.
    assert_eq!(requests.len(), 2);
    let ends = run.tool_ends();
    assert!(ends[0].2, "{ends:?}");
}

#[tokio::test]
async fn an_unknown_or_unrunnable_profile_is_a_tool_error_listing_the_runnable_ones() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool(
                "run_subtask",
                json!({"title": "a", "instructions": "x", "agent": "ghost"}),
            )
            .tool(
                "run_subtask",
                json!({"title": "b", "instructions": "x", "agent": "solo"}),
            ),
        ScriptedTurn::text("fine"),
    ]);
    let run = Harness::new(&model)
        .agents(roster("chat", None))
        .run("go")
        .await;
    let ends = run.tool_ends();
    for (id, (_, result, is_error)) in ["ghost", "solo"].iter().zip(&ends) {
        assert!(is_error);
        let text = result.as_str().unwrap();
        assert!(text.contains(&format!("no agent `{id}`")), "{text}");
        assert!(
            text.ends_with("Choose one of: auto, chat, reader, hidden"),
            "{text}"
        );
    }
    assert_eq!(model.requests().len(), 2, "no subtask ran");
}

#[tokio::test]
async fn the_root_profile_sets_the_prompt_the_tools_and_the_model() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("hi")]);
    let mut setup = roster("reader", None);
    setup.current = Arc::new(Agent {
        hidden: false,
        ..(*setup.current).clone()
    });
    Harness::new(&model)
        .tool(Probe::new("read"))
        .tool(Probe::new("write"))
        .agents(setup)
        .run("go")
        .await;
    let request = &model.requests()[0];
    assert_eq!(request.model, "big-model");
    assert_eq!(tool_names(request), ["read", "run_subtask"]);
    let system = system_of(request);
    assert!(system.contains("You are reader."), "{system}");
}

#[tokio::test]
async fn switch_agent_is_offered_only_at_the_root_of_a_routing_thread() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("run_subtask", json!({"title": "sub", "instructions": "x"})),
        ScriptedTurn::text("done"),
    ]);
    model.subtask(
        "sub",
        [
            ScriptedTurn::call("switch_agent", json!({"agent": "chat"})),
            ScriptedTurn::text("did it myself"),
        ],
    );
    let run = Harness::new(&model)
        .agents(roster("auto", Some(3)))
        .run("go")
        .await;
    let requests = model.requests();
    assert!(tool_names(&requests[0]).contains(&"switch_agent".to_owned()));
    let system = system_of(&requests[0]);
    // Every visible profile but the current one, one line each.
    assert!(
        system.contains(
            "with switch_agent:\n- chat\n- reader: the reader profile\n- solo: the solo profile\n"
        ),
        "{system}"
    );
    assert!(!tool_names(&requests[1]).contains(&"switch_agent".to_owned()));
    let (_, result, is_error) = &run.tool_ends()[0];
    assert!(is_error);
    assert!(
        result.as_str().unwrap().contains("only available"),
        "{result}"
    );
    assert!(run.outcome.switch.is_none());

    // A thread that does not route has no such tool at all.
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("switch_agent", json!({"agent": "reader"})),
        ScriptedTurn::text("ok"),
    ]);
    let run = Harness::new(&model)
        .agents(roster("chat", None))
        .run("go")
        .await;
    assert!(!tool_names(&model.requests()[0]).contains(&"switch_agent".to_owned()));
    assert!(run.tool_ends()[0].2);
    assert_eq!(run.outcome.text, "ok");
    assert!(run.outcome.switch.is_none());
}

#[tokio::test]
async fn a_valid_switch_ends_the_turn_after_its_round() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .say("Routing.")
            .tool("read", json!({}))
            .tool(
                "switch_agent",
                json!({"agent": "reader", "reason": "it reads", "follow_up": "Read it."}),
            ),
        ScriptedTurn::text("never asked"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("read"))
        .agents(roster("auto", Some(3)))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(
        run.outcome.switch,
        Some(AgentSwitch {
            from: "auto".into(),
            to: "reader".into(),
            reason: Some("it reads".into()),
            follow_up: "Read it.".into(),
        })
    );
    assert_eq!(model.remaining(), 1, "no model call after the switch");
    assert_eq!(run.outcome.calls[0].operation, "router");
    assert_calls_paired(&run.outcome.messages);
    assert_eq!(run.tool_ends().len(), 2);
}

#[tokio::test]
async fn bad_targets_and_the_limit_are_tool_errors_the_model_recovers_from() {
    for (setup, args, expected) in [
        (
            roster("auto", Some(3)),
            json!({"agent": "hidden"}),
            "no agent `hidden`",
        ),
        (
            roster("auto", Some(3)),
            json!({"agent": "auto"}),
            "already are `auto`",
        ),
        (
            roster("auto", Some(3)),
            json!({"agent": "nobody"}),
            "Choose one of: chat, reader, solo",
        ),
        (
            roster("auto", Some(0)),
            json!({"agent": "chat"}),
            "limit of 3 hand-overs",
        ),
    ] {
        let model = ScriptedModel::new();
        model.root([
            ScriptedTurn::call("switch_agent", args.clone()),
            ScriptedTurn::text("I will do it myself"),
        ]);
        let run = Harness::new(&model).agents(setup).run("go").await;
        let (_, result, is_error) = &run.tool_ends()[0];
        assert!(is_error, "{args}");
        assert!(
            result.as_str().unwrap().contains(expected),
            "{args}: {result}"
        );
        assert!(run.outcome.switch.is_none());
        assert_eq!(run.outcome.text, "I will do it myself");
    }
}

/// The runtime's part, kept in memory: each hand-over starts the thread's next turn
/// as the target, with one switch fewer left.
struct Chain {
    model: ScriptedModel,
    next: Mutex<u32>,
    asked: Mutex<Vec<AgentSwitch>>,
}

#[async_trait]
impl Handover for Chain {
    async fn next_turn(
        &self,
        outcome: &TurnOutcome,
        switch: &AgentSwitch,
    ) -> Result<NextTurn, cairn_core::PortError> {
        self.asked.lock().unwrap().push(switch.clone());
        let n = {
            let mut next = self.next.lock().unwrap();
            *next += 1;
            *next
        };
        let left = 3 - n;
        let mut setup = roster(&switch.to, Some(left));
        setup.current = setup.find(&switch.to).cloned().unwrap();
        let mut history = vec![ChatMessage::user("go")];
        history.extend(outcome.messages.iter().cloned());
        history.push(ChatMessage::user(&switch.follow_up));
        Ok(NextTurn {
            engine: Engine::new(Arc::new(self.model.clone()), Limits::default()),
            request: TurnRequest {
                message_id: format!("m{}", n + 1),
                history,
                agents: setup,
                ..request("m1")
            },
            persistence: Arc::new(NoPersistence),
        })
    }
}

fn request(message_id: &str) -> TurnRequest {
    TurnRequest {
        thread_id: "t".into(),
        message_id: message_id.into(),
        model: "m".into(),
        history: vec![ChatMessage::user("go")],
        mode: PermissionMode::Auto,
        tools: Toolbelt::new([]).unwrap(),
        workspace: None,
        sampling: Sampling::default(),
        rules: Default::default(),
        instructions: None,
        agents: roster("auto", Some(3)),
        plans: None,
        load_tools: Vec::new(),
    }
}

/// Starts thread `t` as `auto`, with [`Chain`] preparing each hand-over.
fn start_chain(
    sessions: &Arc<Sessions>,
    model: &ScriptedModel,
) -> (Arc<Chain>, Arc<cairn_core::LiveTurn>) {
    let chain = Arc::new(Chain {
        model: model.clone(),
        next: Mutex::new(0),
        asked: Mutex::default(),
    });
    let live = sessions.claim("t").unwrap().start_with(
        Engine::new(Arc::new(model.clone()), Limits::default()),
        request("m1"),
        Default::default(),
        Arc::new(NoPersistence),
        Some(chain.clone()),
    );
    (chain, live)
}

async fn run_chain(model: &ScriptedModel) -> (Vec<Event>, Arc<Chain>, Arc<cairn_core::LiveTurn>) {
    let sessions = Sessions::new();
    let (chain, live) = start_chain(&sessions, model);
    let (_, mut receiver) = live.attach();
    let mut events = Vec::new();
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(10), receiver.recv()).await
    {
        let done = matches!(event, Event::Done(_));
        events.push(event);
        if done {
            break;
        }
    }
    (events, chain, live)
}

#[tokio::test]
async fn a_switch_continues_the_thread_as_the_target_with_one_done_at_the_end() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "switch_agent",
            json!({"agent": "reader", "reason": "reading", "follow_up": "Read the notes."}),
        ),
        ScriptedTurn::text("The notes say hi."),
    ]);
    let (events, chain, live) = run_chain(&model).await;
    let switched: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::AgentSwitched(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(switched.len(), 1);
    assert_eq!(
        (switched[0].from.as_str(), switched[0].to.as_str()),
        ("auto", "reader")
    );
    assert_eq!(switched[0].reason.as_deref(), Some("reading"));
    assert_eq!(switched[0].follow_up, "Read the notes.");
    assert_eq!(switched[0].message_id, "m2");
    let dones: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Done(done) => Some(done.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(dones.len(), 1);
    assert_eq!(dones[0].message_id, "m2");
    assert_eq!(dones[0].status, TurnStatus::Completed);
    assert_eq!(live.message_id(), "m2");
    // The second turn ran as the target: its model, its prompt, the follow-up last.
    let second = &model.requests()[1];
    assert_eq!(second.model, "big-model");
    assert!(system_of(second).contains("You are reader."));
    assert_eq!(second.messages.last().unwrap().content(), "Read the notes.");
    assert_eq!(chain.asked.lock().unwrap().len(), 1);
    let outcome = live.finished().await.unwrap();
    assert_eq!(outcome.text, "The notes say hi.");
    // A front end that comes late replays the last answer only: the ones before it
    // and the hand-over are in the store.
    let (replayed, _) = live.attach();
    assert!(
        replayed
            .iter()
            .all(|event| !matches!(event, Event::AgentSwitched(_) | Event::ToolCallUpdate(_))),
        "{replayed:?}"
    );
    assert!(
        replayed
            .iter()
            .any(|event| matches!(event, Event::Chunk(c) if c.content == "The notes say hi."))
    );
    assert!(matches!(replayed.last(), Some(Event::Done(_))));
}

#[tokio::test]
async fn the_fourth_switch_in_a_row_is_refused_and_the_agent_carries_on() {
    let model = ScriptedModel::new();
    let hop = |to: &str| ScriptedTurn::call("switch_agent", json!({"agent": to}));
    model.root([
        hop("chat"),
        hop("auto"),
        hop("chat"),
        hop("auto"),
        ScriptedTurn::text("doing it myself"),
    ]);
    let (events, chain, _) = run_chain(&model).await;
    let hops = events
        .iter()
        .filter(|event| matches!(event, Event::AgentSwitched(_)))
        .count();
    assert_eq!(hops, 3);
    assert_eq!(chain.asked.lock().unwrap().len(), 3);
    let refused = events.iter().any(|event| match event {
        Event::ToolCallUpdate(u) => u
            .result
            .as_ref()
            .and_then(|r| r.as_str())
            .is_some_and(|r| r.contains("limit of 3 hand-overs")),
        _ => false,
    });
    assert!(refused);
    let Some(Event::Done(done)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(done.message_id, "m4");
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn stop_cancels_the_turn_after_a_switch_and_no_other_starts() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("switch_agent", json!({"agent": "chat"})),
        ScriptedTurn::new().say("working").hang(),
        ScriptedTurn::call("switch_agent", json!({"agent": "auto"})),
    ]);
    let sessions = Sessions::new();
    let (chain, live) = start_chain(&sessions, &model);
    let (_, mut receiver) = live.attach();
    // Stop once the second turn (as `chat`) is writing.
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(&event, Event::Chunk(chunk) if chunk.content == "working") {
            break;
        }
    }
    sessions.stop("t").unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), live.finished())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(outcome.message_id, "m2");
    assert_eq!(chain.asked.lock().unwrap().len(), 1);
    assert_eq!(model.remaining(), 1, "no third turn");
    assert!(sessions.running().is_empty());
}

/// The scripted model, as a server that refused tools for it.
struct Toolless(ScriptedModel);

impl cairn_providers::ModelClient for Toolless {
    fn stream_chat(&self, request: ChatRequest) -> cairn_providers::ModelStream {
        self.0.stream_chat(request)
    }

    fn can_call_tools(&self, _model: &str) -> bool {
        false
    }
}

#[tokio::test]
async fn a_model_without_tools_is_told_so_once_whether_its_server_or_its_profile_says_so() {
    let no_tools = cairn_core::prompt::NO_TOOLS;
    // The server cannot give this model tools.
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("From memory.")]);
    Harness::new(&model)
        .client(Arc::new(Toolless(model.clone())))
        .tool(Probe::new("read"))
        .run("go")
        .await;
    // The profile gives none.
    model.root([ScriptedTurn::text("From memory.")]);
    Harness::new(&model)
        .tool(Probe::new("read"))
        .agents(AgentSetup {
            current: Arc::new(profile("bare", &[])),
            ..AgentSetup::default()
        })
        .run("go")
        .await;
    for request in model.requests() {
        assert!(request.tools.is_empty());
        let system = system_of(&request);
        assert_eq!(system.matches(no_tools).count(), 1, "{system}");
        assert!(!system.contains("Tools (category)"), "{system}");
    }
    assert_eq!(model.requests().len(), 2);
}
