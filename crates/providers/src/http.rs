//! What both dialects share on the wire.
//!
//! open (retrying 429/503 before the first byte, announced as `Reconnecting`) →
//! body bytes → lines (SSE `data:` payloads or NDJSON) → the dialect's decoder →
//! model events; a silent server times out, a malformed line is skipped if the
//! stream recovers.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use memchr::memchr;

use cairn_core::model::{ModelEvent, ModelStream};
use cairn_core::model::{ProviderError, says_context_overflow};

/// An HTTP client builder with TLS ready: rustls on the `ring` provider (which builds
/// with just a C compiler) and the platform's certificate store. Every client Cairn
/// makes (model servers, web_fetch, MCP over HTTP) starts here.
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Fails only when a provider is already installed, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// How a response body is cut into payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events; each `data:` line is one payload.
    ///
    /// Consecutive data lines are not joined until a blank line as the SSE spec
    /// says: chat servers put one JSON object per line, and some omit the blank
    /// separators, which the spec's reading would turn into invalid JSON.
    Sse,
    /// One JSON object per line (Ollama).
    Ndjson,
}

/// Splits a byte stream into payloads.
#[derive(Debug)]
pub struct Lines {
    framing: Framing,
    pending: Vec<u8>,
}

impl Lines {
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            pending: Vec::new(),
        }
    }

    /// Feeds bytes; calls `on_payload` with each complete payload, in order.
    pub fn push<E>(
        &mut self,
        bytes: &[u8],
        mut on_payload: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.pending.is_empty() {
            let consumed = self.lines(bytes, &mut on_payload)?;
            self.pending.extend_from_slice(&bytes[consumed..]);
        } else {
            self.pending.extend_from_slice(bytes);
            let pending = std::mem::take(&mut self.pending);
            let consumed = self.lines(&pending, &mut on_payload)?;
            self.pending = pending;
            self.pending.drain(..consumed);
        }
        Ok(())
    }

    /// Delivers a last line that had no newline.
    pub fn finish<E>(
        &mut self,
        mut on_payload: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let rest = std::mem::take(&mut self.pending);
        self.line(&rest, &mut on_payload)
    }

    fn lines<E>(
        &self,
        bytes: &[u8],
        on_payload: &mut impl FnMut(&str) -> Result<(), E>,
    ) -> Result<usize, E> {
        let mut start = 0;
        while let Some(end) = memchr(b'\n', &bytes[start..]) {
            self.line(&bytes[start..start + end], on_payload)?;
            start += end + 1;
        }
        Ok(start)
    }

    fn line<E>(
        &self,
        line: &[u8],
        on_payload: &mut impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let payload = match self.framing {
            Framing::Sse => match line.strip_prefix(b"data:") {
                Some(payload) => payload.strip_prefix(b" ").unwrap_or(payload),
                // Blank separators, `: comments`, `event:`, `id:` and `retry:` carry
                // nothing a chat stream needs.
                None => return Ok(()),
            },
            Framing::Ndjson if line.iter().all(u8::is_ascii_whitespace) => return Ok(()),
            Framing::Ndjson => line,
        };
        match std::str::from_utf8(payload) {
            Ok(text) => on_payload(text),
            // Not UTF-8 cannot be JSON; the decoder rejects this with a readable error
            // rather than the line vanishing.
            Err(_) => on_payload("\u{FFFD}"),
        }
    }
}

/// Whether a payload said the answer is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    More,
    Done,
}

/// A dialect's payload decoder: one streamed answer's state.
pub trait BodyDecoder: Send + 'static {
    /// Decodes one payload into `out`. `Err(Protocol)` marks the payload unreadable
    /// (skipped if the stream recovers); any other error ends the stream.
    fn push(
        &mut self,
        server: &str,
        payload: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Progress, ProviderError>;

    /// Whether the server said why it stopped: a stream that ends without that
    /// was cut off.
    fn saw_finish(&self) -> bool;

    /// Emits what only the end completes (assembled calls, the finish reason).
    fn finish_into(&mut self, out: &mut Vec<ModelEvent>);
}

