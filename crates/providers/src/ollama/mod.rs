//! Ollama's native API.
//!
//! round → context window (`GET /api/ps`, else `POST /api/show` capped; cached) → `POST /api/chat` with
//! `think: true` (dropped and remembered if the model cannot think) and the tools
//! (dropped and remembered if the model cannot call them) → NDJSON ([`decode`]) →
//! text calls converted → [`ModelEvent`]s. Besides chat: `GET /api/tags` lists the
//! models, `POST /api/pull` streams a download's progress.

pub mod decode;
mod request;

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::adapt;
use crate::http::{self, Framing, Lines, OpenFailure, Peer, RetryPolicy};
use crate::windows::{self, Said};
use crate::{images, sent, warm};
use cairn_core::model::ProviderError;
use cairn_core::model::{
    ChatRequest, ContextFuture, ContextWindow, LearnFuture, ModelClient, ModelEvent, ModelStream,
    WarmFuture,
};
use decode::ChatDecoder;
use request::Shape;

/// How to reach an Ollama server.
#[derive(Debug, Clone)]
pub struct OllamaConfig {
    /// `http://host:port`, with or without a trailing `/api`.
    pub base_url: String,
    pub connect_timeout: Duration,
    /// Longest silence between two pieces of a stream before it counts as stalled.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// Ask thinking models to think (and stream their reasoning).
    pub think: bool,
    /// The largest context window Cairn asks for. Ollama's own default is small and
    /// silently truncates long prompts, so Cairn asks for the model's real length up
    /// to this cap (memory grows with it).
    pub context_cap: u32,
}

impl OllamaConfig {
    pub const DEFAULT_CONTEXT_CAP: u32 = 32_768;

    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
            think: true,
            context_cap: Self::DEFAULT_CONTEXT_CAP,
        }
    }
}

/// A client for one Ollama server. Cheap to clone; clones share what was learned
/// about models (which cannot think, which cannot call tools).
#[derive(Clone)]
pub struct OllamaClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    peer: Peer,
    retry: RetryPolicy,
    think: bool,
    context_cap: u32,
    learned: Mutex<Learned>,
}

#[derive(Default)]
struct Learned {
    cannot_think: HashSet<String>,
    cannot_call_tools: HashSet<String>,
}

impl fmt::Debug for OllamaClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OllamaClient")
            .field("base", &self.inner.peer.server)
            .finish_non_exhaustive()
    }
}

/// A model the server has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalModel {
    pub name: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub details: ModelDetails,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelDetails {
    #[serde(default)]
    pub family: String,
    #[serde(default)]
    pub parameter_size: String,
    #[serde(default)]
    pub quantization_level: String,
}

/// One line of `POST /api/pull` progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullProgress {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
}

/// The status of a pull's last line when the model is in place.
pub const PULL_SUCCESS: &str = "success";

const UNREACHABLE: &str = "Is Ollama running? Start it with `ollama serve`.";

/// How long a question about a model may take: a turn waits for the answer.
const INFO_TIMEOUT: Duration = Duration::from_secs(10);

