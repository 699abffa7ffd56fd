//! How Cairn talks to models.
//!
//! [`ModelClient`] is the one interface the engine sees: a request (conversation,
//! tools, sampling) in, a stream of [`ModelEvent`]s out, with tool-call fragments
//! already reassembled. Behind it: the OpenAI-compatible streaming client
//! ([`openai`]) and [`ScriptedModel`], a deterministic model for tests and benchmarks.

mod adapt;
mod error;
pub mod http;
mod model;
pub mod ollama;
pub mod openai;
mod scripted;
pub mod textcalls;

pub use error::ProviderError;
pub use model::{
    ChatRequest, FinishReason, ModelClient, ModelEvent, ModelStream, RequestOrigin, Sampling,
    TokenUsage,
};
pub use scripted::{Lane, ScriptedModel, ScriptedTurn};
