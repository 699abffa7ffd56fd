//! Builders for turns against the scripted model, and checks every test wants.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cairn_core::{Engine, EventSink, Limits, Toolbelt, TurnControl, TurnOutcome, TurnRequest};
use cairn_protocol::{
    ChatMessage, Event, PermissionMode, ToolCallStatus, ToolCategory, TurnStatus,
};
use cairn_providers::{ChatRequest, ModelClient, ModelStream, Sampling};
use cairn_testkit::ScriptedModel;
use cairn_tools::{Tool, ToolContext, ToolError, ToolOutput, Workspace};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Records every event, and forwards them for tests that watch a turn live.
#[derive(Clone)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    live: mpsc::UnboundedSender<Event>,
}

impl EventSink for Recorder {
    fn emit(&self, event: Event) {
        self.events.lock().unwrap().push(event.clone());
        let _ = self.live.send(event);
    }
}

pub struct Harness {
    pub model: ScriptedModel,
    /// Stands between the engine and the scripted model, when a test watches it.
    pub client: Option<Arc<dyn ModelClient>>,
    pub limits: Limits,
    pub mode: PermissionMode,
    pub tools: Vec<Arc<dyn Tool>>,
    pub workspace: Option<Arc<Workspace>>,
    pub history: Vec<ChatMessage>,
    pub sampling: Sampling,
    pub rules: cairn_core::RuleSet,
    pub agents: cairn_core::AgentSetup,
    pub plans: Option<Arc<dyn cairn_core::plan::PlanBook>>,
    /// The thread's server (named `home`, with as many slots as the turn allows) and
    /// the named ones profiles pick, when a test gives some.
    pub servers: Option<Arc<dyn cairn_core::ServerDirectory>>,
}

pub struct Run {
    pub outcome: TurnOutcome,
    pub events: Vec<Event>,
}

pub struct Running {
    pub control: TurnControl,
    pub live: mpsc::UnboundedReceiver<Event>,
    pub handle: tokio::task::JoinHandle<Run>,
}

impl Harness {
    pub fn new(model: &ScriptedModel) -> Self {
        Self {
            model: model.clone(),
            client: None,
            limits: Limits::default(),
            mode: PermissionMode::Auto,
            tools: Vec::new(),
            workspace: None,
            history: Vec::new(),
            sampling: Sampling::default(),
            rules: cairn_core::RuleSet::new(),
            agents: cairn_core::AgentSetup::default(),
            plans: None,
            servers: None,
        }
    }

    /// Profiles that name a server find it in `servers`.
    pub fn servers(mut self, servers: Arc<dyn cairn_core::ServerDirectory>) -> Self {
        self.servers = Some(servers);
        self
    }

    /// Keeps the thread's plans in `plans`, across the turns run with it.
    pub fn plans(mut self, plans: Arc<dyn cairn_core::plan::PlanBook>) -> Self {
        self.plans = Some(plans);
        self
    }

    /// Runs as `agents.current`, with `agents.roster` to reach.
    pub fn agents(mut self, agents: cairn_core::AgentSetup) -> Self {
        self.agents = agents;
        self
    }

    /// Runs against `client` instead of the scripted model itself.
    pub fn client(mut self, client: Arc<dyn ModelClient>) -> Self {
        self.client = Some(client);
        self
    }

    pub fn limits(mut self, change: impl FnOnce(&mut Limits)) -> Self {
        change(&mut self.limits);
        self
    }

    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    pub fn rule(mut self, list: cairn_core::RuleList, rule: &str) -> Self {
        self.rules = self.rules.clone().with(list, rule).unwrap();
        self
    }

    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    pub fn workspace(mut self, root: &std::path::Path) -> Self {
        self.workspace = Some(Arc::new(Workspace::open(root).unwrap()));
        self.tools.extend(cairn_tools::file_tools());
        self
    }

