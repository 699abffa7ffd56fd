//! Model servers as both front ends look for them: which presets answer, what a
//! server offers and says of each model, and downloading a model into Ollama.

use std::time::Duration;

use cairn_protocol::desktop::{PullPhase, PullStep};
use cairn_providers::ollama::{OllamaClient, OllamaConfig, PULL_SUCCESS};
use cairn_providers::{Detected, Endpoint, Preset, Said, Server};
use futures_util::future::join_all;
use futures_util::{Stream, StreamExt};

use crate::RuntimeError;

/// How long detection waits for each preset: local servers answer in milliseconds.
pub const DETECT_TIMEOUT: Duration = Duration::from_millis(800);

/// How long a listing waits for what a server says of one of its models.
const FACTS_TIMEOUT: Duration = Duration::from_secs(3);

/// The presets that answer, each at the address `base_url_for` gives it, with their
/// models.
pub async fn detect_servers(base_url_for: impl Fn(&Preset) -> String) -> Vec<Detected> {
    cairn_providers::detect(DETECT_TIMEOUT, base_url_for).await
}

/// The models a server offers, as it lists them.
pub async fn list_models(endpoint: &Endpoint) -> Result<Vec<String>, RuntimeError> {
    Ok(Server::connect(endpoint)?.list_models().await?)
}

/// The models a server offers, each with what it says of it.
pub async fn list_models_said(endpoint: &Endpoint) -> Result<Vec<(String, Said)>, RuntimeError> {
    let server = Server::connect(endpoint)?;
    let models = server.list_models().await?;
    Ok(said_by(&server, models).await)
}

/// Each of `models` (found by detection) with what its server says of it.
pub async fn models_said(endpoint: &Endpoint, models: Vec<String>) -> Vec<(String, Said)> {
    match Server::connect(endpoint) {
        Ok(server) => said_by(&server, models).await,
        Err(_) => models.into_iter().map(|m| (m, Said::default())).collect(),
    }
}

/// Each of `models` with what `server` says of it (its window, whether tools reach it
/// through text), asked all at once; a server slow to say is taken to say nothing.
async fn said_by(server: &Server, models: Vec<String>) -> Vec<(String, Said)> {
    let asked = models.iter().map(|model| async move {
        tokio::time::timeout(FACTS_TIMEOUT, server.said(model))
            .await
            .unwrap_or_default()
    });
    let said = join_all(asked).await;
    models.into_iter().zip(said).collect()
}

/// Downloads `model` into the Ollama server at `base_url`, step by step; the stream
/// ends with a [`PullPhase::Done`] step or an error.
pub fn pull_model(
    base_url: &str,
    model: &str,
) -> Result<impl Stream<Item = Result<PullStep, RuntimeError>> + Send + 'static, RuntimeError> {
    let client = OllamaClient::new(OllamaConfig::new(base_url))?;
    let steps = client.pull(model);
    Ok(steps.map(|step| {
        let step = step?;
        Ok(PullStep {
            phase: if step.status == PULL_SUCCESS {
                PullPhase::Done
            } else {
                PullPhase::Working
            },
            status: step.status,
            completed: step.completed,
            total: step.total,
            error: None,
        })
    }))
}
