//! The model's parameters as defaults and per thread, and the agent's own tool to set
//! its thread's (`set_llm_params`, which asks first: it is a write).

use std::sync::Arc;

use async_trait::async_trait;
use cairn_core::disclosure::ToolGroup;
use cairn_core::tool::{Tool, ToolContext, ToolError, ToolOutput};
use cairn_protocol::{LLM_KEYS, LlmError, LlmParams, LlmView, ToolCategory};
use cairn_store::Store;
use serde_json::{Value, json};

use crate::{ModelRequest, Runtime, RuntimeError};

/// The setting that holds the defaults.
const DEFAULTS: &str = "llm_params";

impl Runtime {
    /// The parameters as they stand for a thread (or for new threads).
    pub async fn llm_settings(&self, thread_id: Option<&str>) -> Result<LlmView, RuntimeError> {
        let defaults = self.store.setting(DEFAULTS).await?.unwrap_or_default();
        let thread = match thread_id {
            Some(id) => Some(self.store.thread_llm_params(id).await?),
            None => None,
        };
        Ok(LlmView::new(defaults, thread))
    }

    /// Sets `key` for a thread, or as a default; a bad value changes nothing.
    pub async fn set_llm(
        &self,
        thread_id: Option<&str>,
        key: &str,
        value: &str,
    ) -> Result<LlmView, RuntimeError> {
        self.change_llm(thread_id, |params| params.set(key, value))
            .await
    }

    /// Unsets `key` (or all) for a thread, or as a default.
    pub async fn reset_llm(
        &self,
        thread_id: Option<&str>,
        key: Option<&str>,
    ) -> Result<LlmView, RuntimeError> {
        self.change_llm(thread_id, |params| params.reset(key)).await
    }

    async fn change_llm(
        &self,
        thread_id: Option<&str>,
        change: impl FnOnce(&mut LlmParams) -> Result<(), LlmError>,
    ) -> Result<LlmView, RuntimeError> {
        let LlmView {
            mut defaults,
            mut thread,
            ..
        } = self.llm_settings(thread_id).await?;
        match (thread_id, &mut thread) {
            (Some(id), Some(params)) => {
                change(params)?;
                self.store.set_thread_llm_params(id, params).await?;
            }
            _ => {
                change(&mut defaults)?;
                self.store.set_setting(DEFAULTS, &defaults).await?;
            }
        }
        Ok(LlmView::new(defaults, thread))
    }

    /// Fills what `request` leaves open from the parameters of `thread_id` (or the
    /// defaults): what a front end was told outright (a flag) wins.
    pub async fn apply_llm(
        &self,
        request: &mut ModelRequest,
        thread_id: Option<&str>,
    ) -> Result<(), RuntimeError> {
        let params = self.llm_settings(thread_id).await?.effective;
        if request.model.is_none() {
            request.model = params.model;
        }
        request.context_cap = request.context_cap.or(params.context_cap);
        let sampling = &mut request.sampling;
        sampling.temperature = sampling.temperature.or(params.temperature);
        sampling.top_p = sampling.top_p.or(params.top_p);
        sampling.max_tokens = sampling.max_tokens.or(params.max_tokens);
        Ok(())
    }
}

/// `set_llm_params`: the agent changes its own thread's parameters, from the next
/// message on. A write: in Default mode the user is asked first.
#[derive(Debug)]
pub(crate) struct SetLlmParams {
    pub store: Store,
    pub thread_id: String,
}

pub(crate) const SET_LLM_PARAMS: &str = "set_llm_params";

#[async_trait]
impl Tool for SetLlmParams {
    fn name(&self) -> &str {
        SET_LLM_PARAMS
    }

    fn description(&self) -> &str {
        "Change this chat's model parameters from the next message on: temperature (0-2), \
         top_p (0-1), max_tokens, context_cap (Ollama's context window, 512 and up), or the \
         model the tool loop runs on. Give only the ones to change."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "temperature": {"type": "number"},
                "top_p": {"type": "number"},
                "max_tokens": {"type": "integer"},
                "context_cap": {"type": "integer"},
                "model": {"type": "string"}
            }
        })
    }

    /// Loaded when the user asks for a change of settings: rare in a turn.
    fn group(&self) -> Option<ToolGroup> {
        Some(ToolGroup::rare("llm"))
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Value::Object(args) = args else {
            return Err(ToolError::InvalidArguments(
                "give the parameters as an object".into(),
            ));
        };
        let mut params = self
            .store
            .thread_llm_params(&self.thread_id)
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?;
        let mut changed = Vec::new();
        for (key, value) in &args {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            params
                .set(key, &text)
                .map_err(|err| ToolError::InvalidArguments(err.to_string()))?;
            changed.push(format!("{key}={text}"));
        }
        if changed.is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "give at least one of {}",
                LLM_KEYS.join(", ")
            )));
        }
        self.store
            .set_thread_llm_params(&self.thread_id, &params)
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?;
        Ok(ToolOutput::text(format!(
            "Set {} for this chat; it applies from the next message.",
            changed.join(", ")
        )))
    }
}

/// The tool for `thread_id`.
pub(crate) fn set_llm_params_tool(store: &Store, thread_id: &str) -> Arc<dyn Tool> {
    Arc::new(SetLlmParams {
        store: store.clone(),
        thread_id: thread_id.to_owned(),
    })
}
