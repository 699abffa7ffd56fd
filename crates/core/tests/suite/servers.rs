//! Profiles on other model servers: a subtask or a hand-over runs where its profile's
//! `server` says, never sends a server more requests at once than its slots, and a
//! server that is missing or fails takes down only the work sent to it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cairn_core::servers::{ModelServer, ProbeFuture, ServerDirectory, ServerFuture};
use cairn_core::{Agent, AgentSetup, PortError};
use cairn_protocol::{Event, ServerState, TurnStatus};
use cairn_providers::{ChatRequest, ModelClient, ModelStream};
use cairn_testkit::{ScriptedModel, ScriptedTurn, server_error};
use futures_util::StreamExt;
use serde_json::json;
use tokio::sync::Semaphore;

use super::support::{Harness, assert_calls_paired};

/// Servers by name; those `down` do not answer when probed.
struct Named {
    servers: HashMap<String, Arc<ModelServer>>,
    down: Vec<String>,
}

fn named(servers: impl IntoIterator<Item = Arc<ModelServer>>, down: &[&str]) -> Arc<Named> {
    Arc::new(Named {
        servers: servers
            .into_iter()
            .map(|server| (server.name.clone(), server))
            .collect(),
        down: down.iter().map(|name| (*name).to_owned()).collect(),
    })
}

impl ServerDirectory for Named {
    fn server<'a>(&'a self, name: &'a str) -> ServerFuture<'a> {
        let found = self
            .servers
            .get(name)
            .cloned()
            .ok_or_else(|| PortError::new(format!("there is no server named `{name}`")));
        Box::pin(std::future::ready(found))
    }

    fn probe<'a>(&'a self, server: &'a ModelServer) -> ProbeFuture<'a> {
        let answer = if self.down.contains(&server.name) {
            Err(PortError::new("connection refused"))
        } else {
            Ok(())
        };
        Box::pin(std::future::ready(answer))
    }
}

/// A scripted server that counts the requests it has in flight and answers none
/// until the test lets it (one permit per request).
struct Gated {
    inner: ScriptedModel,
    gate: Arc<Semaphore>,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Gated {
    fn new(inner: &ScriptedModel) -> Self {
        Self {
            inner: inner.clone(),
            gate: Arc::new(Semaphore::new(0)),
            running: Arc::default(),
            peak: Arc::default(),
        }
    }
}

/// Counts one request out when its stream is dropped.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ModelClient for Gated {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let in_flight = InFlight(Arc::clone(&self.running));
        let gate = Arc::clone(&self.gate);
        let inner = self.inner.stream_chat(request);
        let opened = futures_util::stream::once(async move {
            if let Ok(permit) = gate.acquire_owned().await {
                permit.forget();
            }
            inner
        })
        .flatten();
        Box::pin(opened.map(move |event| {
            let _counted_until_dropped = &in_flight;
            event
        }))
    }
}