impl OllamaClient {
    pub fn new(config: OllamaConfig) -> Result<Self, ProviderError> {
        let base = http::normalize_base(&config.base_url, &["/api"])?;
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
                retry: config.retry,
                think: config.think,
                context_cap: config.context_cap,
                learned: Mutex::default(),
            }),
        })
    }

    /// The server as errors and logs name it.
    pub fn server(&self) -> &str {
        &self.inner.peer.server
    }

    /// The models `GET /api/tags` lists.
    pub async fn list_models(&self) -> Result<Vec<LocalModel>, ProviderError> {
        #[derive(Deserialize)]
        struct Tags {
            models: Vec<LocalModel>,
        }
        let response = self.inner.http.get(self.url("/api/tags")).send().await;
        let body = self.body(response).await?;
        let tags: Tags = serde_json::from_slice(&body).map_err(|err| ProviderError::Protocol {
            server: self.server().to_owned(),
            detail: format!("GET /api/tags did not return a model list: {err}"),
        })?;
        Ok(tags.models)
    }

    /// The context the model runs with: as loaded when `GET /api/ps` lists it (so
    /// Cairn asks for what the server already holds instead of reloading it), else
    /// its own length from `POST /api/show`, up to the cap. Both are asked at once;
    /// asked again after a few minutes (see `windows`).
    pub async fn context_window(&self, model: &str) -> Option<ContextWindow> {
        self.said(model).await.window
    }

    /// What the server says of `model`: its window, and (from the capabilities
    /// `/api/show` lists) whether it takes tools.
    pub async fn said(&self, model: &str) -> Said {
        windows::remembered(self.server(), model, async {
            let (loaded, show) = futures_util::join!(self.loaded_context(model), self.show(model));
            let length = show.as_ref().and_then(context_length_of);
            let window = match loaded {
                Some(tokens) => Some(ContextWindow::new(tokens, "Ollama, as loaded")),
                None => length.map(|length| {
                    let cap = self.inner.context_cap;
                    if length > cap {
                        ContextWindow::new(cap, format!("Ollama, the model's {length} capped"))
                    } else {
                        ContextWindow::new(length, "Ollama, the model's length")
                    }
                }),
            };
            Said {
                window,
                tools_in_text: show.as_ref().and_then(takes_tools) == Some(false),
                slots: None,
                params: show.as_ref().and_then(parameter_count),
                reads_progress: false,
            }
        })
        .await
    }

    /// `context_length` of the model in `GET /api/ps`, when it is loaded and the
    /// server is new enough to say.
    async fn loaded_context(&self, model: &str) -> Option<u32> {
        let ps = self.inner.http.get(self.url("/api/ps"));
        let ps = self
            .ask(ps, model, "could not list the loaded models")
            .await?;
        loaded_context_of(&ps, model)
    }

    /// `POST /api/show`: the model's details, its length among them.
    async fn show(&self, model: &str) -> Option<Value> {
        let show = self
            .inner
            .http
            .post(self.url("/api/show"))
            .json(&json!({"model": model}));
        self.ask(show, model, "could not read the model's details")
            .await
    }

    /// A question about `model` whose answer is optional: a failure is logged as
    /// `failed` and is `None`.
    async fn ask(
        &self,
        request: reqwest::RequestBuilder,
        model: &str,
        failed: &str,
    ) -> Option<Value> {
        let response = request.timeout(INFO_TIMEOUT).send().await;
        match self.body(response).await {
            Ok(body) => serde_json::from_slice(&body).ok(),
            Err(err) => {
                tracing::debug!(model, error = %err, "{failed}");
                None
            }
        }
    }

    /// Downloads a model, streaming Ollama's progress lines. The last item is the
    /// [`PULL_SUCCESS`] line or an error: a stream that ends before success is one.
    pub fn pull(
        &self,
        model: &str,
    ) -> impl Stream<Item = Result<PullProgress, ProviderError>> + Send + use<> {
        let client = self.clone();
        let body = json!({"model": model, "stream": true});
        stream::once(async move {
            let response = client
                .inner
                .http
                .post(client.url("/api/pull"))
                .json(&body)
                .send()
                .await;
            http::check(&client.inner.peer, response)
                .await
                .map_err(|failure| failure.error)
                .map(|response| (client, response))
        })
        .flat_map(|opened| match opened {
            Err(err) => stream::iter(vec![Err(err)]).left_stream(),
            Ok((client, response)) => {
                pull_lines(client.server().to_owned(), response.bytes_stream()).right_stream()
            }
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.inner.peer.server)
    }

    async fn body(
        &self,
        response: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<Bytes, ProviderError> {
        let response = http::check(&self.inner.peer, response)
            .await
            .map_err(|failure| failure.error)?;
        response
            .bytes()
            .await
            .map_err(|err| http::transport_error(&self.inner.peer, &err))
    }

    fn learned(&self) -> std::sync::MutexGuard<'_, Learned> {
        self.inner
            .learned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends one round, learning from the refusals Ollama has for models that lack
    /// a capability, and naming the models that exist when this one does not.
    async fn open(&self, request: &ChatRequest) -> Result<reqwest::Response, OpenFailure> {
        let num_ctx = self
            .context_window(&request.model)
            .await
            .map(|window| window.tokens);
        let mut images = images::wanted(self.server(), &request.model, &request.messages);
        loop {
            let shape = {
                let learned = self.learned();
                Shape {
                    think: self.inner.think && !learned.cannot_think.contains(&request.model),
                    tools: !request.tools.is_empty()
                        && !learned.cannot_call_tools.contains(&request.model),
                    num_ctx,
                    images,
                }
            };
            tracing::debug!(server = %self.server(), model = %request.model, ?shape, "chat request");
            let response = self
                .inner
                .http
                .post(self.url("/api/chat"))
                .json(&request::body(request, shape))
                .send()
                .await;
            let failure = match http::check(&self.inner.peer, response).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            let ProviderError::Http {
                status, message, ..
            } = &failure.error
            else {
                return Err(failure);
            };
            if *status == 400 && shape.think && message.contains("does not support thinking") {
                tracing::info!(model = %request.model, "the model cannot think; asking without thinking");
                self.learned().cannot_think.insert(request.model.clone());
                continue;
            }
            if *status == 400 && shape.tools && message.contains("does not support tools") {
                tracing::warn!(model = %request.model, "the model cannot call tools; it will answer without them");
                self.learned()
                    .cannot_call_tools
                    .insert(request.model.clone());
                continue;
            }
            if images && images::refused(self.server(), &request.model, &failure.error) {
                images = false;
                continue;
            }
            if *status == 404 && message.contains("model") && message.contains("not found") {
                return Err(self.unknown_model(&request.model, failure).await);
            }
            return Err(http::wrong_place(
                failure,
                "check that the address is an Ollama server (it should answer /api/chat), or \
                 speak the OpenAI-compatible API to it (the server's API in Settings; \
                 --dialect openai for cairn)",
            ));
        }
    }

    async fn unknown_model(&self, model: &str, failure: OpenFailure) -> OpenFailure {
        match self.list_models().await {
            Ok(models) => OpenFailure::from(ProviderError::UnknownModel {
                server: self.server().to_owned(),
                model: model.to_owned(),
                available: models.into_iter().map(|m| m.name).collect(),
                hint: format!("Pull it with `cairn pull {model}`, or choose one it has."),
            }),
            Err(_) => failure,
        }
    }
}

/// The `context_length` `/api/ps` gives `model` (named with or without its tag).
fn loaded_context_of(ps: &Value, model: &str) -> Option<u32> {
    let with_tag = if model.contains(':') {
        model.to_owned()
    } else {
        format!("{model}:latest")
    };
    ps.get("models")?
        .as_array()?
        .iter()
        .find(|entry| {
            ["name", "model"].iter().any(|key| {
                entry
                    .get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|name| name == model || name == with_tag)
            })
        })?
        .get("context_length")?
        .as_u64()
        .and_then(|length| u32::try_from(length).ok())
        .filter(|&length| length > 0)
}

