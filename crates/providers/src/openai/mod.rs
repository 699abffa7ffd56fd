//! The OpenAI-compatible dialect: LM Studio, vLLM, llama.cpp's server, Ollama's `/v1`,
//! and hosted endpoints.
//!
//! request → `POST {base}/v1/chat/completions` (`stream: true`) → SSE lines
//! ([`sse`]) → chunk payloads ([`decode`]) → [`ModelEvent`]s.

pub mod decode;
mod request;
pub mod sse;

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use serde::Deserialize;

use crate::error::ProviderError;
use crate::model::{ChatRequest, ModelClient, ModelEvent, ModelStream};
use decode::{ChunkDecoder, Progress};
use sse::SseDecoder;

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
    /// Normalized: scheme, host, port and any path prefix, without `/v1` or a
    /// trailing slash. Also how errors name the server.
    base: String,
    api_key: Option<String>,
    idle_timeout: Duration,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("base", &self.inner.base)
            .finish_non_exhaustive()
    }
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let base = normalize_base(&config.base_url)?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|err| ProviderError::BadUrl {
                url: config.base_url.clone(),
                reason: err.to_string(),
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                base,
                api_key: config.api_key,
                idle_timeout: config.idle_timeout,
            }),
        })
    }

    /// The server as errors and logs name it.
    pub fn server(&self) -> &str {
        &self.inner.base
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
        let url = format!("{}/v1/models", self.inner.base);
        let response = self.authorized(self.inner.http.get(&url)).send().await;
        let response = self.check(response).await?;
        let body = response
            .bytes()
            .await
            .map_err(|err| self.transport_error(&err))?;
        let models: Models =
            serde_json::from_slice(&body).map_err(|err| ProviderError::Protocol {
                server: self.inner.base.clone(),
                detail: format!("GET /v1/models did not return a model list: {err}"),
            })?;
        Ok(models.data.into_iter().map(|model| model.id).collect())
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.inner.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    async fn open(&self, request: ChatRequest) -> Result<reqwest::Response, ProviderError> {
        let url = format!("{}/v1/chat/completions", self.inner.base);
        let body = serde_json::to_vec(&request::body(&request)).map_err(|err| {
            ProviderError::Protocol {
                server: self.inner.base.clone(),
                detail: format!("the request could not be encoded: {err}"),
            }
        })?;
        tracing::debug!(server = %self.inner.base, model = %request.model,
            messages = request.messages.len(), tools = request.tools.len(), "chat request");
        let response = self
            .authorized(self.inner.http.post(&url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body)
            .send()
            .await;
        self.check(response).await
    }

    /// Turns transport failures and non-2xx answers into errors that carry the
    /// server's own message.
    async fn check(
        &self,
        response: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<reqwest::Response, ProviderError> {
        let response = response.map_err(|err| self.transport_error(&err))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.bytes().await.unwrap_or_default();
        Err(ProviderError::Http {
            server: self.inner.base.clone(),
            status: status.as_u16(),
            message: error_body_message(&body, status.canonical_reason()),
        })
    }

    fn transport_error(&self, err: &reqwest::Error) -> ProviderError {
        let server = self.inner.base.clone();
        let detail = root_cause(err);
        if err.is_builder() {
            ProviderError::BadUrl {
                url: server,
                reason: detail,
            }
        } else if err.is_connect() {
            ProviderError::Unreachable { server, detail }
        } else if err.is_timeout() {
            ProviderError::Stalled {
                server,
                seconds: self.inner.idle_timeout.as_secs(),
            }
        } else {
            ProviderError::StreamCut { server, detail }
        }
    }
}

impl ModelClient for OpenAiClient {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let client = self.clone();
        let server = self.inner.base.clone();
        let idle = self.inner.idle_timeout;
        Box::pin(
            stream::once(async move { client.open(request).await }).flat_map(move |opened| {
                let server = server.clone();
                match opened {
                    Ok(response) => {
                        let body = response.bytes_stream();
                        decode_body(server, body, idle).left_stream()
                    }
                    Err(err) => stream::iter([Err(err)]).right_stream(),
                }
            }),
        )
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
    let state = BodyState {
        server,
        body: Box::pin(body),
        idle_timeout,
        sse: SseDecoder::new(),
        chunks: ChunkDecoder::new(),
        scratch: Vec::new(),
        queue: VecDeque::new(),
        failure: None,
        over: false,
    };
    stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        if item.is_err() {
            state.over = true;
            state.queue.clear();
        }
        Some((item, state))
    })
}

struct BodyState<S> {
    server: String,
    body: Pin<Box<S>>,
    idle_timeout: Duration,
    sse: SseDecoder,
    chunks: ChunkDecoder,
    scratch: Vec<ModelEvent>,
    queue: VecDeque<ModelEvent>,
    /// An error found after events of the same read: delivered once they are.
    failure: Option<ProviderError>,
    over: bool,
}

