//! The OpenAI-compatible dialect: LM Studio, vLLM, llama.cpp's server, Ollama's `/v1`,
//! and hosted endpoints.
//!
//! request → `POST {base}/v1/chat/completions` (`stream: true`) → SSE → chunk
//! payloads ([`decode`]) → text calls converted → a narrated call retried once with
//! `tool_choice: "required"` → [`ModelEvent`]s.

mod context;
pub mod decode;
mod request;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use futures_util::future::join_all;
use serde::Deserialize;

use crate::adapt;
use crate::http::{self, Framing, OpenFailure, Peer, RetryPolicy};
use crate::windows::{self, Said};
use crate::{images, sent, warm};
use cairn_core::model::ProviderError;
use cairn_core::model::{
    ChatRequest, ContextFuture, ContextWindow, LearnFuture, ModelClient, ModelEvent, ModelStream,
    WarmFuture,
};
use decode::ChunkDecoder;

/// How to reach an OpenAI-compatible server.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// `http://host:port`, with or without a trailing `/v1`.
    pub base_url: String,
    /// Sent as a Bearer token. Never logged, never echoed in errors.
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Longest silence between two pieces of a stream before it counts as stalled.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// Retry a round whose answer describes a tool call without making one, with the
    /// call required. Off for servers that reject `tool_choice`.
    pub force_tool_retry: bool,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(5),
            // Local servers can take minutes to read a long prompt before the first
            // token; only a silence longer than that is a stall.
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
            force_tool_retry: true,
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .field("force_tool_retry", &self.force_tool_retry)
            .finish()
    }
}

