//! A deterministic model: each request takes the next scripted turn of its lane (the
//! root, a depth, or a subtask by title). Tests and benchmarks use it in process; it
//! goes through the same [`ModelClient`] interface as the real clients.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cairn_protocol::ToolCall;
use futures_util::StreamExt;
use futures_util::stream;
use tokio::sync::Barrier;

use cairn_providers::{
    ChatRequest, ContextFuture, ContextWindow, FinishReason, ModelClient, ModelEvent, ModelStream,
    ProviderError, TokenUsage,
};

/// How the scripted model is named in its errors.
pub const SERVER: &str = "the scripted model";

/// A failure as a model server reports one mid-answer, for [`ScriptedTurn::fail`].
pub fn server_error(message: &str) -> ProviderError {
    ProviderError::Server {
        server: SERVER.to_owned(),
        message: message.to_owned(),
    }
}

/// Which requests a scripted turn answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Requests from the subtask with this title (checked first).
    Subtask(String),
    /// Requests from any level at this depth (0 is the root).
    Depth(u32),
}

impl Lane {
    pub fn root() -> Self {
        Self::Depth(0)
    }
}

#[derive(Debug, Clone)]
enum Step {
    Text(String),
    Reasoning(String),
    Call(ToolCall),
    Draft {
        slot: usize,
        id: String,
        name: String,
        piece: String,
    },
    Usage(TokenUsage),
    Delay(Duration),
    Barrier(Arc<Barrier>),
    Fail(ProviderError),
    Reconnect(u32),
    Hang,
}

/// One scripted model answer, played step by step as a stream.
#[derive(Debug, Clone, Default)]
pub struct ScriptedTurn {
    steps: Vec<Step>,
    /// Ends as the server stopped it at its length limit.
    cut: bool,
}

impl ScriptedTurn {
    pub fn new() -> Self {
        Self::default()
    }

    /// A turn that answers `text` and calls nothing.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().say(text)
    }

    /// A turn that calls one tool with the given arguments.
    pub fn call(name: &str, args: serde_json::Value) -> Self {
        Self::new().tool(name, args)
    }

    pub fn say(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Text(text.into()));
        self
    }

    pub fn think(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Reasoning(text.into()));
        self
    }

    pub fn tool(self, name: &str, args: serde_json::Value) -> Self {
        self.tool_raw(name, &args.to_string())
    }

    /// A call whose arguments are exactly `raw`, valid JSON or not.
    pub fn tool_raw(mut self, name: &str, raw: &str) -> Self {
        self.steps.push(Step::Call(ToolCall {
            id: String::new(),
            name: name.to_owned(),
            arguments: raw.to_owned(),
            written: None,
        }));
        self
    }

    /// A call the model wrote as text, as `written`, which the server's parser turned
    /// into a call.
    pub fn tool_written(mut self, name: &str, args: serde_json::Value, written: &str) -> Self {
        self.steps.push(Step::Call(ToolCall {
            id: String::new(),
            name: name.to_owned(),
            arguments: args.to_string(),
            written: Some(written.to_owned()),
        }));
        self
    }

    /// A call with a model-chosen id (the engine keeps unique ids as they are).
    pub fn tool_with_id(mut self, id: &str, name: &str, args: serde_json::Value) -> Self {
        self.steps.push(Step::Call(ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: args.to_string(),
            written: None,
        }));
        self
    }

    /// A piece of the call at `slot` as the model writes it, before the whole call
    /// (which a later [`ScriptedTurn::tool_with_id`] gives).
    pub fn draft(mut self, slot: usize, id: &str, name: &str, piece: &str) -> Self {
        self.steps.push(Step::Draft {
            slot,
            id: id.to_owned(),
            name: name.to_owned(),
            piece: piece.to_owned(),
        });
        self
    }

    pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.steps.push(Step::Usage(TokenUsage {
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens: 0,
        }));
        self
    }

    /// Waits before the next step (in tokio time, so paused-clock tests are exact).
    pub fn delay(mut self, duration: Duration) -> Self {
        self.steps.push(Step::Delay(duration));
        self
    }

    /// Waits until every party of `barrier` has arrived: proves concurrency, since
    /// sequential callers would never all arrive.
    pub fn barrier(mut self, barrier: Arc<Barrier>) -> Self {
        self.steps.push(Step::Barrier(barrier));
        self
    }

    pub fn fail(mut self, error: ProviderError) -> Self {
        self.steps.push(Step::Fail(error));
        self
    }

    /// The server said it was busy and the request is being sent again.
    pub fn reconnect(mut self, attempt: u32) -> Self {
        self.steps.push(Step::Reconnect(attempt));
        self
    }

    /// Never finishes: the stream stays open until the request is dropped.
    pub fn hang(mut self) -> Self {
        self.steps.push(Step::Hang);
        self
    }

    /// Ends as a server ends an answer it stopped at its length limit.
    pub fn cut_at_length(mut self) -> Self {
        self.cut = true;
        self
    }

    fn has_calls(&self) -> bool {
        self.steps.iter().any(|step| matches!(step, Step::Call(_)))
    }
}

type Responder = dyn Fn(&ChatRequest) -> ScriptedTurn + Send + Sync;

#[derive(Default)]
struct Script {
    lanes: HashMap<Lane, VecDeque<ScriptedTurn>>,
    requests: Vec<ChatRequest>,
}