impl<S, E> BodyState<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::error::Error,
{
    async fn next(&mut self) -> Option<Result<ModelEvent, ProviderError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(Ok(event));
            }
            if let Some(failure) = self.failure.take() {
                return Some(Err(failure));
            }
            if self.over {
                return None;
            }
            let read = self.read().await;
            self.queue.extend(self.scratch.drain(..));
            if let Err(err) = read {
                self.failure = Some(err);
            }
        }
    }

    /// Reads one piece of the body and decodes whatever it completes into `scratch`.
    async fn read(&mut self) -> Result<(), ProviderError> {
        let piece = tokio::time::timeout(self.idle_timeout, self.body.next())
            .await
            .map_err(|_| ProviderError::Stalled {
                server: self.server.clone(),
                seconds: self.idle_timeout.as_secs(),
            })?;
        let Self {
            server,
            sse,
            chunks,
            scratch,
            over,
            ..
        } = self;
        match piece {
            Some(Ok(bytes)) => {
                sse.push(&bytes, |payload| {
                    if *over {
                        return Ok(());
                    }
                    if chunks.push(server, payload, scratch)? == Progress::Done {
                        *over = true;
                    }
                    Ok::<(), ProviderError>(())
                })?;
            }
            Some(Err(err)) => {
                return Err(ProviderError::StreamCut {
                    server: server.clone(),
                    detail: root_cause(&err),
                });
            }
            None => {
                sse.finish(|payload| {
                    if !*over && chunks.push(server, payload, scratch)? == Progress::Done {
                        *over = true;
                    }
                    Ok::<(), ProviderError>(())
                })?;
                if !*over && !chunks.saw_finish() {
                    return Err(ProviderError::StreamCut {
                        server: server.clone(),
                        detail: "the connection closed before the answer was complete".into(),
                    });
                }
                chunks.finish_into(scratch);
                *over = true;
            }
        }
        Ok(())
    }
}

/// The server's own words from an error body, or the status text if it has none.
pub(crate) fn error_body_message(body: &[u8], fallback: Option<&str>) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        for key in ["error", "message", "detail"] {
            if let Some(inner) = value.get(key) {
                return decode::error_message(inner);
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        fallback.unwrap_or("no details given").to_owned()
    } else {
        text.chars().take(500).collect()
    }
}

/// `http://host:port[/prefix]` from what a user typed, or why it cannot be used.
pub(crate) fn normalize_base(url: &str) -> Result<String, ProviderError> {
    let bad = |reason: &str| ProviderError::BadUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let parsed = reqwest::Url::parse(url.trim())
        .map_err(|err| bad(&format!("{err}; write it like http://localhost:1234")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("only http:// and https:// addresses are supported"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("the address has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("the address must not have a ?query or #fragment"));
    }
    let mut base = parsed.as_str().trim_end_matches('/').to_owned();
    if let Some(stripped) = base.strip_suffix("/v1") {
        base = stripped.to_owned();
    }
    Ok(base)
}

/// The innermost cause of an error, which is where "Connection refused" lives.
pub(crate) fn root_cause(err: &dyn std::error::Error) -> String {
    let mut current = err;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalized_or_refused() {
        assert_eq!(
            normalize_base("http://localhost:1234").unwrap(),
            "http://localhost:1234"
        );
        assert_eq!(
            normalize_base("http://localhost:1234/v1/").unwrap(),
            "http://localhost:1234"
        );
        assert_eq!(
            normalize_base("https://example.org/api/v1").unwrap(),
            "https://example.org/api"
        );
        for bad in [
            "localhost:1234",
            "ftp://x",
            "http://",
            "not a url",
            "http://h/?q=1",
        ] {
            assert!(
                matches!(normalize_base(bad), Err(ProviderError::BadUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn error_bodies_yield_the_servers_message() {
        assert_eq!(
            error_body_message(
                br#"{"error":{"message":"model 'x' not found","code":404}}"#,
                None
            ),
            "model 'x' not found"
        );
        assert_eq!(error_body_message(br#"{"error":"bad"}"#, None), "bad");
        assert_eq!(
            error_body_message(br#"{"object":"error","message":"old vllm"}"#, None),
            "old vllm"
        );
        assert_eq!(error_body_message(b"", Some("Not Found")), "Not Found");
        assert_eq!(error_body_message(b"plain text", None), "plain text");
    }

    #[test]
    fn the_api_key_never_shows_in_debug_output() {
        let mut config = OpenAiConfig::new("http://localhost:1");
        config.api_key = Some("sk-very-secret".into());
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        let client = OpenAiClient::new(config).unwrap();
        assert!(!format!("{client:?}").contains("sk-very-secret"));
    }
}