/// Whether an `/api/show` answer lists `tools` among the model's capabilities, when
/// the server is new enough to list them.
fn takes_tools(show: &Value) -> Option<bool> {
    let capabilities = show.get("capabilities")?.as_array()?;
    Some(capabilities.iter().any(|c| c.as_str() == Some("tools")))
}

/// `model_info["general.parameter_count"]` of an `/api/show` answer.
fn parameter_count(show: &Value) -> Option<u64> {
    show.get("model_info")?
        .get("general.parameter_count")?
        .as_u64()
        .filter(|&n| n > 0)
}

/// `model_info["<family>.context_length"]` of an `/api/show` answer.
fn context_length_of(show: &Value) -> Option<u32> {
    show.get("model_info")?
        .as_object()?
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))
        .and_then(|(_, value)| value.as_u64())
        .and_then(|length| u32::try_from(length).ok())
}

fn pull_lines<S, E>(
    server: String,
    body: S,
) -> impl Stream<Item = Result<PullProgress, ProviderError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    struct State<S> {
        server: String,
        body: Pin<Box<S>>,
        lines: Lines,
        queue: VecDeque<Result<PullProgress, ProviderError>>,
        ended: bool,
        /// The status of the last progress line, `success` once the pull is complete.
        last: String,
    }
    let state = State {
        server,
        body: Box::pin(body),
        lines: Lines::new(Framing::Ndjson),
        queue: VecDeque::new(),
        ended: false,
        last: String::new(),
    };
    stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                match &item {
                    Ok(progress) => state.last.clone_from(&progress.status),
                    Err(_) => {
                        // The first error ends the pull.
                        state.queue.clear();
                        state.ended = true;
                    }
                }
                return Some((item, state));
            }
            if state.ended {
                return None;
            }
            let next = state.body.next().await;
            let State {
                server,
                lines,
                queue,
                ended,
                last: state_last,
                ..
            } = &mut state;
            let mut deliver = |line: &str| {
                queue.push_back(pull_line(server, line));
                Ok::<(), Infallible>(())
            };
            let _ = match next {
                Some(Ok(bytes)) => lines.push(&bytes, &mut deliver),
                Some(Err(err)) => {
                    queue.push_back(Err(ProviderError::StreamCut {
                        server: server.clone(),
                        detail: http::root_cause(&err),
                    }));
                    Ok(())
                }
                None => {
                    *ended = true;
                    let finished = lines.finish(&mut deliver);
                    let last = queue
                        .iter()
                        .rev()
                        .find_map(|item| item.as_ref().ok())
                        .map_or(state_last.as_str(), |progress| progress.status.as_str());
                    if last != PULL_SUCCESS && !queue.iter().any(Result::is_err) {
                        queue.push_back(Err(ProviderError::StreamCut {
                            server: server.clone(),
                            detail: format!(
                                "the pull ended before it finished (last: {})",
                                if last.is_empty() { "nothing" } else { last }
                            ),
                        }));
                    }
                    finished
                }
            };
        }
    })
}

