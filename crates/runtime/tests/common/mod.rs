//! What the runtime's test files share.

use std::sync::Arc;

use cairn_providers::Sampling;
use cairn_runtime::ModelChoice;
use cairn_testkit::ScriptedModel;

/// `model` as the thread's choice: model `name` on an OpenAI-compatible server.
pub fn choice_of(model: &ScriptedModel, name: &str) -> ModelChoice {
    ModelChoice {
        client: Arc::new(model.clone()),
        dialect: "openai".into(),
        base_url: "http://localhost:1234".into(),
        model: name.into(),
        sampling: Sampling::default(),
    }
}