/// Decodes a body stream with `decoder`. Public (through the dialect modules) so
/// benchmarks and tests drive the exact production path without a socket.
pub fn decode<S, E, D>(
    server: String,
    body: S,
    idle_timeout: Duration,
    framing: Framing,
    decoder: D,
) -> impl Stream<Item = Result<ModelEvent, ProviderError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
    D: BodyDecoder,
{
    let state = Body {
        server,
        body: Box::pin(body),
        idle_timeout,
        lines: Lines::new(framing),
        decoder,
        scratch: Vec::new(),
        queue: VecDeque::new(),
        failure: None,
        readable: 0,
        unreadable: None,
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

struct Body<S, D> {
    server: String,
    body: Pin<Box<S>>,
    idle_timeout: Duration,
    lines: Lines,
    decoder: D,
    scratch: Vec<ModelEvent>,
    queue: VecDeque<ModelEvent>,
    /// An error found after events of the same read: delivered once they are.
    failure: Option<ProviderError>,
    /// Payloads decoded, and the first one that was not, with how many were not.
    readable: usize,
    unreadable: Option<(ProviderError, usize)>,
    over: bool,
}

impl<S, E, D> Body<S, D>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::error::Error,
    D: BodyDecoder,
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
        match piece {
            Some(Ok(bytes)) => self.feed(&bytes),
            Some(Err(err)) => Err(ProviderError::StreamCut {
                server: self.server.clone(),
                detail: root_cause(&err),
            }),
            None => self.end(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        let Self {
            server,
            lines,
            decoder,
            scratch,
            over,
            readable,
            unreadable,
            ..
        } = self;
        lines.push(bytes, |payload| {
            accept(
                server, payload, decoder, scratch, over, readable, unreadable,
            )
        })
    }

    fn end(&mut self) -> Result<(), ProviderError> {
        let Self {
            server,
            lines,
            decoder,
            scratch,
            over,
            readable,
            unreadable,
            ..
        } = self;
        lines.finish(|payload| {
            accept(
                server, payload, decoder, scratch, over, readable, unreadable,
            )
        })?;
        if *readable == 0
            && let Some((first, count)) = unreadable.take()
        {
            tracing::warn!(server = %server, lines = count, "no line of the stream could be read");
            return Err(first);
        }
        if !*over && !decoder.saw_finish() {
            return Err(ProviderError::StreamCut {
                server: server.clone(),
                detail: "the connection closed before the answer was complete".into(),
            });
        }
        decoder.finish_into(scratch);
        *over = true;
        Ok(())
    }
}

/// Hands one payload to the decoder, skipping (and remembering) unreadable ones.
fn accept<D: BodyDecoder>(
    server: &str,
    payload: &str,
    decoder: &mut D,
    scratch: &mut Vec<ModelEvent>,
    over: &mut bool,
    readable: &mut usize,
    unreadable: &mut Option<(ProviderError, usize)>,
) -> Result<(), ProviderError> {
    if *over {
        return Ok(());
    }
    match decoder.push(server, payload, scratch) {
        Ok(progress) => {
            *readable += 1;
            if progress == Progress::Done {
                *over = true;
            }
            Ok(())
        }
        Err(err @ ProviderError::Protocol { .. }) => {
            tracing::warn!(server = %server, error = %err, "skipping a line of the stream");
            match unreadable {
                Some((_, count)) => *count += 1,
                None => *unreadable = Some((err, 1)),
            }
            Ok(())
        }
        Err(other) => Err(other),
    }
}

/// The server a client talks to, as errors name it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    /// The normalized base URL.
    pub server: String,
    pub idle_timeout: Duration,
    /// What to suggest when nothing answers at the address.
    pub unreachable_hint: &'static str,
}

/// How often a busy server is asked again before giving up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            first_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `attempt` (1-based): doubling, or what the server asked
    /// for, never more than `max_delay`.
    pub fn delay(&self, attempt: u32, asked: Option<Duration>) -> Duration {
        let doubling = self.first_delay.saturating_mul(1 << (attempt - 1).min(16));
        asked.unwrap_or(doubling).min(self.max_delay)
    }
}

/// Why a request could not be opened, and how long the server asked to wait.
#[derive(Debug)]
pub struct OpenFailure {
    pub error: ProviderError,
    pub retry_after: Option<Duration>,
}

