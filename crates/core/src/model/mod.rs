//! The model port: what the engine asks of a model server. The providers crate
//! implements it for real servers; the testkit scripts it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use cairn_protocol::{ChatMessage, ToolCall, ToolSpec};
use futures_util::Stream;

mod error;

pub use error::{Overflow, ProviderError, says_context_overflow};

/// One model round: the conversation so far and the tools the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Shared: the same specs go out every round of a level.
    pub tools: Arc<[ToolSpec]>,
    pub sampling: Sampling,
    /// Where in the turn's tree this request comes from. Not sent to servers; it lets
    /// a scripted model answer per subtask and logs say who asked.
    pub origin: RequestOrigin,
    /// The level's last word: its model kept making a call it was told repeats
    /// itself, so it is offered no tools and asked only to answer from what they
    /// returned. A server shows it its results as the user's words (a small model
    /// shown its own calls again writes them again).
    pub answer_only: bool,
}

/// Decoding parameters; `None` leaves the server's default.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestOrigin {
    /// 0 for the root level.
    pub depth: u32,
    /// The `tool_call_id` of the enclosing `run_subtask`; `None` at the root.
    pub parent_id: Option<String>,
    pub subtask_title: Option<String>,
}

/// What a model stream yields. Text and reasoning arrive as deltas; tool calls arrive
/// whole, once the stream has delivered all of their fragments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    Text(String),
    Reasoning(String),
    /// A piece of a tool call the model is still writing: the call in the answer's
    /// order (`slot`), its id and name once known, and the next piece of its
    /// arguments. The whole call still comes as [`ModelEvent::ToolCall`] at the end.
    ToolCallDraft {
        slot: usize,
        id: String,
        name: String,
        arguments: String,
    },
    ToolCall(ToolCall),
    Usage(TokenUsage),
    /// How far the server has read the prompt, where it says (llama.cpp's
    /// `return_progress`): sent as it starts reading and as it gets on.
    PromptRead(PromptRead),
    Finished(FinishReason),
    /// The server was busy before sending anything; the request is sent again after
    /// `delay`.
    Reconnecting {
        attempt: u32,
        delay: std::time::Duration,
        reason: String,
    },
}

/// The server's reading of a prompt: of `total` tokens, `cached` it had already and
/// `read` it has by now (the cached ones among them), `elapsed_ms` after it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptRead {
    pub total: u64,
    pub cached: u64,
    pub read: u64,
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt, what the server had cached and did not read again.
    pub cached_prompt_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// The answer hit the token limit and is cut short.
    Length,
    Other(String),
}

impl FinishReason {
    pub fn parse(reason: &str) -> Self {
        match reason {
            "stop" | "eos" | "end_turn" => Self::Stop,
            "tool_calls" | "function_call" => Self::ToolCalls,
            "length" | "max_tokens" => Self::Length,
            other => Self::Other(other.to_owned()),
        }
    }
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ProviderError>> + Send>>;

/// How many tokens a model can take in at once (prompt and answer together), and
/// who said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextWindow {
    pub tokens: u32,
    /// Where the figure came from, for logs and the model picker
    /// ("Ollama, as loaded", "vLLM's max_model_len").
    pub source: String,
}

impl ContextWindow {
    pub fn new(tokens: u32, source: impl Into<String>) -> Self {
        Self {
            tokens,
            source: source.into(),
        }
    }
}

pub type ContextFuture<'a> = Pin<Box<dyn Future<Output = Option<ContextWindow>> + Send + 'a>>;

/// A model server (or a stand-in). Dropping the stream cancels the request.
pub trait ModelClient: Send + Sync {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream;

    /// The model's context window as the server reports it; `None` where the server
    /// says nothing (the engine then keeps its configured limits). Never an error:
    /// not knowing is an answer.
    fn context_window<'a>(&'a self, model: &'a str) -> ContextFuture<'a> {
        let _ = model;
        Box::pin(std::future::ready(None))
    }

    /// Whether `model` takes tools, as far as the client has learned (a server that
    /// refused them once): a model that does not is told it has none.
    fn can_call_tools(&self, model: &str) -> bool {
        let _ = model;
        true
    }

    /// Whether `model`'s chat template takes no tools, so that the client describes
    /// them in its prompt and reads its calls back from its text ("tools through
    /// text"), as far as the server said when asked for the window.
    fn tools_in_text(&self, model: &str) -> bool {
        let _ = model;
        false
    }

    /// `model`'s parameter count, as far as its server said when asked for the window:
    /// a small model is given the compact prompt and the core tools (see `context`).
    fn params(&self, model: &str) -> Option<u64> {
        let _ = model;
        None
    }

    /// Whether the server keeps the prompt it last read and reads again only what
    /// differs, at no charge (a server on the user's own machine or network, not a
    /// hosted API billing each prompt): then reading a turn's fixed prompt before the
    /// question exists saves the user that wait.
    fn keeps_prefix(&self, model: &str) -> bool {
        let _ = model;
        false
    }

    /// Has the server read `request`'s prompt and generate nothing (or next to
    /// nothing), so that its cache holds it for the request that follows. Failures
    /// are logged, never returned: nobody waits on a warm-up.
    fn warm(&self, request: ChatRequest) -> WarmFuture<'_> {
        let _ = request;
        Box::pin(std::future::ready(()))
    }

    /// Keeps `window` as `model`'s window from now on: the server showed it smaller
    /// than it said (it read less of a prompt than was sent, or refused one and said
    /// the window it has). Failures are logged, never returned.
    fn learn_window<'a>(&'a self, model: &'a str, window: ContextWindow) -> LearnFuture<'a> {
        let _ = (model, window);
        Box::pin(std::future::ready(()))
    }
}

pub type WarmFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

pub type LearnFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
