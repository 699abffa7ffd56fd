//! What each model call cost: the record behind per-turn and per-thread accounting.

use serde::{Deserialize, Serialize};

/// One request to a model server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCall {
    /// What the call was for: `turn` at the root of a turn (`router` when the router
    /// answers), `subtask` below it, `plan` for a planning round, `review` for a plan's
    /// reviewer. Calls stored before these were told apart say `chat` at the root.
    pub operation: String,
    pub model: String,
    pub depth: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// True when the server reported no counts and these are estimates.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// From sending the request to the end of the answer.
    pub latency_ms: u64,
    /// From sending the request to the first streamed text, reasoning or call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A model call as the usage log keeps it: the call, and the answer it was for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedCall {
    pub thread_id: String,
    /// The answer (turn) the call was part of.
    pub message_id: Option<String>,
    #[serde(flatten)]
    pub call: ModelCall,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// What a model costs, per million tokens; a model with no price costs nothing (a
/// local server's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    pub model: String,
    pub prompt_per_million: f64,
    pub completion_per_million: f64,
}

impl ModelPrice {
    /// What `call` cost at this price.
    pub fn cost(&self, call: &ModelCall) -> f64 {
        (call.prompt_tokens as f64 * self.prompt_per_million
            + call.completion_tokens as f64 * self.completion_per_million)
            / 1_000_000.0
    }
}

/// What `call` cost at the first of `prices` for its model; nothing without one.
pub fn cost_of(call: &ModelCall, prices: &[ModelPrice]) -> f64 {
    prices
        .iter()
        .find(|price| price.model == call.model)
        .map_or(0.0, |price| price.cost(call))
}