/// A client for one server. Cheap to clone.
#[derive(Clone)]
pub struct OpenAiClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// The base is normalized: scheme, host, port and any path prefix, without
    /// `/v1` or a trailing slash.
    peer: Peer,
    api_key: Option<String>,
    retry: RetryPolicy,
    force_tool_retry: bool,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("base", &self.inner.peer.server)
            .finish_non_exhaustive()
    }
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let base = http::normalize_base(&config.base_url, &["/v1"])?;
        let http = http::client_builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|err| ProviderError::BadUrl {
                url: config.base_url.clone(),
                reason: err.to_string(),
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                peer: Peer {
                    server: base,
                    idle_timeout: config.idle_timeout,
                    unreachable_hint: UNREACHABLE,
                },
                api_key: config.api_key,
                retry: config.retry,
                force_tool_retry: config.force_tool_retry,
            }),
        })
    }

    /// The server as errors and logs name it.
    pub fn server(&self) -> &str {
        &self.inner.peer.server
    }

    /// The ids `GET /v1/models` lists.
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        #[derive(Deserialize)]
        struct Models {
            data: Vec<Model>,
        }
        #[derive(Deserialize)]
        struct Model {
            id: String,
        }
        let url = format!("{}/v1/models", self.server());
        let response = self.authorized(self.inner.http.get(&url)).send().await;
        let response = http::check(&self.inner.peer, response)
            .await
            .map_err(|failure| failure.error)?;
        let body = response
            .bytes()
            .await
            .map_err(|err| http::transport_error(&self.inner.peer, &err))?;
        let models: Models =
            serde_json::from_slice(&body).map_err(|err| ProviderError::Protocol {
                server: self.server().to_owned(),
                detail: format!("GET /v1/models did not return a model list: {err}"),
            })?;
        Ok(models.data.into_iter().map(|model| model.id).collect())
    }

    /// The model's context window, from whichever local server's own answer says it
    /// (see [`context`]); `None` when none does.
    pub async fn context_window(&self, model: &str) -> Option<ContextWindow> {
        self.said(model).await.window
    }

    /// What the server says of `model`: its window, and whether its chat template
    /// takes tools. Asked once in a while (see `windows`).
    pub async fn said(&self, model: &str) -> Said {
        windows::remembered(self.server(), model, self.probe_context(model)).await
    }

    /// Asks every way in [`context::PROBES`] at once (each is a round trip the first
    /// answer waits for); the first in their order that answers wins.
    async fn probe_context(&self, model: &str) -> Said {
        let asked = context::PROBES.iter().map(|(path, _)| self.probe(path));
        let answers = join_all(asked).await;
        let window = context::PROBES
            .iter()
            .zip(&answers)
            .find_map(|((_, read), answer)| answer.as_ref().and_then(|a| read(a, model)));
        let props = context::PROBES
            .iter()
            .zip(&answers)
            .find_map(|((path, _), answer)| (*path == "/props").then_some(answer.as_ref()))
            .flatten();
        let listed = answers.first().and_then(Option::as_ref);
        Said {
            window,
            tools_in_text: props.and_then(context::template_takes_tools) == Some(false),
            slots: props
                .and_then(|props| crate::facts::read_openai(Some(props), None, false).slots),
            params: listed.and_then(|models| context::params(models, model)),
            // Only llama.cpp's server answers `/props` with its slots.
            reads_progress: props.is_some_and(|props| props.get("total_slots").is_some()),
        }
    }

    /// What the server says of itself (see [`crate::facts`]); an error when it does
    /// not list its models.
    pub async fn facts(&self) -> Result<crate::ServerFacts, ProviderError> {
        let (listed, props, version, lm_studio) = futures_util::join!(
            self.list_models(),
            self.probe("/props"),
            self.probe("/version"),
            self.probe("/api/v0/models"),
        );
        listed?;
        Ok(crate::facts::read_openai(
            props.as_ref(),
            version.as_ref(),
            lm_studio.is_some(),
        ))
    }

    /// One way of asking: the answer, or `None` when this server has no such route.
    async fn probe(&self, path: &str) -> Option<serde_json::Value> {
        let url = format!("{}{path}", self.server());
        let request = self.inner.http.get(&url).timeout(context::PROBE_TIMEOUT);
        let response = self.authorized(request).send().await;
        let response = http::check(&self.inner.peer, response).await.ok()?;
        let body = response.bytes().await.ok()?;
        serde_json::from_slice(&body).ok()
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.inner.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// One streamed answer, `tool_choice` as given.
    fn answer(&self, request: Arc<ChatRequest>, tool_choice: Option<&'static str>) -> ModelStream {
        let client = self.clone();
        let open = move || {
            let client = client.clone();
            let request = Arc::clone(&request);
            Box::pin(async move { client.open(&request, tool_choice).await }) as _
        };
        http::stream_answer(
            &self.inner.peer,
            self.inner.retry,
            Framing::Sse,
            open,
            ChunkDecoder::new(),
        )
    }

    async fn open(
        &self,
        request: &ChatRequest,
        tool_choice: Option<&'static str>,
    ) -> Result<reqwest::Response, OpenFailure> {
        let images = images::wanted(self.server(), &request.model, &request.messages);
        match self.send(request, tool_choice, images).await {
            Err(failure)
                if images && images::refused(self.server(), &request.model, &failure.error) =>
            {
                self.send(request, tool_choice, false).await
            }
            sent => sent,
        }
    }

    async fn send(
        &self,
        request: &ChatRequest,
        tool_choice: Option<&'static str>,
        images: bool,
    ) -> Result<reqwest::Response, OpenFailure> {
        let body = serde_json::to_vec(&request::body(
            request,
            tool_choice,
            images,
            self.extras(&request.model),
        ))
        .map_err(|err| ProviderError::Protocol {
            server: self.server().to_owned(),
            detail: format!("the request could not be encoded: {err}"),
        })?;
        tracing::debug!(server = %self.server(), model = %request.model,
            messages = request.messages.len(), tools = request.tools.len(), ?tool_choice, "chat request");
        let response = self
            .authorized(
                self.inner
                    .http
                    .post(format!("{}/v1/chat/completions", self.server())),
            )
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body)
            .send()
            .await;
        match http::check(&self.inner.peer, response).await {
            Err(failure) if names_unknown_model(&failure.error) => {
                Err(self.unknown_model(&request.model, failure).await)
            }
            Err(failure) => Err(http::wrong_place(
                failure,
                "check that the address is an OpenAI-compatible server (it should answer \
                 /v1/chat/completions), or speak Ollama's API to it (the server's API in \
                 Settings; --dialect ollama for cairn)",
            )),
            ok => ok,
        }
    }

    /// What this server is asked beyond the OpenAI API for `model`: only llama.cpp's
    /// is (a hosted API may refuse a field it does not know).
    fn extras(&self, model: &str) -> request::Extras {
        let Some(said) = windows::said(self.server(), model) else {
            return request::Extras::default();
        };
        request::Extras {
            progress: said.reads_progress,
            grammar: crate::grammar::holds(self.server(), model, &said),
        }
    }

    /// Replaces a "no such model" refusal with one that lists the models there are,
    /// when the server will say.
    async fn unknown_model(&self, model: &str, failure: OpenFailure) -> OpenFailure {
        match self.list_models().await {
            Ok(available) if !available.iter().any(|m| m == model) => {
                OpenFailure::from(ProviderError::UnknownModel {
                    server: self.server().to_owned(),
                    model: model.to_owned(),
                    available,
                    hint: "Load it in the server, or choose one it has.".into(),
                })
            }
            _ => failure,
        }
    }
}