impl From<ProviderError> for OpenFailure {
    fn from(error: ProviderError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

type Open = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenFailure>> + Send>>;

/// Opens a request (retrying a busy server) and decodes its streamed answer.
pub(crate) fn stream_answer<D: BodyDecoder>(
    peer: &Peer,
    retry: RetryPolicy,
    framing: Framing,
    open: impl Fn() -> Open + Send + Sync + 'static,
    decoder: D,
) -> ModelStream {
    enum Phase<D> {
        /// The attempt to open, after waiting the backoff (zero for the first).
        Open(u32, Duration, D),
        Streaming(ModelStream),
        Over,
    }
    let (server, idle_timeout) = (peer.server.clone(), peer.idle_timeout);
    let step = move |phase: Phase<D>| {
        let server = server.clone();
        let opened = match &phase {
            Phase::Open(..) => Some(open()),
            _ => None,
        };
        async move {
            match phase {
                Phase::Over => None,
                Phase::Streaming(mut events) => {
                    let event = events.next().await?;
                    let next = if event.is_ok() {
                        Phase::Streaming(events)
                    } else {
                        Phase::Over
                    };
                    Some((event, next))
                }
                Phase::Open(attempt, wait, decoder) => {
                    let opened = opened?;
                    // The wait follows the `Reconnecting` event, so the user sees why
                    // nothing happens during it.
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                    match opened.await {
                        Ok(response) => {
                            let body = decode(
                                server,
                                response.bytes_stream(),
                                idle_timeout,
                                framing,
                                decoder,
                            );
                            let mut events: ModelStream = Box::pin(body);
                            let event = events.next().await?;
                            Some((event, Phase::Streaming(events)))
                        }
                        Err(failure) if attempt == 0 && unanswered(&failure.error) => {
                            tracing::info!(server = %server, "connection closed unanswered, asking again");
                            let reconnecting = ModelEvent::Reconnecting {
                                attempt: 1,
                                delay: Duration::ZERO,
                                reason: failure.error.to_string(),
                            };
                            Some((Ok(reconnecting), Phase::Open(1, Duration::ZERO, decoder)))
                        }
                        Err(failure) if attempt < retry.attempts && busy(&failure.error) => {
                            let delay = retry.delay(attempt + 1, failure.retry_after);
                            tracing::info!(server = %server, attempt = attempt + 1, ?delay, "server busy, retrying");
                            let reconnecting = ModelEvent::Reconnecting {
                                attempt: attempt + 1,
                                delay,
                                reason: failure.error.to_string(),
                            };
                            Some((Ok(reconnecting), Phase::Open(attempt + 1, delay, decoder)))
                        }
                        Err(failure) => Some((Err(failure.error), Phase::Over)),
                    }
                }
            }
        }
    };
    Box::pin(stream::unfold(
        Phase::Open(0, Duration::ZERO, decoder),
        step,
    ))
}

/// A server that says it is busy before it has sent anything is worth asking again.
fn busy(error: &ProviderError) -> bool {
    matches!(
        error,
        ProviderError::Http {
            status: 429 | 503,
            ..
        }
    )
}

/// A connection that closed before any answer came (a kept-alive connection the server
/// had already dropped: llama.cpp's does after a while) never reached the model, so one
/// fresh connection is worth trying at once.
fn unanswered(error: &ProviderError) -> bool {
    matches!(error, ProviderError::StreamCut { .. })
}

/// Turns transport failures and non-2xx answers into errors that carry the server's
/// own message (and its Retry-After, if any).
pub(crate) async fn check(
    peer: &Peer,
    response: Result<reqwest::Response, reqwest::Error>,
) -> Result<reqwest::Response, OpenFailure> {
    let response = response.map_err(|err| transport_error(peer, &err))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = response.bytes().await.unwrap_or_default();
    let server = peer.server.clone();
    let message = error_body_message(&body, status.canonical_reason());
    let status = status.as_u16();
    let error = if matches!(status, 400 | 413) && says_context_overflow(&message) {
        let (counted, window) = refused_sizes(&body, &message);
        ProviderError::TooLong {
            server,
            status,
            message,
            counted,
            window,
        }
    } else {
        ProviderError::Http {
            server,
            status,
            message,
        }
    };
    Err(OpenFailure { error, retry_after })
}

/// What a server that refused a request as too long counted of it and the window it
/// has: llama.cpp puts them beside its message (`n_prompt_tokens`, `n_ctx`); Ollama,
/// which wraps llama.cpp's answer in a string, also says them in words ("request (8889
/// tokens) exceeds the available context size (4096 tokens)").
fn refused_sizes(body: &[u8], message: &str) -> (Option<u64>, Option<u32>) {
    fn fields(value: &serde_json::Value) -> Option<(Option<u64>, Option<u32>)> {
        let error = value.get("error")?;
        if let Some(inner) = error.as_str() {
            return fields(&serde_json::from_str(inner).ok()?);
        }
        let counted = error
            .get("n_prompt_tokens")
            .and_then(serde_json::Value::as_u64);
        let window = error
            .get("n_ctx")
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        (counted.is_some() || window.is_some()).then_some((counted, window))
    }
    if let Some(sizes) = serde_json::from_slice(body).ok().as_ref().and_then(fields) {
        return sizes;
    }
    // "(8889 tokens) … (4096 tokens)": the first count is the request's, the second
    // the window's.
    let mut counts = message.split('(').skip(1).filter_map(|part| {
        part.split_once(" tokens)")
            .and_then(|(number, _)| number.trim().parse::<u64>().ok())
    });
    let counted = counts.next();
    let window = counts.next().and_then(|n| u32::try_from(n).ok());
    (counted, window)
}

pub(crate) fn transport_error(peer: &Peer, err: &reqwest::Error) -> ProviderError {
    let server = peer.server.clone();
    let detail = root_cause(err);
    if err.is_builder() {
        ProviderError::BadUrl {
            url: server,
            reason: detail,
        }
    } else if err.is_connect() {
        ProviderError::Unreachable {
            server,
            detail,
            hint: peer.unreachable_hint.to_owned(),
        }
    } else if err.is_timeout() {
        ProviderError::Stalled {
            server,
            seconds: peer.idle_timeout.as_secs(),
        }
    } else {
        ProviderError::StreamCut { server, detail }
    }
}

/// A 404 or 405 on the chat path means the address or the dialect is wrong, not the
/// request: say so beside the server's own words.
pub(crate) fn wrong_place(mut failure: OpenFailure, hint: &str) -> OpenFailure {
    if let ProviderError::Http {
        status: 404 | 405,
        message,
        ..
    } = &mut failure.error
    {
        message.push_str("; ");
        message.push_str(hint);
    }
    failure
}

/// The server's own words from an error body, or the status text if it has none.
pub(crate) fn error_body_message(body: &[u8], fallback: Option<&str>) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        for key in ["error", "message", "detail"] {
            if let Some(inner) = value.get(key) {
                return error_message(inner);
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

/// The human part of an error value: `"text"`, `{"message": …}` or anything else. A
/// text that is itself a JSON error (Ollama passes on its runner's that way) gives
/// that error's words.
pub(crate) fn error_message(error: &serde_json::Value) -> String {
    match error {
        serde_json::Value::String(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(inner) if inner.get("error").is_some() => error_message(&inner["error"]),
            _ => text.clone(),
        },
        serde_json::Value::Object(fields) => match fields.get("message") {
            Some(serde_json::Value::String(text)) => text.clone(),
            _ => error.to_string(),
        },
        other => other.to_string(),
    }
}

/// `scheme://host:port[/prefix]` from what a user typed, without a trailing slash or
/// any of the API suffixes people paste (`/v1`, `/api`), or why it cannot be used.
pub(crate) fn normalize_base(url: &str, api_suffixes: &[&str]) -> Result<String, ProviderError> {
    let bad = |reason: &str| ProviderError::BadUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = url.trim();
    if !trimmed.contains("://") {
        return Err(bad(
            "it needs http:// or https:// in front, like http://localhost:11434",
        ));
    }
    let parsed = reqwest::Url::parse(trimmed).map_err(|err| bad(&url_problem(&err)))?;
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
    for suffix in api_suffixes {
        if let Some(stripped) = base.strip_suffix(suffix) {
            base = stripped.to_owned();
        }
    }
    Ok(base)
}

/// What is wrong with an address, in words (the parser's own are for programmers).
fn url_problem(err: &url::ParseError) -> String {
    use url::ParseError;
    let what = match err {
        ParseError::EmptyHost => "it has no host name",
        ParseError::InvalidPort => "its port is not a number from 1 to 65535",
        ParseError::InvalidIpv4Address | ParseError::InvalidIpv6Address => {
            "its IP address is not valid"
        }
        ParseError::InvalidDomainCharacter | ParseError::IdnaError => {
            "its host name has characters a host name cannot have"
        }
        _ => "it is not an address",
    };
    format!("{what}; write it like http://localhost:11434")
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

    fn payloads(framing: Framing, chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::new(framing);
        let mut out = Vec::new();
        for chunk in chunks {
            lines
                .push::<()>(chunk, |p| {
                    out.push(p.to_owned());
                    Ok(())
                })
                .unwrap();
        }
        lines
            .finish::<()>(|p| {
                out.push(p.to_owned());
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn a_refusal_for_size_says_the_count_and_the_window_in_each_servers_way() {
        let llama = br#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8889,"n_ctx":4096}}"#;
        let message = error_body_message(llama, None);
        assert_eq!(
            message,
            "the request exceeds the available context size, try increasing it"
        );
        assert_eq!(refused_sizes(llama, &message), (Some(8889), Some(4096)));

        // Ollama passes its runner's refusal on as a string holding JSON.
        let inner = r#"{"error":{"code":400,"message":"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8889,"n_ctx":4096}}"#;
        let ollama = serde_json::json!({ "error": inner }).to_string();
        let message = error_body_message(ollama.as_bytes(), None);
        assert_eq!(
            message,
            "request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it",
            "the runner's words, not its JSON"
        );
        assert_eq!(
            refused_sizes(ollama.as_bytes(), &message),
            (Some(8889), Some(4096))
        );

        // Only the words: the first count is the request's, the second the window's.
        let words = br#"{"error":"request (5000 tokens) exceeds the available context size (2048 tokens)"}"#;
        let message = error_body_message(words, None);
        assert_eq!(refused_sizes(words, &message), (Some(5000), Some(2048)));
        // Neither said.
        let bare = br#"{"error":"the input length exceeds the context length"}"#;
        let message = error_body_message(bare, None);
        assert_eq!(refused_sizes(bare, &message), (None, None));
    }

    #[test]
    fn sse_payloads_survive_any_chunk_boundary() {
        let whole =
            b": comment\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\nevent: x\ndata: [DONE]\n\n";
        let expected = ["{\"a\":1}", "{\"b\":2}", "[DONE]"];
        assert_eq!(payloads(Framing::Sse, &[whole]), expected);
        for cut in 1..whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(payloads(Framing::Sse, &[a, b]), expected, "cut at {cut}");
        }
        assert_eq!(payloads(Framing::Sse, &[b"data: 1\ndata: 2"]), ["1", "2"]);
    }

    #[test]
    fn ndjson_lines_skip_blanks_and_keep_a_last_line_without_newline() {
        assert_eq!(
            payloads(Framing::Ndjson, &[b"{\"a\":1}\n\n  \r\n{\"b\"", b":2}"]),
            ["{\"a\":1}", "{\"b\":2}"]
        );
    }

    #[test]
    fn retry_delays_double_honour_the_server_and_stay_bounded() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, None), Duration::from_millis(500));
        assert_eq!(policy.delay(3, None), Duration::from_secs(2));
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(10)
        );
        assert_eq!(policy.delay(30, None), Duration::from_secs(10));
    }

    #[test]
    fn base_urls_are_normalized_or_refused() {
        let openai = ["/v1"];
        assert_eq!(
            normalize_base("http://localhost:1234", &openai).unwrap(),
            "http://localhost:1234"
        );
        assert_eq!(
            normalize_base("http://localhost:1234/v1/", &openai).unwrap(),
            "http://localhost:1234"
        );
        assert_eq!(
            normalize_base("https://example.org/api/v1", &openai).unwrap(),
            "https://example.org/api"
        );
        assert_eq!(
            normalize_base("http://localhost:11434/api", &["/api"]).unwrap(),
            "http://localhost:11434"
        );
        for bad in [
            "localhost:1234",
            "ftp://x",
            "http://",
            "not a url",
            "http://h/?q=1",
        ] {
            assert!(
                matches!(
                    normalize_base(bad, &openai),
                    Err(ProviderError::BadUrl { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_bad_address_is_explained_in_words() {
        let said = |url: &str| match normalize_base(url, &["/v1"]) {
            Err(ProviderError::BadUrl { reason, .. }) => reason,
            other => panic!("{url}: {other:?}"),
        };
        assert!(said("localhost:1234").starts_with("it needs http:// or https:// in front"));
        assert!(said("gpu-box/v1").starts_with("it needs http:// or https://"));
        assert!(said("http://h:99999").starts_with("its port is not a number"));
        assert!(said("http://").starts_with("it has no host name"));
        for url in ["localhost:1234", "http://h:99999", "http://"] {
            assert!(!said(url).contains("relative URL"), "{url}");
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
}