/// `chat` answers the user; `remote` runs on the server `gpu`; `lost` names a server
/// nobody named; `auto` routes.
fn setup(current: &str, switches_left: Option<u32>) -> AgentSetup {
    let on = |id: &str, server: &str| Agent {
        server: Some(server.into()),
        model: Some("big-model".into()),
        description: format!("the {id} profile"),
        ..Agent::plain(id)
    };
    let agents: Vec<Arc<Agent>> = [
        Agent::plain("chat"),
        Agent {
            role: Some(cairn_core::AgentRole::Router),
            ..Agent::plain("auto")
        },
        on("remote", "gpu"),
        on("lost", "nowhere"),
        on("tiny", "pi"),
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

fn on_remote(title: &str) -> serde_json::Value {
    json!({"title": title, "instructions": format!("do {title}"), "agent": "remote"})
}

fn server_states(events: &[Event]) -> Vec<&ServerState> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ServerState(state) => Some(state),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn subtasks_on_another_server_go_there_and_wait_for_its_one_slot() {
    let home = ScriptedModel::new();
    let titles = ["a", "b", "c"];
    let fan_out = titles.iter().fold(ScriptedTurn::new(), |turn, title| {
        turn.tool("run_subtask", on_remote(title))
    });
    home.root([fan_out, ScriptedTurn::text("all three done")]);
    let remote = ScriptedModel::new();
    for title in titles {
        remote.subtask(title, [ScriptedTurn::text(format!("{title} done"))]);
    }
    let gpu = Arc::new(Gated::new(&remote));
    let server = Arc::new(ModelServer::new("gpu", gpu.clone(), 1));
    let harness = Harness::new(&home)
        .agents(setup("chat", None))
        .servers(named([server], &[]));
    let mut running = harness.start("fan out");
    // One subtask holds the slot; the other two say they wait for it, each under its
    // own card, before the server answers anything.
    let mut waiting = Vec::new();
    while waiting.len() < 2 {
        if let Event::ServerState(state) = running
            .wait_for(|event| matches!(event, Event::ServerState(state) if state.waiting))
            .await
        {
            waiting.push(state);
        }
    }
    assert_eq!(gpu.peak.load(Ordering::SeqCst), 1);
    gpu.gate.add_permits(titles.len());
    let run = running.handle.await.unwrap();

    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "all three done");
    assert_eq!((home.remaining(), remote.remaining()), (0, 0));
    assert_calls_paired(&run.outcome.messages);
    assert_eq!(
        gpu.peak.load(Ordering::SeqCst),
        1,
        "never more requests at once than the server's one slot"
    );
    let cards: Vec<_> = run.outcome.tree.children(None).collect();
    assert_eq!(cards.len(), 3);
    for state in &waiting {
        assert_eq!(state.server, "gpu");
        assert_eq!(state.depth, 1);
        assert!(
            cards
                .iter()
                .any(|card| Some(&card.id) == state.parent_id.as_ref())
        );
    }
    assert_ne!(waiting[0].parent_id, waiting[1].parent_id);
    // Every wait that started ended.
    let states = server_states(&run.events);
    let (started, ended): (Vec<&&ServerState>, Vec<_>) = states
        .iter()
        .filter(|state| state.depth == 1)
        .partition(|state| state.waiting);
    assert_eq!(started.len(), 2);
    // Each card said where it runs when it opened, and once per wait that ended.
    assert_eq!(ended.len(), 3 + 2);
    // The cards name their server, as the stored tree keeps them.
    for card in &cards {
        assert_eq!(card.server.as_deref(), Some("gpu"), "{card:?}");
    }
    assert_eq!(run.outcome.tree.server, None, "the root answered at home");
    // The usage log names the server of every call.
    for call in &run.outcome.calls {
        let expected = if call.depth == 0 { "home" } else { "gpu" };
        assert_eq!(call.server.as_deref(), Some(expected), "{call:?}");
        assert_eq!(
            call.model,
            if call.depth == 0 {
                "scripted"
            } else {
                "big-model"
            }
        );
    }
}

#[tokio::test]
async fn a_server_nobody_named_is_a_tool_error_and_the_turn_goes_on() {
    let home = ScriptedModel::new();
    home.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "far", "instructions": "go far", "agent": "lost"}),
        ),
        ScriptedTurn::text("carried on without it"),
    ]);
    let run = Harness::new(&home)
        .agents(setup("chat", None))
        .servers(named([], &[]))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "carried on without it");
    let (_, result, is_error) = &run.tool_ends()[0];
    assert!(is_error);
    let result = result.as_str().unwrap();
    assert!(
        result.contains("the agent `lost` runs on the server `nowhere`")
            && result.contains("no server named `nowhere`"),
        "{result}"
    );
}

#[tokio::test]
async fn a_server_that_fails_mid_subtask_fails_that_subtask_alone() {
    let home = ScriptedModel::new();
    home.root([
        ScriptedTurn::new()
            .tool("run_subtask", on_remote("far"))
            .tool(
                "run_subtask",
                json!({"title": "near", "instructions": "stay home"}),
            ),
        ScriptedTurn::text("went on with what came back"),
    ]);
    home.subtask("near", [ScriptedTurn::text("near done")]);
    let remote = ScriptedModel::new();
    remote.subtask(
        "far",
        [ScriptedTurn::new()
            .say("Starting")
            .fail(server_error("connection reset by peer"))],
    );
    let server = Arc::new(ModelServer::new("gpu", Arc::new(remote.clone()), 4));
    let run = Harness::new(&home)
        .agents(setup("chat", None))
        .servers(named([server], &[]))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.error, None);
    assert_eq!(run.outcome.text, "went on with what came back");
    let ends = run.tool_ends();
    assert_eq!(ends.len(), 2);
    let failed: Vec<_> = ends.iter().filter(|(_, _, is_error)| *is_error).collect();
    assert_eq!(failed.len(), 1, "{ends:?}");
    let reason = failed[0].1.as_str().unwrap();
    assert!(
        reason.contains("the subtask `far` could not finish")
            && reason.contains("runs on the server `gpu`, which failed")
            && reason.contains("connection reset by peer"),
        "{reason}"
    );
    assert!(
        ends.iter()
            .any(|(_, result, is_error)| !is_error && result == "near done"),
        "{ends:?}"
    );
    // The failed call is in the usage log, under its server.
    let logged = run
        .outcome
        .calls
        .iter()
        .find(|call| call.error.is_some())
        .expect("the failed call is logged");
    assert_eq!(logged.server.as_deref(), Some("gpu"));
}

