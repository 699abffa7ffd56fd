//! The model servers Cairn knows, how to find the ones running, and one handle over
//! either dialect for what front ends need (list models, chat).
//!
//! Provider metadata drives onboarding: each preset says its dialect, its usual
//! address, whether it needs a key, and how to start it, so a setup screen and the
//! CLI stay generic.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use serde::Serialize;

use crate::ollama::{OllamaClient, OllamaConfig};
use crate::openai::{OpenAiClient, OpenAiConfig};
use cairn_core::model::ModelClient;
use cairn_core::model::ProviderError;

pub use cairn_protocol::Dialect;

/// A kind of server Cairn can set up without the user typing an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Preset {
    pub id: &'static str,
    pub name: &'static str,
    pub dialect: Dialect,
    pub base_url: &'static str,
    pub needs_key: bool,
    /// What to tell a user whose server is not running.
    pub start_hint: &'static str,
}

pub const PRESETS: [Preset; 4] = [
    Preset {
        id: "ollama",
        name: "Ollama",
        dialect: Dialect::Ollama,
        base_url: "http://localhost:11434",
        needs_key: false,
        start_hint: "Start it with `ollama serve`.",
    },
    Preset {
        id: "lmstudio",
        name: "LM Studio",
        dialect: Dialect::Openai,
        base_url: "http://localhost:1234",
        needs_key: false,
        start_hint: "Start the server in LM Studio's Developer tab, or run `lms server start`.",
    },
    Preset {
        id: "vllm",
        name: "vLLM",
        dialect: Dialect::Openai,
        base_url: "http://localhost:8000",
        needs_key: false,
        start_hint: "Start it with `vllm serve <model>`.",
    },
    Preset {
        id: "llamacpp",
        name: "llama.cpp server",
        dialect: Dialect::Openai,
        base_url: "http://localhost:8080",
        needs_key: false,
        start_hint: "Start it with `llama-server -m <model.gguf>`.",
    },
];

pub fn preset(id: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|preset| preset.id == id)
}

/// Where to reach a server and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub dialect: Dialect,
    pub base_url: String,
    pub api_key: Option<String>,
    /// Longest silence in a stream before it counts as stalled (client default if unset).
    pub idle_timeout: Option<Duration>,
    /// Ollama only: the largest context window asked for (client default if unset).
    pub context_cap: Option<u32>,
}

impl Endpoint {
    pub fn new(dialect: Dialect, base_url: impl Into<String>) -> Self {
        Self {
            dialect,
            base_url: base_url.into(),
            api_key: None,
            idle_timeout: None,
            context_cap: None,
        }
    }

    /// The base URL as the client will use it (and as keys are named by).
    pub fn normalized_base(&self) -> Result<String, ProviderError> {
        let suffixes: &[&str] = match self.dialect {
            Dialect::Ollama => &["/api"],
            Dialect::Openai => &["/v1"],
        };
        crate::http::normalize_base(&self.base_url, suffixes)
    }

    /// The other dialect, when `base_url` plainly speaks it rather than `dialect`: an
    /// address ending in `/v1` is OpenAI-compatible, Ollama's port or `/api` is
    /// Ollama's. For a hint beside a failure, never to switch on its own.
    pub fn dialect_mismatch(dialect: Dialect, base_url: &str) -> Option<Dialect> {
        let trimmed = base_url.trim().trim_end_matches('/');
        match dialect {
            Dialect::Ollama if trimmed.ends_with("/v1") => Some(Dialect::Openai),
            Dialect::Openai if Self::guess_dialect(trimmed) == Dialect::Ollama => {
                Some(Dialect::Ollama)
            }
            _ => None,
        }
    }

    /// The dialect a bare address most likely speaks: Ollama's port or `/api` path
    /// mean Ollama, anything else the OpenAI-compatible API.
    pub fn guess_dialect(base_url: &str) -> Dialect {
        let trimmed = base_url.trim().trim_end_matches('/');
        let ollama_port = reqwest::Url::parse(trimmed)
            .ok()
            .and_then(|url| url.port())
            .is_some_and(|port| port == 11434);
        if ollama_port || trimmed.ends_with("/api") {
            Dialect::Ollama
        } else {
            Dialect::Openai
        }
    }
}

/// A connected server of either dialect.
#[derive(Debug, Clone)]
pub enum Server {
    Ollama(OllamaClient),
    OpenAi(OpenAiClient),
}

impl Server {
    pub fn connect(endpoint: &Endpoint) -> Result<Self, ProviderError> {
        Self::connect_with(endpoint, None)
    }

