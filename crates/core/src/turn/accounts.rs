//! What a turn spends on its models, kept as it goes: the tokens its calls used, each
//! call as its server answered it, and what the servers' counts showed the token
//! estimate to miss, per model, so that the next request is fitted to what was seen.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use cairn_protocol::{ModelCall, Usage};

use crate::level::Scope;

/// The most a server's count is believed to exceed the estimate by, in thousandths:
/// a figure beyond it is more likely a server reporting something else. A count under
/// the estimate never grows the budget: Ollama, for one, counts only the tokens it had
/// to read, not those its cache held.
const MAX_COUNTED_PER_ESTIMATED: u64 = 3000;

#[derive(Default)]
pub(crate) struct Accounts {
    usage: Mutex<Usage>,
    calls: Mutex<Vec<ModelCall>>,
    /// Tokens the server counted per token estimated, in thousandths, by model: the
    /// estimate knows no tokenizer, so the budget a request is fitted to shrinks by
    /// what the server's last count showed.
    counted_per_estimated: Mutex<HashMap<String, u64>>,
}

impl Accounts {
    pub(crate) fn add_usage(&self, usage: &Usage) {
        lock(&self.usage).add(usage);
    }

    pub(crate) fn record_call(&self, call: ModelCall) {
        lock(&self.calls).push(call);
    }

    /// Learns from a round whose prompt the server counted (`counted`) what the
    /// estimate (`estimated`) misses for `model`.
    pub(crate) fn learn_count(&self, model: &str, estimated: u64, counted: u64) {
        if estimated == 0 {
            return;
        }
        let ratio =
            (counted.saturating_mul(1000) / estimated).clamp(1000, MAX_COUNTED_PER_ESTIMATED);
        tracing::debug!(model, estimated, counted, "prompt tokens");
        lock(&self.counted_per_estimated).insert(model.to_owned(), ratio);
    }

    /// What a request of the level `scope` may hold, in estimated tokens: its
    /// window's history budget less what its server's last count of its model showed
    /// the estimate to miss.
    pub(crate) fn request_budget(&self, scope: &Scope) -> u64 {
        let ratio = lock(&self.counted_per_estimated)
            .get(&scope.model)
            .copied()
            .unwrap_or(1000);
        scope.fit.limits.max_history_tokens * 1000 / ratio
    }

    /// What the turn spent, for its outcome: the calls are handed over.
    pub(crate) fn close(&self) -> (Usage, Vec<ModelCall>) {
        (*lock(&self.usage), std::mem::take(&mut *lock(&self.calls)))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_over_the_estimate_shrinks_the_next_budget_within_bounds() {
        let accounts = Accounts::default();
        accounts.learn_count("m", 1000, 1500);
        assert_eq!(lock(&accounts.counted_per_estimated)["m"], 1500);
        accounts.learn_count("m", 1000, 900);
        assert_eq!(
            lock(&accounts.counted_per_estimated)["m"],
            1000,
            "a count under the estimate never grows the budget"
        );
        accounts.learn_count("m", 100, 100_000);
        assert_eq!(
            lock(&accounts.counted_per_estimated)["m"],
            MAX_COUNTED_PER_ESTIMATED
        );
        accounts.learn_count("other", 0, 50);
        assert!(!lock(&accounts.counted_per_estimated).contains_key("other"));
    }
}