#[tokio::test]
async fn a_hand_over_to_a_machine_that_does_not_answer_is_refused() {
    for (down, handed_over) in [(&["gpu"][..], false), (&[][..], true)] {
        let home = ScriptedModel::new();
        home.root([
            ScriptedTurn::call("switch_agent", json!({"agent": "remote"})),
            ScriptedTurn::text("I will answer myself"),
        ]);
        let remote = ScriptedModel::new();
        let server = Arc::new(ModelServer::new("gpu", Arc::new(remote), 1));
        let run = Harness::new(&home)
            .agents(setup("auto", Some(3)))
            .servers(named([server], down))
            .run("go")
            .await;
        assert_eq!(run.outcome.status, TurnStatus::Completed);
        assert_eq!(run.outcome.switch.is_some(), handed_over);
        let (_, result, is_error) = &run.tool_ends()[0];
        assert_eq!(*is_error, !handed_over, "{result}");
        if !handed_over {
            let result = result.as_str().unwrap();
            assert!(
                result.contains("the server `gpu`, which cannot be reached: connection refused"),
                "{result}"
            );
            assert_eq!(run.outcome.text, "I will answer myself");
        }
    }
}

#[tokio::test]
async fn a_thread_handed_to_a_profile_on_another_server_answers_from_there() {
    let home = ScriptedModel::new();
    let remote = ScriptedModel::new();
    remote.root([ScriptedTurn::text("from the GPU box")]);
    let server = Arc::new(ModelServer::new("gpu", Arc::new(remote.clone()), 1));
    let run = Harness::new(&home)
        .agents(setup("remote", None))
        .servers(named([server], &[]))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "from the GPU box");
    assert_eq!(remote.requests()[0].model, "big-model");
    assert!(
        home.requests().is_empty(),
        "the thread's own server was not asked"
    );
    assert_eq!(run.outcome.tree.server.as_deref(), Some("gpu"));
    assert_eq!(run.outcome.calls[0].server.as_deref(), Some("gpu"));
    let states = server_states(&run.events);
    assert_eq!(states[0].parent_id, None);
    assert_eq!(states[0].server, "gpu");

    // A thread whose profile names a server nobody named fails at once, saying so.
    let run = Harness::new(&home)
        .agents(setup("lost", None))
        .servers(named([], &[]))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Failed);
    let error = run.outcome.error.unwrap().message;
    assert!(error.contains("runs on the server `nowhere`"), "{error}");
    assert!(home.requests().is_empty());
}

#[tokio::test]
async fn a_subtask_on_a_server_with_another_window_fits_that_window() {
    let home = ScriptedModel::new().with_context_window(32_768);
    home.root([
        ScriptedTurn::call("run_subtask", on_remote("small")),
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "tiny", "instructions": "do tiny", "agent": "tiny"}),
        ),
        ScriptedTurn::text("carried on"),
    ]);
    let small = ScriptedModel::new().with_context_window(2048);
    small.subtask("small", [ScriptedTurn::text("small done")]);
    let tiny = ScriptedModel::new().with_context_window(512);
    let servers = named(
        [
            Arc::new(ModelServer::new("gpu", Arc::new(small.clone()), 1)),
            Arc::new(ModelServer::new("pi", Arc::new(tiny.clone()), 1)),
        ],
        &[],
    );
    let run = Harness::new(&home)
        .agents(setup("chat", None))
        .servers(servers)
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "carried on");

    // Each request keeps room for its answer in its own server's window: a quarter
    // of it (at most 8192).
    let answer_room = |model: &ScriptedModel| -> Vec<Option<u32>> {
        model
            .requests()
            .iter()
            .map(|request| request.sampling.max_tokens)
            .collect()
    };
    assert_eq!(answer_room(&home), [Some(8192); 3]);
    assert_eq!(answer_room(&small), [Some(512)]);
    // A window too small to work in fails that subtask alone, before it asks.
    assert!(tiny.requests().is_empty());
    let ends = run.tool_ends();
    assert!(!ends[0].2, "{:?}", ends[0]);
    let (_, result, is_error) = &ends[1];
    let result = result.as_str().unwrap();
    assert!(
        *is_error && result.contains("cannot run on `pi`") && result.contains("512 tokens"),
        "{result}"
    );
}