    /// Like [`Server::connect`], with a connect timeout (detection keeps it short).
    pub fn connect_with(
        endpoint: &Endpoint,
        connect_timeout: Option<Duration>,
    ) -> Result<Self, ProviderError> {
        match endpoint.dialect {
            Dialect::Ollama => {
                let mut config = OllamaConfig::new(&endpoint.base_url);
                if let Some(timeout) = connect_timeout {
                    config.connect_timeout = timeout;
                }
                if let Some(idle) = endpoint.idle_timeout {
                    config.idle_timeout = idle;
                }
                if let Some(cap) = endpoint.context_cap {
                    config.context_cap = cap;
                }
                OllamaClient::new(config).map(Self::Ollama)
            }
            Dialect::Openai => {
                let mut config = OpenAiConfig::new(&endpoint.base_url);
                config.api_key = endpoint.api_key.clone();
                if let Some(timeout) = connect_timeout {
                    config.connect_timeout = timeout;
                }
                if let Some(idle) = endpoint.idle_timeout {
                    config.idle_timeout = idle;
                }
                OpenAiClient::new(config).map(Self::OpenAi)
            }
        }
    }

    pub fn server(&self) -> &str {
        match self {
            Self::Ollama(client) => client.server(),
            Self::OpenAi(client) => client.server(),
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Self::Ollama(_) => Dialect::Ollama,
            Self::OpenAi(_) => Dialect::Openai,
        }
    }

    /// The names of the models the server offers.
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        match self {
            Self::Ollama(client) => Ok(client
                .list_models()
                .await?
                .into_iter()
                .map(|model| model.name)
                .collect()),
            Self::OpenAi(client) => client.list_models().await,
        }
    }

    /// What the server says of `model` (its window, whether its template takes
    /// tools), kept a few minutes.
    pub async fn said(&self, model: &str) -> crate::Said {
        match self {
            Self::Ollama(client) => client.said(model).await,
            Self::OpenAi(client) => client.said(model).await,
        }
    }

    /// What the server says of itself; an error when it does not answer.
    pub async fn facts(&self) -> Result<crate::ServerFacts, ProviderError> {
        match self {
            Self::Ollama(client) => {
                client.list_models().await?;
                Ok(crate::ServerFacts {
                    kind: crate::ServerKind::Ollama,
                    slots: None,
                    window: None,
                })
            }
            Self::OpenAi(client) => client.facts().await,
        }
    }

    pub fn model_client(&self) -> Arc<dyn ModelClient> {
        match self {
            Self::Ollama(client) => Arc::new(client.clone()),
            Self::OpenAi(client) => Arc::new(client.clone()),
        }
    }
}

/// A preset found running, with what it offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detected {
    pub preset: Preset,
    pub base_url: String,
    pub models: Vec<String>,
}

/// Probes every preset at its usual address at once; what answers within `timeout`
/// is running. `base_url_for` may move a preset (a user who runs Ollama elsewhere).
pub async fn detect(timeout: Duration, base_url_for: impl Fn(&Preset) -> String) -> Vec<Detected> {
    let probes = PRESETS.iter().map(|preset| {
        let base_url = base_url_for(preset);
        async move {
            let endpoint = Endpoint::new(preset.dialect, base_url.clone());
            let server = Server::connect_with(&endpoint, Some(timeout)).ok()?;
            let models = tokio::time::timeout(timeout, server.list_models())
                .await
                .ok()?
                .ok()?;
            Some(Detected {
                preset: *preset,
                base_url: server.server().to_owned(),
                models,
            })
        }
    });
    join_all(probes).await.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_that_plainly_speaks_the_other_dialect_is_noticed() {
        let cases = [
            (
                Dialect::Ollama,
                "http://localhost:1234/v1",
                Some(Dialect::Openai),
            ),
            (
                Dialect::Ollama,
                "http://localhost:11434/v1/",
                Some(Dialect::Openai),
            ),
            (Dialect::Ollama, "http://localhost:11434", None),
            (
                Dialect::Openai,
                "http://localhost:11434",
                Some(Dialect::Ollama),
            ),
            (
                Dialect::Openai,
                "http://gpu-box:9000/api",
                Some(Dialect::Ollama),
            ),
            (Dialect::Openai, "http://localhost:8000/v1", None),
        ];
        for (dialect, url, other) in cases {
            assert_eq!(
                Endpoint::dialect_mismatch(dialect, url),
                other,
                "{dialect} {url}"
            );
        }
    }

    #[test]
    fn the_dialect_is_guessed_from_the_address() {
        assert_eq!(
            Endpoint::guess_dialect("http://localhost:11434"),
            Dialect::Ollama
        );
        assert_eq!(
            Endpoint::guess_dialect("http://gpu-box:11434/"),
            Dialect::Ollama
        );
        assert_eq!(
            Endpoint::guess_dialect("http://gpu-box:9000/api"),
            Dialect::Ollama
        );
        assert_eq!(
            Endpoint::guess_dialect("http://localhost:1234"),
            Dialect::Openai
        );
        assert_eq!(
            Endpoint::guess_dialect("https://api.example.com/v1"),
            Dialect::Openai
        );
    }

    #[test]
    fn presets_cover_the_usual_servers() {
        let ids: Vec<_> = PRESETS.iter().map(|p| (p.id, p.base_url)).collect();
        assert_eq!(
            ids,
            [
                ("ollama", "http://localhost:11434"),
                ("lmstudio", "http://localhost:1234"),
                ("vllm", "http://localhost:8000"),
                ("llamacpp", "http://localhost:8080"),
            ]
        );
        assert_eq!(preset("vllm").map(|p| p.dialect), Some(Dialect::Openai));
    }
}
