//! What model calls cost: the prices per model (none: free, as a local server is),
//! kept where the CLI and the desktop both read them.

use cairn_protocol::ModelPrice;

use crate::{Runtime, RuntimeError};

/// The setting that holds the prices.
const PRICES: &str = "model_prices";

impl Runtime {
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