/// The scripted model. Clones share the script and the request log.
#[derive(Clone, Default)]
pub struct ScriptedModel {
    script: Arc<Mutex<Script>>,
    responder: Option<Arc<Responder>>,
    record: bool,
    /// What it reports as its context window: none, like a hosted API, by default.
    window: Option<ContextWindow>,
    /// Its parameter count, where a test has it say one (as llama.cpp's server does).
    params: Option<u64>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel").finish_non_exhaustive()
    }
}

impl ScriptedModel {
    pub fn new() -> Self {
        Self {
            record: true,
            ..Self::default()
        }
    }

    /// A model that computes each answer from the request; lanes, if any, come first.
    /// Requests are not recorded, so long benchmark runs stay flat in memory.
    pub fn from_fn(respond: impl Fn(&ChatRequest) -> ScriptedTurn + Send + Sync + 'static) -> Self {
        Self {
            responder: Some(Arc::new(respond)),
            ..Self::default()
        }
    }

    /// Records every request, for a test that checks them (a model made with
    /// [`ScriptedModel::from_fn`] does not by default).
    pub fn recording(mut self) -> Self {
        self.record = true;
        self
    }

    /// Reports a context window of `tokens`, as a local server would.
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.window = Some(ContextWindow::new(tokens, "the scripted model"));
        self
    }

    /// Reports `params` parameters: at most a few billion, and the engine treats it as
    /// a small model.
    pub fn with_params(mut self, params: u64) -> Self {
        self.params = Some(params);
        self
    }

    /// Appends turns to a lane; each request of that lane takes the next one.
    pub fn push(&self, lane: Lane, turns: impl IntoIterator<Item = ScriptedTurn>) -> &Self {
        self.lock().lanes.entry(lane).or_default().extend(turns);
        self
    }

    pub fn root(&self, turns: impl IntoIterator<Item = ScriptedTurn>) -> &Self {
        self.push(Lane::root(), turns)
    }

    pub fn subtask(&self, title: &str, turns: impl IntoIterator<Item = ScriptedTurn>) -> &Self {
        self.push(Lane::Subtask(title.to_owned()), turns)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// Scripted turns not yet consumed, for tests that check the whole script ran.
    pub fn remaining(&self) -> usize {
        self.lock().lanes.values().map(VecDeque::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        // A panicking test thread must not hide the script from the others.
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_turn(&self, request: &ChatRequest) -> Result<ScriptedTurn, ProviderError> {
        let mut script = self.lock();
        if self.record {
            script.requests.push(request.clone());
        }
        let origin = &request.origin;
        let lanes = origin
            .subtask_title
            .clone()
            .map(Lane::Subtask)
            .into_iter()
            .chain([Lane::Depth(origin.depth)]);
        for lane in lanes {
            if let Some(turn) = script.lanes.get_mut(&lane).and_then(VecDeque::pop_front) {
                return Ok(turn);
            }
        }
        drop(script);
        match &self.responder {
            Some(respond) => Ok(respond(request)),
            None => Err(ProviderError::Protocol {
                server: SERVER.to_owned(),
                detail: format!(
                    "no scripted turn left for depth {} (subtask {:?})",
                    origin.depth, origin.subtask_title
                ),
            }),
        }
    }
}

impl ModelClient for ScriptedModel {
    fn context_window<'a>(&'a self, _model: &'a str) -> ContextFuture<'a> {
        Box::pin(std::future::ready(self.window.clone()))
    }

    fn params(&self, _model: &str) -> Option<u64> {
        self.params
    }

    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let turn = match self.next_turn(&request) {
            Ok(turn) => turn,
            Err(err) => return Box::pin(stream::iter([Err(err)])),
        };
        let finish = if turn.cut {
            FinishReason::Length
        } else if turn.has_calls() {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        let steps = turn.steps.into_iter().map(Some).chain([None]);
        Box::pin(
            stream::iter(steps)
                .then(move |step| {
                    let finish = finish.clone();
                    async move {
                        match step {
                            None => Some(Ok(ModelEvent::Finished(finish))),
                            Some(step) => play(step).await,
                        }
                    }
                })
                .filter_map(std::future::ready)
                // Stop at the first failure, as a real stream does.
                .scan(false, |failed, item| {
                    let out = (!*failed).then_some(item);
                    if let Some(Err(_)) = &out {
                        *failed = true;
                    }
                    std::future::ready(out)
                }),
        )
    }
}

async fn play(step: Step) -> Option<Result<ModelEvent, ProviderError>> {
    match step {
        Step::Text(text) => Some(Ok(ModelEvent::Text(text))),
        Step::Reasoning(text) => Some(Ok(ModelEvent::Reasoning(text))),
        Step::Call(call) => Some(Ok(ModelEvent::ToolCall(call))),
        Step::Draft {
            slot,
            id,
            name,
            piece,
        } => Some(Ok(ModelEvent::ToolCallDraft {
            slot,
            id,
            name,
            arguments: piece,
        })),
        Step::Usage(usage) => Some(Ok(ModelEvent::Usage(usage))),
        Step::Fail(err) => Some(Err(err)),
        Step::Reconnect(attempt) => Some(Ok(ModelEvent::Reconnecting {
            attempt,
            delay: Duration::ZERO,
            reason: "busy".into(),
        })),
        Step::Delay(duration) => {
            tokio::time::sleep(duration).await;
            None
        }
        Step::Barrier(barrier) => {
            barrier.wait().await;
            None
        }
        Step::Hang => std::future::pending().await,
    }
}