    pub fn request(&self, prompt: &str) -> TurnRequest {
        let mut history = self.history.clone();
        history.push(ChatMessage::user(prompt));
        TurnRequest {
            thread_id: "thread-1".into(),
            message_id: "msg-1".into(),
            model: "scripted".into(),
            history,
            mode: self.mode,
            tools: Toolbelt::new(self.tools.clone()).unwrap(),
            workspace: self.workspace.clone(),
            sampling: self.sampling,
            rules: Arc::new(self.rules.clone()),
            instructions: None,
            agents: self.agents.clone(),
            plans: self.plans.clone(),
            load_tools: Vec::new(),
        }
    }

    pub async fn run(&self, prompt: &str) -> Run {
        self.run_with(prompt, TurnControl::default()).await
    }

    pub async fn run_with(&self, prompt: &str, control: TurnControl) -> Run {
        let running = self.start_with(prompt, control);
        running.handle.await.unwrap()
    }

    pub fn start(&self, prompt: &str) -> Running {
        self.start_with(prompt, TurnControl::default())
    }

    pub fn start_with(&self, prompt: &str, control: TurnControl) -> Running {
        let client = self
            .client
            .clone()
            .unwrap_or_else(|| Arc::new(self.model.clone()));
        let mut engine = Engine::new(Arc::clone(&client), self.limits);
        if let Some(servers) = &self.servers {
            let home =
                cairn_core::ModelServer::new("home", client, self.limits.max_parallel_per_turn);
            engine = engine.with_servers(Arc::new(home), Arc::clone(servers));
        }
        let (tx, live) = mpsc::unbounded_channel();
        let recorder = Recorder {
            events: Arc::default(),
            live: tx,
        };
        let request = self.request(prompt);
        let turn_control = control.clone();
        let handle = tokio::spawn(async move {
            let outcome = engine
                .run_turn(request, turn_control, Arc::new(recorder.clone()))
                .await;
            let events = recorder.events.lock().unwrap().clone();
            Run { outcome, events }
        });
        Running {
            control,
            live,
            handle,
        }
    }
}

impl Running {
    /// Waits for the first event that matches.
    pub async fn wait_for(&mut self, matches: impl Fn(&Event) -> bool) -> Event {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), self.live.recv())
                .await
                .expect("timed out waiting for an event")
                .expect("the turn ended first");
            if matches(&event) {
                return event;
            }
        }
    }
}

impl Run {
    /// Fails with the turn's error unless it completed.
    pub fn assert_completed(&self) {
        assert_eq!(
            self.outcome.status,
            TurnStatus::Completed,
            "{:?}",
            self.outcome.error
        );
    }

    pub fn of_type(&self, kind: &str) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.type_name() == kind)
            .collect()
    }

    pub fn tool_ends(&self) -> Vec<(String, Value, bool)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::ToolCallUpdate(u) if u.status == ToolCallStatus::End => Some((
                    u.name.clone(),
                    u.result.clone().unwrap(),
                    u.is_error.unwrap(),
                )),
                _ => None,
            })
            .collect()
    }

    pub fn root_chunks(&self) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Chunk(c) if c.depth == 0 => Some(c.content.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Every tool call has exactly one result after it, and every result answers a call:
/// the history is always a valid next request.
pub fn assert_calls_paired(history: &[ChatMessage]) {
    for (index, message) in history.iter().enumerate() {
        for call in message.tool_calls() {
            let results = history[index + 1..]
                .iter()
                .filter(|m| matches!(m, ChatMessage::Tool { tool_call_id, .. } if *tool_call_id == call.id))
                .count();
            assert_eq!(
                results, 1,
                "call {} has {results} results in {history:#?}",
                call.id
            );
        }
        if let ChatMessage::Tool { tool_call_id, .. } = message {
            assert!(
                history[..index]
                    .iter()
                    .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id)),
                "result {tool_call_id} answers no earlier call"
            );
        }
    }
}

/// A configurable test tool: echoes its arguments, can wait, records concurrency
/// and whether it was cancelled mid-call.
#[derive(Clone)]
pub struct Probe {
    pub name: &'static str,
    pub category: ToolCategory,
    pub parallel_safe: bool,
    pub lock: Option<&'static str>,
    pub delay: Duration,
    pub hang: bool,
    pub running: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
    pub calls: Arc<AtomicUsize>,
    pub cancelled: Arc<AtomicUsize>,
    pub output: Option<String>,
    /// The argument a call being written shows as it grows.
    pub streams: Option<&'static str>,
}

