//! What model calls cost: the prices per model (none: free, as a local server is),
//! kept where the CLI and the desktop both read them.

use std::collections::HashMap;

use cairn_protocol::{AnswerUsage, CallTotals, ModelPrice, ThreadUsage, split_by_server};

use crate::{Runtime, RuntimeError};

/// The setting that holds the prices.
const PRICES: &str = "model_prices";

impl Runtime {
    /// What each of a thread's answers took (model calls priced, tool calls, time)
    /// and the thread's totals, from the usage log.
    pub async fn thread_usage(&self, thread_id: &str) -> Result<ThreadUsage, RuntimeError> {
        // A thread that is not there is an error, not an empty log.
        self.store.thread(thread_id).await?;
        let spans = self.store.answer_spans(thread_id).await?;
        let calls = self.store.model_calls(Some(thread_id)).await?;
        let prices = self.prices().await?;
        let mut by_answer: HashMap<&str, CallTotals> = HashMap::new();
        for logged in &calls {
            if let Some(id) = logged.message_id.as_deref() {
                by_answer.entry(id).or_default().add(&logged.call, &prices);
            }
        }
        let answers = spans
            .into_iter()
            .filter_map(|span| {
                Some(AnswerUsage {
                    calls: by_answer.remove(span.id.as_str())?,
                    message_id: span.id,
                    tool_calls: span.tool_calls,
                    elapsed_ms: span.elapsed_ms,
                })
            })
            .collect::<Vec<_>>();
        Ok(ThreadUsage {
            total: CallTotals::of(calls.iter().map(|logged| &logged.call), &prices),
            by_server: split_by_server(calls.iter().map(|logged| &logged.call), &prices),
            tool_calls: answers.iter().map(|answer| answer.tool_calls).sum(),
            answers,
        })
    }

    pub async fn prices(&self) -> Result<Vec<ModelPrice>, RuntimeError> {
        Ok(self.store.setting(PRICES).await?.unwrap_or_default())
    }

    /// Prices `model` per million prompt and completion tokens.
    pub async fn set_price(
        &self,
        model: &str,
        prompt_per_million: f64,
        completion_per_million: f64,
    ) -> Result<Vec<ModelPrice>, RuntimeError> {
        let model = model.trim();
        if model.is_empty() {
            return Err(RuntimeError::BadValue(
                "a price needs the model it is for".into(),
            ));
        }
        for (what, value) in [
            ("prompt", prompt_per_million),
            ("completion", completion_per_million),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(RuntimeError::BadValue(format!(
                    "the {what} price is per million tokens and cannot be negative, not {value}"
                )));
            }
        }
        let mut prices = self.prices().await?;
        prices.retain(|price| price.model != model);
        prices.push(ModelPrice {
            model: model.to_owned(),
            prompt_per_million,
            completion_per_million,
        });
        prices.sort_by(|a, b| a.model.cmp(&b.model));
        self.store.set_setting(PRICES, &prices).await?;
        Ok(prices)
    }

    /// Takes `model`'s price away: its calls cost nothing again.
    pub async fn remove_price(&self, model: &str) -> Result<Vec<ModelPrice>, RuntimeError> {
        let mut prices = self.prices().await?;
        prices.retain(|price| price.model != model.trim());
        self.store.set_setting(PRICES, &prices).await?;
        Ok(prices)
    }
}