fn pull_line(server: &str, line: &str) -> Result<PullProgress, ProviderError> {
    #[derive(Deserialize)]
    struct Line {
        #[serde(default)]
        error: Option<Value>,
        #[serde(flatten)]
        progress: Option<PullProgress>,
    }
    let parsed: Line = serde_json::from_str(line).map_err(|err| ProviderError::Protocol {
        server: server.to_owned(),
        detail: format!("a pull progress line is not valid JSON ({err})"),
    })?;
    if let Some(error) = parsed.error {
        return Err(ProviderError::Server {
            server: server.to_owned(),
            message: http::error_message(&error),
        });
    }
    parsed.progress.ok_or_else(|| ProviderError::Protocol {
        server: server.to_owned(),
        detail: "a pull progress line has no status".into(),
    })
}

impl ModelClient for OllamaClient {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let known: Vec<String> = request.tools.iter().map(|tool| tool.name.clone()).collect();
        let answer = self.answer(Arc::new(sent::as_sent(self.server(), request)));
        adapt::text_calls(answer, known)
    }

    fn context_window<'a>(&'a self, model: &'a str) -> ContextFuture<'a> {
        Box::pin(OllamaClient::context_window(self, model))
    }

    fn can_call_tools(&self, model: &str) -> bool {
        !self.learned().cannot_call_tools.contains(model)
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
        let request = warm::request(sent::as_sent(self.server(), request));
        Box::pin(warm::drain(self.server(), self.answer(request)))
    }

    fn learn_window<'a>(&'a self, model: &'a str, window: ContextWindow) -> LearnFuture<'a> {
        windows::learn_window(self.server(), model, window);
        Box::pin(std::future::ready(()))
    }
}

impl OllamaClient {
    /// The server's answer to `request`, retried while it is busy.
    fn answer(&self, request: Arc<ChatRequest>) -> ModelStream {
        let client = self.clone();
        let open = move || {
            let client = client.clone();
            let request = Arc::clone(&request);
            Box::pin(async move { client.open(&request).await }) as _
        };
        http::stream_answer(
            &self.inner.peer,
            self.inner.retry,
            Framing::Ndjson,
            open,
            ChatDecoder::new(),
        )
    }
}

/// Decodes a streamed `/api/chat` body (raw NDJSON bytes) into model events. Public
/// so benchmarks and tests drive the exact production path without a socket.
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
        Framing::Ndjson,
        ChatDecoder::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_length_comes_from_model_info() {
        let show =
            json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}});
        assert_eq!(context_length_of(&show), Some(40960));
        assert_eq!(context_length_of(&json!({"model_info": {}})), None);
        assert_eq!(context_length_of(&json!({})), None);
    }

    #[test]
    fn the_loaded_context_is_found_by_name_with_or_without_its_tag() {
        let ps = json!({"models": [
            {"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096},
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192},
            {"name": "old:latest", "model": "old:latest"}
        ]});
        assert_eq!(loaded_context_of(&ps, "qwen3:8b"), Some(4096));
        assert_eq!(loaded_context_of(&ps, "llama3.2"), Some(8192));
        assert_eq!(
            loaded_context_of(&ps, "qwen3"),
            None,
            "another tag is another model"
        );
        assert_eq!(
            loaded_context_of(&ps, "old"),
            None,
            "an older server does not say"
        );
        assert_eq!(loaded_context_of(&json!({"models": []}), "qwen3:8b"), None);
    }
}
