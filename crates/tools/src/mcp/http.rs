//! A server reached over MCP's streamable HTTP: each request is a POST whose answer
//! comes back as a JSON body or as a stream of server-sent events, read to a size cap.
//! The session id the server hands out at `initialize` goes with every later message.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::wire::{
    self, Broken, Incoming, MAX_MESSAGE_BYTES, NotStarted, Outcome, PROTOCOL_VERSION,
};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// A server at an address.
#[derive(Debug)]
pub struct HttpLink {
    url: reqwest::Url,
    headers: HeaderMap,
    http: reqwest::Client,
    session: Mutex<Option<HeaderValue>>,
    broken: Mutex<Option<Broken>>,
}

impl HttpLink {
    pub fn new(
        url: &str,
        headers: &BTreeMap<String, String>,
        http: reqwest::Client,
    ) -> Result<Self, NotStarted> {
        let url = reqwest::Url::parse(url).map_err(|err| NotStarted::BadUrl {
            url: url.to_owned(),
            why: err.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(NotStarted::NotHttp(url.to_string()));
        }
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let bad = |why: String| NotStarted::BadHeader {
                name: name.clone(),
                why,
            };
            let name = HeaderName::try_from(name.as_str()).map_err(|err| bad(err.to_string()))?;
            let value =
                HeaderValue::try_from(value.as_str()).map_err(|err| bad(err.to_string()))?;
            map.insert(name, value);
        }
        Ok(Self {
            url,
            headers: map,
            http,
            session: Mutex::default(),
            broken: Mutex::default(),
        })
    }

    pub async fn request(&self, id: u64, method: &str, params: Value) -> Result<Outcome, Broken> {
        if let Some(broken) = self.broken() {
            return Err(broken);
        }
        let answer = self.exchange(id, method, params).await;
        if let Err(broken) = &answer {
            *self.broken.lock().unwrap_or_else(PoisonError::into_inner) = Some(broken.clone());
        }
        answer
    }

    async fn exchange(&self, id: u64, method: &str, params: Value) -> Result<Outcome, Broken> {
        let response = self
            .post(&wire::request(id, method, params))
            .send()
            .await
            .map_err(|err| Broken(format!("could not be reached ({})", root_cause(&err))))?;
        let status = response.status();
        if !status.is_success() {
            let said = bounded_body(response, 4096).await.unwrap_or_default();
            return Err(Broken(format!(
                "answered HTTP {}{}",
                status.as_u16(),
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {}", wire::excerpt(&said))
                }
            )));
        }
        if method == "initialize"
            && let Some(session) = response.headers().get(SESSION_HEADER)
        {
            *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.clone());
        }
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if streamed {
            self.read_events(id, response).await
        } else {
            let body = bounded_body(response, MAX_MESSAGE_BYTES).await?;
            match wire::parse(&body) {
                Incoming::Response {
                    id: answered,
                    outcome,
                } if answered == id => Ok(outcome),
                other => Err(unexpected(other)),
            }
        }
    }

    /// Reads a stream of events until the answer to `id` comes.
    async fn read_events(
        &self,
        id: u64,
        mut response: reqwest::Response,
    ) -> Result<Outcome, Broken> {
        let mut events = Events::default();
        loop {
            let piece = response
                .chunk()
                .await
                .map_err(|err| Broken(format!("cut the answer's stream ({})", root_cause(&err))))?;
            let Some(piece) = piece else {
                return Err(Broken(
                    "ended the answer's stream without the answer".into(),
                ));
            };
            for data in events.feed(&piece)? {
                match wire::parse(&data) {
                    Incoming::Response {
                        id: answered,
                        outcome,
                    } if answered == id => {
                        return Ok(outcome);
                    }
                    Incoming::Response { .. } | Incoming::StrayResponse(_) => {
                        tracing::debug!("an answer no one waits for, on an HTTP stream");
                    }
                    Incoming::Request { id, method } => self.notify(wire::answer_to(id, &method)),
                    Incoming::Notification { .. } => {}
                    other @ (Incoming::Malformed { .. } | Incoming::Garbage(_)) => {
                        return Err(unexpected(other));
                    }
                }
            }
        }
    }

    /// Posts a message that expects no answer, in the background.
    pub fn notify(&self, message: Value) {
        let request = self.post(&message);
        tokio::spawn(async move {
            if let Err(err) = request.send().await {
                tracing::debug!(error = %err, "an MCP notification was not delivered");
            }
        });
    }

    fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(VERSION_HEADER, PROTOCOL_VERSION)
            .json(message);
        if let Some(session) = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            request = request.header(SESSION_HEADER, session);
        }
        request
    }

    pub fn broken(&self) -> Option<Broken> {
        self.broken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn unexpected(message: Incoming) -> Broken {
    match message {
        Incoming::Garbage(text) => Broken(format!(
            "answered with something that is not JSON: «{text}»"
        )),
        Incoming::Malformed { text, .. } => Broken(format!(
            "answered with a message that is not JSON-RPC: «{text}»"
        )),
        other => Broken(format!(
            "answered with something else than the answer: {other:?}"
        )),
    }
}

/// A message past `cap` bytes: the connection is not read further.
fn too_large(cap: usize) -> Broken {
    Broken(format!(
        "sent a message larger than {} MB",
        cap / (1024 * 1024)
    ))
}

/// A body read to its end, or an error once it passes `cap` bytes.
async fn bounded_body(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, Broken> {
    let mut body = Vec::new();
    while let Some(piece) = response
        .chunk()
        .await
        .map_err(|err| Broken(format!("cut its answer ({})", root_cause(&err))))?
    {
        if body.len() + piece.len() > cap {
            return Err(too_large(cap));
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

/// Server-sent events cut out of a byte stream: each event's `data` lines, joined.
#[derive(Debug, Default)]
struct Events {
    line: Vec<u8>,
    data: Vec<u8>,
}

impl Events {
    /// Takes the next bytes; the data of every event they complete.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, Broken> {
        let mut complete = Vec::new();
        for &byte in bytes {
            if byte != b'\n' {
                self.line.push(byte);
                if self.line.len() + self.data.len() > MAX_MESSAGE_BYTES {
                    return Err(too_large(MAX_MESSAGE_BYTES));
                }
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.is_empty() {
                if !self.data.is_empty() {
                    complete.push(std::mem::take(&mut self.data));
                }
            } else if let Some(data) = line.strip_prefix(b"data:") {
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(data.strip_prefix(b" ").unwrap_or(data));
            }
        }
        Ok(complete)
    }
}

/// The innermost cause of an HTTP error ("Connection refused").
fn root_cause(err: &dyn std::error::Error) -> String {
    let mut current = err;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::Events;

    #[test]
    fn events_are_cut_where_a_blank_line_ends_them() {
        let mut events = Events::default();
        let first = events
            .feed(b"event: message\r\ndata: {\"a\":\ndata: 1}\r\n\r\nda")
            .unwrap();
        assert_eq!(first, [b"{\"a\":\n1}".to_vec()]);
        let rest = events.feed(b"ta: {\"b\":2}\n\n: comment\n\n").unwrap();
        assert_eq!(rest, [b"{\"b\":2}".to_vec()]);
    }
}
