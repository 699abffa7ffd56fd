//! How Cairn talks to models.
//!
//! [`ModelClient`] is the one interface the engine sees: a request (conversation,
//! tools, sampling) in, a stream of [`ModelEvent`]s out, with tool-call fragments
//! already reassembled. Behind it: Ollama's native API ([`ollama`]), the
//! OpenAI-compatible API ([`openai`]), both hardened for small local models
//! ([`textcalls`]). [`server`] knows the usual servers and finds the running ones.
//! (A deterministic scripted model for tests lives in the testkit.)

mod adapt;
mod arguments;
pub mod facts;
mod framing;
mod grammar;
pub mod habits;
pub mod http;
mod images;
pub mod ollama;
pub mod openai;
mod prompt_tools;
mod sent;
pub mod server;
pub mod textcalls;
mod warm;
pub mod windows;

// The model port is the engine's (it owns what it asks for); named here too because
// every client implements it.
pub use cairn_core::model::{
    ChatRequest, ContextFuture, ContextWindow, FinishReason, LearnFuture, ModelClient, ModelEvent,
    ModelStream, PromptRead, ProviderError, RequestOrigin, Sampling, TokenUsage, WarmFuture,
};
pub use facts::{ServerFacts, ServerKind};
pub use server::{Detected, Dialect, Endpoint, PRESETS, Preset, Server, detect};
pub use windows::Said;
