//! A chat's agent, its model parameters (`/llm`), and what its answers took and cost.

use cairn_protocol::{LlmView, ModelPrice, ThreadInfo, ThreadUsage};
use cairn_runtime::RuntimeError;

use super::{Desk, DeskError};

impl Desk {
    /// Gives a chat the agent it answers as from its next message on.
    pub async fn set_agent(&self, thread_id: &str, agent: &str) -> Result<ThreadInfo, DeskError> {
        Ok(self.runtime.set_thread_agent(thread_id, agent).await?)
    }

    /// The model's parameters for a chat (or the defaults), as `/llm` shows them.
    pub async fn llm(&self, thread_id: Option<&str>) -> Result<LlmView, DeskError> {
        Ok(self.runtime.llm_settings(thread_id).await?)
    }

    /// Sets a parameter (`key` and `value`), resets one (`key` alone) or resets them
    /// all (neither), for a chat or as defaults.
    pub async fn set_llm(
        &self,
        thread_id: Option<&str>,
        key: Option<&str>,
        value: Option<&str>,
    ) -> Result<LlmView, DeskError> {
        Ok(match (key, value) {
            (Some(key), Some(value)) => self.runtime.set_llm(thread_id, key, value).await?,
            (key, None) => self.runtime.reset_llm(thread_id, key).await?,
            (None, Some(_)) => {
                return Err(
                    RuntimeError::BadValue("a value needs the parameter it is for".into()).into(),
                );
            }
        })
    }

    /// What each of a chat's answers took, and its totals.
    pub async fn thread_usage(&self, thread_id: &str) -> Result<ThreadUsage, DeskError> {
        Ok(self.runtime.thread_usage(thread_id).await?)
    }

    pub async fn prices(&self) -> Result<Vec<ModelPrice>, DeskError> {
        Ok(self.runtime.prices().await?)
    }

    pub async fn set_price(
        &self,
        model: &str,
        prompt_per_million: f64,
        completion_per_million: f64,
    ) -> Result<Vec<ModelPrice>, DeskError> {
        Ok(self
            .runtime
            .set_price(model, prompt_per_million, completion_per_million)
            .await?)
    }

    pub async fn remove_price(&self, model: &str) -> Result<Vec<ModelPrice>, DeskError> {
        Ok(self.runtime.remove_price(model).await?)
    }
}
