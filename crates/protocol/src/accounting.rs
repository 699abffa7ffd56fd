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
    /// The model server that answered, by its name (`cairn servers list`); absent in
    /// calls logged before servers were named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
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

/// The sums over some model calls, priced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallTotals {
    pub llm_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The calls' durations added up: calls made in parallel overlap, so this can be
    /// more than the time the user waited.
    pub latency_ms: u64,
    /// Some counts are estimates (a server reported none).
    pub estimated: bool,
    pub cost: f64,
}

impl CallTotals {
    pub fn of<'a>(calls: impl IntoIterator<Item = &'a ModelCall>, prices: &[ModelPrice]) -> Self {
        calls.into_iter().fold(Self::default(), |mut totals, call| {
            totals.add(call, prices);
            totals
        })
    }

    pub fn add(&mut self, call: &ModelCall, prices: &[ModelPrice]) {
        self.llm_calls += 1;
        self.prompt_tokens += call.prompt_tokens;
        self.completion_tokens += call.completion_tokens;
        self.latency_ms += call.latency_ms;
        self.estimated |= call.estimated;
        self.cost += cost_of(call, prices);
    }

    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// What a thread's answers took, each and together: what the window shows on an
/// answer and in the thread's menu.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadUsage {
    /// The finished answers that made model calls, in the thread's order.
    pub answers: Vec<AnswerUsage>,
    pub total: CallTotals,
    /// Tool calls over the whole thread.
    pub tool_calls: u64,
    /// The totals split by model server, when more than one answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_server: Vec<ServerTotals>,
}

/// The model calls one server answered, summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTotals {
    /// Its name; empty for calls logged before servers were named.
    pub server: String,
    pub totals: CallTotals,
}

/// `calls` summed per server, in the order each server first answered; empty when
/// one server (or none) answered them all, as there is nothing to split.
pub fn split_by_server<'a>(
    calls: impl IntoIterator<Item = &'a ModelCall>,
    prices: &[ModelPrice],
) -> Vec<ServerTotals> {
    let mut split: Vec<ServerTotals> = Vec::new();
    for call in calls {
        let server = call.server.as_deref().unwrap_or_default();
        let at = match split.iter().position(|kept| kept.server == server) {
            Some(at) => at,
            None => {
                split.push(ServerTotals {
                    server: server.to_owned(),
                    totals: CallTotals::default(),
                });
                split.len() - 1
            }
        };
        split[at].totals.add(call, prices);
    }
    if split.len() < 2 {
        split.clear();
    }
    split
}

impl ThreadUsage {
    pub fn answer(&self, message_id: &str) -> Option<&AnswerUsage> {
        self.answers
            .iter()
            .find(|answer| answer.message_id == message_id)
    }
}

/// One answer's model calls, tool calls and time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerUsage {
    pub message_id: String,
    pub calls: CallTotals,
    pub tool_calls: u64,
    /// From the answer's start to its end, waits for the user's approval included.
    pub elapsed_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(model: &str, prompt: u64, completion: u64, latency_ms: u64) -> ModelCall {
        ModelCall {
            operation: "turn".into(),
            model: model.into(),
            server: None,
            depth: 0,
            prompt_tokens: prompt,
            completion_tokens: completion,
            estimated: false,
            latency_ms,
            first_token_ms: None,
            error: None,
        }
    }

    #[test]
    fn totals_add_tokens_time_and_the_cost_of_priced_models_only() {
        let prices = [ModelPrice {
            model: "paid".into(),
            prompt_per_million: 2.0,
            completion_per_million: 10.0,
        }];
        let mut local = call("local", 1_000, 500, 40);
        local.estimated = true;
        let calls = [call("paid", 1_000_000, 100_000, 1_000), local];
        let totals = CallTotals::of(&calls, &prices);
        assert_eq!(totals.llm_calls, 2);
        assert_eq!(totals.total_tokens(), 1_101_500);
        assert_eq!(totals.latency_ms, 1_040);
        assert!(totals.estimated);
        // 1M prompt tokens at 2 plus 0.1M completion tokens at 10; the local model is free.
        assert!((totals.cost - 3.0).abs() < 1e-9, "{}", totals.cost);
    }

    #[test]
    fn calls_split_by_server_only_when_more_than_one_answered() {
        let on = |server: &str, prompt| ModelCall {
            server: Some(server.into()),
            ..call("m", prompt, 1, 10)
        };
        let one = [on("laptop", 5), on("laptop", 7)];
        assert!(split_by_server(&one, &[]).is_empty());
        let two = [on("laptop", 5), on("gpu", 100), on("laptop", 7)];
        let split = split_by_server(&two, &[]);
        let names: Vec<&str> = split.iter().map(|kept| kept.server.as_str()).collect();
        assert_eq!(names, ["laptop", "gpu"]);
        assert_eq!(split[0].totals.prompt_tokens, 12);
        assert_eq!(split[0].totals.llm_calls, 2);
        assert_eq!(split[1].totals.prompt_tokens, 100);
    }
}
