//! Which model server and which model a turn talks to, the same way in every front
//! end.
//!
//! what the user named now (flags, the model menu) → else what the thread used last →
//! else the front end's default (the CLI's local Ollama, the desktop's Settings) → the
//! API key (given, else the keychain for OpenAI-compatible servers) → connected.

use std::sync::Arc;
use std::time::Duration;

use cairn_protocol::ThreadInfo;
use cairn_providers::{Dialect, Endpoint, ModelClient, PRESETS, Sampling, Server};
use cairn_secrets::SecretStore;

use crate::RuntimeError;

/// Where a server is looked for when nobody says: Ollama's usual address.
pub const DEFAULT_BASE_URL: &str = "http://localhost:11434";

/// The model a turn talks to, resolved.
#[derive(Clone)]
pub struct ModelChoice {
    pub client: Arc<dyn ModelClient>,
    /// `ollama` or `openai`, remembered on the thread.
    pub dialect: String,
    pub base_url: String,
    pub model: String,
    pub sampling: Sampling,
}

impl std::fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelChoice")
            .field("dialect", &self.dialect)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// A server as a person names it: a preset's id, or an address, and perhaps the
/// dialect it speaks (else the preset's, else guessed from the address).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerName {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub dialect: Option<Dialect>,
}

impl ServerName {
    /// Whether anything was named at all.
    pub fn given(&self) -> bool {
        self.provider.is_some() || self.base_url.is_some()
    }

    /// The endpoint named, or [`DEFAULT_BASE_URL`] when only a dialect (or nothing)
    /// was given.
    pub fn endpoint(&self) -> Result<Endpoint, RuntimeError> {
        let (base_url, preset_dialect) = match &self.provider {
            Some(id) => {
                let preset = cairn_providers::server::preset(id).ok_or_else(|| {
                    RuntimeError::UnknownProvider {
                        id: id.clone(),
                        known: PRESETS.iter().map(|p| p.id.to_owned()).collect(),
                    }
                })?;
                (preset.base_url.to_owned(), Some(preset.dialect))
            }
            None => (
                self.base_url
                    .clone()
                    .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
                None,
            ),
        };
        let dialect = self
            .dialect
            .or(preset_dialect)
            .unwrap_or_else(|| Endpoint::guess_dialect(&base_url));
        Ok(Endpoint::new(dialect, base_url))
    }
}

/// What the front end knows about the model for a turn.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// The server the user named for this turn, if any.
    pub server: Option<Endpoint>,
    /// The model the user named for this turn, if any.
    pub model: Option<String>,
    /// The server used when none is named and the thread has used none.
    pub default_server: Option<Endpoint>,
    /// The model used when none is named and the thread has used none.
    pub default_model: DefaultModel,
    /// An API key given outright (the CLI's `CAIRN_API_KEY`); else the keychain's.
    pub api_key: Option<String>,
    /// Applied to whichever server is chosen.
    pub idle_timeout: Option<Duration>,
    pub context_cap: Option<u32>,
    pub sampling: Sampling,
}

/// The model a turn falls back to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DefaultModel {
    /// The server's model when it offers exactly one: a headless run cannot ask.
    #[default]
    OnlyOne,
    /// The one set in Settings; without it the user is asked to pick one.
    Set(Option<String>),
}

/// The server and model for a turn in `thread` (none for a new thread), connected.
///
/// A named model runs on the named server, else on the one the thread used, else on
/// the default. With no model named, the thread keeps the server and model it used,
/// unless a server is named; then the default model, else the server's only one.
pub async fn resolve_model(
    request: ModelRequest,
    thread: Option<&ThreadInfo>,
    keys: &dyn SecretStore,
) -> Result<ModelChoice, RuntimeError> {
    let named = request
        .model
        .as_deref()
        .map(str::trim)
        .filter(|model| !model.is_empty())
        .map(str::to_owned);
    let used = thread.and_then(used_by);
    let (mut endpoint, model) = match (request.server, named, used) {
        (server, Some(model), used) => {
            let endpoint = server
                .or(used.map(|(endpoint, _)| endpoint))
                .or(request.default_server)
                .unwrap_or_else(default_endpoint);
            (endpoint, Some(model))
        }
        (None, None, Some((endpoint, model))) => (endpoint, Some(model)),
        (server, None, _) => (
            server
                .or(request.default_server)
                .unwrap_or_else(default_endpoint),
            None,
        ),
    };
    endpoint.api_key = api_key(&endpoint, request.api_key, keys)?;
    endpoint.idle_timeout = request.idle_timeout.or(endpoint.idle_timeout);
    endpoint.context_cap = request.context_cap.or(endpoint.context_cap);
    let model = match (model, request.default_model) {
        (Some(model), _) | (None, DefaultModel::Set(Some(model))) => Some(model),
        (None, DefaultModel::Set(None)) => return Err(RuntimeError::NoModel),
        (None, DefaultModel::OnlyOne) => None,
    };
    let server = Server::connect(&endpoint)?;
    let model = match model {
        Some(model) => model,
        None => only_model(&server).await?,
    };
    Ok(ModelChoice {
        client: server.model_client(),
        dialect: server.dialect().to_string(),
        base_url: server.server().to_owned(),
        model,
        sampling: request.sampling,
    })
}

/// The server and model a thread's last turn used, when it has one it can use again.
fn used_by(thread: &ThreadInfo) -> Option<(Endpoint, String)> {
    let (dialect, base_url, model) = (
        thread.dialect.as_ref()?,
        thread.base_url.as_ref()?,
        thread.model.as_ref()?,
    );
    match dialect.parse::<Dialect>() {
        Ok(dialect) => Some((Endpoint::new(dialect, base_url), model.clone())),
        Err(err) => {
            // Written by a later version, perhaps: the thread starts afresh.
            tracing::warn!(thread = %thread.id, error = %err, "the thread's server is unreadable");
            None
        }
    }
}

fn default_endpoint() -> Endpoint {
    Endpoint::new(Dialect::Ollama, DEFAULT_BASE_URL)
}

/// The API key for `endpoint`: the one `given` outright, else the keychain's for an
/// OpenAI-compatible server (Ollama takes none).
pub fn api_key(
    endpoint: &Endpoint,
    given: Option<String>,
    keys: &dyn SecretStore,
) -> Result<Option<String>, RuntimeError> {
    if let Some(key) = given.filter(|key| !key.is_empty()) {
        return Ok(Some(key));
    }
    if endpoint.dialect == Dialect::Ollama {
        return Ok(None);
    }
    let name = crate::keys::entry(endpoint)?;
    Ok(match keys.get(&name) {
        Ok(key) => key,
        Err(err) => {
            // A local server needs no key; a missing keychain is reported when a key
            // is stored, not on every message.
            tracing::debug!(error = %err, "no API key from the keychain");
            None
        }
    })
}

/// The server's model when it offers exactly one; otherwise the user must choose.
async fn only_model(server: &Server) -> Result<String, RuntimeError> {
    let mut models = server.list_models().await?;
    let name = server.server().to_owned();
    match models.len() {
        1 => Ok(models.remove(0)),
        0 => Err(RuntimeError::NoModels { server: name }),
        _ => Err(RuntimeError::SeveralModels {
            server: name,
            models,
        }),
    }
}