impl Probe {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            category: ToolCategory::Read,
            parallel_safe: true,
            lock: None,
            delay: Duration::ZERO,
            hang: false,
            running: Arc::default(),
            peak: Arc::default(),
            calls: Arc::default(),
            cancelled: Arc::default(),
            output: None,
            streams: None,
        }
    }

    pub fn streams(mut self, argument: &'static str) -> Self {
        self.streams = Some(argument);
        self
    }

    pub fn category(mut self, category: ToolCategory) -> Self {
        self.category = category;
        self
    }

    pub fn exclusive(mut self) -> Self {
        self.parallel_safe = false;
        self
    }

    pub fn lock(mut self, lock: &'static str) -> Self {
        self.lock = Some(lock);
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }

    pub fn output(mut self, output: impl Into<String>) -> Self {
        self.output = Some(output.into());
        self
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

struct Running2 {
    probe: Probe,
    finished: bool,
}

impl Drop for Running2 {
    fn drop(&mut self) {
        self.probe.running.fetch_sub(1, Ordering::SeqCst);
        if !self.finished {
            self.probe.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        "a test tool"
    }

    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn parallel_safe(&self) -> bool {
        self.parallel_safe
    }

    fn streams(&self) -> Option<&'static str> {
        self.streams
    }

    fn exclusive_lock(&self) -> Option<&'static str> {
        self.lock
    }

    /// Like the real tools: a `path` argument is a path subject, a `command` one is
    /// split into its commands.
    fn subjects(&self, args: &Value) -> Vec<cairn_tools::Subject> {
        if let Some(path) = args.get("path").and_then(Value::as_str) {
            return vec![cairn_tools::Subject::Path(path.to_owned())];
        }
        match args.get("command").and_then(Value::as_str) {
            Some(line) => match cairn_tools::shell::split(line) {
                Some(parts) => parts
                    .into_iter()
                    .map(cairn_tools::Subject::Command)
                    .collect(),
                None => vec![cairn_tools::Subject::Unreadable(line.to_owned())],
            },
            None => Vec::new(),
        }
    }

    fn session_grants(&self, args: &Value) -> Vec<String> {
        match args
            .get("command")
            .and_then(Value::as_str)
            .and_then(cairn_tools::shell::split)
        {
            Some(parts) => parts
                .iter()
                .map(|part| {
                    format!(
                        "{}({}:*)",
                        self.name,
                        cairn_tools::shell::program_and_subcommand(part)
                    )
                })
                .collect(),
            None => vec![self.name.to_owned()],
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let mut guard = Running2 {
            probe: self.clone(),
            finished: false,
        };
        if self.hang {
            std::future::pending::<()>().await;
        }
        let delay = args
            .get("delay_ms")
            .and_then(Value::as_u64)
            .map_or(self.delay, Duration::from_millis);
        tokio::time::sleep(delay).await;
        guard.finished = true;
        if args.get("fail").is_some() {
            return Err(ToolError::Failed("probe failed as asked".into()));
        }
        Ok(ToolOutput::text(
            self.output
                .clone()
                .unwrap_or_else(|| format!("{} {}", self.name, args)),
        ))
    }
}

/// A model whose answers count as running work with a probe's counters while they
/// stream: the peak is then of model requests and tool executions together.
pub struct CountedModel {
    pub inner: ScriptedModel,
    pub running: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
}

impl CountedModel {
    pub fn sharing(inner: &ScriptedModel, probe: &Probe) -> Self {
        Self {
            inner: inner.clone(),
            running: probe.running.clone(),
            peak: probe.peak.clone(),
        }
    }
}

impl ModelClient for CountedModel {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let leaving = Leaving(self.running.clone());
        let inner = self.inner.stream_chat(request);
        Box::pin(futures_util::StreamExt::map(inner, move |event| {
            let _counted_until_dropped = &leaving;
            event
        }))
    }
}

/// Counts one running thing out when dropped.
struct Leaving(Arc<AtomicUsize>);

impl Drop for Leaving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