const UNREACHABLE: &str = "Is the model server running at that address?";

/// Whether an error answer says the model does not exist. Servers word it many ways.
fn names_unknown_model(error: &ProviderError) -> bool {
    let ProviderError::Http {
        status, message, ..
    } = error
    else {
        return false;
    };
    let message = message.to_lowercase();
    matches!(status, 400 | 404)
        && message.contains("model")
        && [
            "not found",
            "does not exist",
            "not exist",
            "not a valid model",
            "model_not_found",
            "no such model",
            "supported api model names",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
}

impl ModelClient for OpenAiClient {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let known: Vec<String> = request.tools.iter().map(|tool| tool.name.clone()).collect();
        let in_text = !known.is_empty()
            && (self.tools_in_text(&request.model) || self.extras(&request.model).grammar);
        let request = Arc::new(sent::as_sent(self.server(), request));
        let first = adapt::text_calls(self.answer(Arc::clone(&request), None), known.clone());
        // Nothing to require a call of when the tools are only text.
        if !self.inner.force_tool_retry || in_text {
            return first;
        }
        let client = self.clone();
        let retry_known = known.clone();
        adapt::forced_retry(first, known, move || {
            adapt::text_calls(client.answer(request, Some("required")), retry_known)
        })
    }

    fn context_window<'a>(&'a self, model: &'a str) -> ContextFuture<'a> {
        Box::pin(OpenAiClient::context_window(self, model))
    }

    fn tools_in_text(&self, model: &str) -> bool {
        windows::tools_in_text(self.server(), model)
    }

    fn params(&self, model: &str) -> Option<u64> {
        windows::said(self.server(), model).and_then(|said| said.params)
    }

    fn keeps_prefix(&self, model: &str) -> bool {
        warm::keeps_prefix(self.server(), model)
    }

    fn warm(&self, request: ChatRequest) -> WarmFuture<'_> {
        // As the turn will send it, tools in text or not, without the forced retry.
        let request = warm::request(sent::as_sent(self.server(), request));
        Box::pin(warm::drain(self.server(), self.answer(request, None)))
    }

    fn learn_window<'a>(&'a self, model: &'a str, window: ContextWindow) -> LearnFuture<'a> {
        windows::learn_window(self.server(), model, window);
        Box::pin(std::future::ready(()))
    }
}

/// Decodes a streamed response body (raw SSE bytes) into model events. Public so
/// benchmarks and tests can drive the exact production path without a socket.
pub fn decode_body<S, E>(
    server: String,
    body: S,
    idle_timeout: Duration,
) -> impl Stream<Item = Result<ModelEvent, ProviderError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    http::decode(
        server,
        body,
        idle_timeout,
        Framing::Sse,
        ChunkDecoder::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_key_never_shows_in_debug_output() {
        let mut config = OpenAiConfig::new("http://localhost:1");
        config.api_key = Some("sk-very-secret".into());
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        let client = OpenAiClient::new(config).unwrap();
        assert!(!format!("{client:?}").contains("sk-very-secret"));
    }
}
