//! JSON-RPC 2.0 as MCP speaks it: the messages Cairn sends, and what a server's
//! message is once read (an answer to a request, a request or notification of its
//! own, or something that is not JSON-RPC at all).

use serde_json::{Value, json};

/// The connection cannot be used any more, and why (in words that follow the server's
/// name: "exited (status 9)", "closed its output without exiting").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken(pub String);

/// Why a server could not be started and greeted, in words that follow "could not
/// start:".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotStarted {
    #[error("`{command}` was not found in any folder of the PATH searched: {searched}")]
    NotOnPath { command: String, searched: String },
    #[error("`{command}`: {why}")]
    Spawn { command: String, why: String },
    #[error("`{0}` started without its standard streams")]
    NoStreams(String),
    #[error("`{url}`: {why}")]
    BadUrl { url: String, why: String },
    #[error("`{0}` is not an http:// or https:// address")]
    NotHttp(String),
    #[error("header `{name}`: {why}")]
    BadHeader { name: String, why: String },
    #[error("`{method}` was refused: {message} (code {code})")]
    Refused {
        method: &'static str,
        message: String,
        code: i64,
    },
    /// The connection broke while it was being greeted (`wire::Broken`'s words).
    #[error("{0}")]
    Broken(String),
    #[error("it did not answer within {0} s")]
    Silent(u64),
}

/// The protocol revision Cairn asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// The largest single message Cairn reads from a server: far above any result worth
/// reading, far below what would exhaust memory. Past it the call fails and the
/// connection is reset.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// `initialize`'s parameters.
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "cairn", "version": env!("CARGO_PKG_VERSION")}
    })
}

/// What `notifications/cancelled` says about request `id`.
pub fn cancelled(id: u64, reason: &str) -> Value {
    notification(
        "notifications/cancelled",
        json!({"requestId": id, "reason": reason}),
    )
}

/// A server's message, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of Cairn's requests.
    Response { id: u64, outcome: Outcome },
    /// An answer to an id Cairn never used (not a number, say).
    StrayResponse(Value),
    /// A request of the server's own (Cairn answers `ping` and refuses the rest).
    Request { id: Value, method: String },
    /// A notification: logging, progress, a changed tool list.
    Notification { method: String },
    /// JSON, but not JSON-RPC; `id` when it names one of Cairn's requests.
    Malformed { id: Option<u64>, text: String },
    /// Not JSON at all.
    Garbage(String),
}

/// How a request ended on the server's side.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Result(Value),
    Error { code: i64, message: String },
}

/// Reads one message (a line of stdio, a body or an SSE event over HTTP).
pub fn parse(text: &[u8]) -> Incoming {
    let Ok(value) = serde_json::from_slice::<Value>(text) else {
        return Incoming::Garbage(excerpt(text));
    };
    let Value::Object(mut message) = value else {
        return Incoming::Malformed {
            id: None,
            text: excerpt(text),
        };
    };
    let id = message.remove("id");
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match (id, method) {
        (Some(id), Some(method)) => Incoming::Request { id, method },
        (None, Some(method)) => Incoming::Notification { method },
        (Some(id), None) => {
            let Some(ours) = id.as_u64() else {
                return Incoming::StrayResponse(id);
            };
            if let Some(result) = message.remove("result") {
                return Incoming::Response {
                    id: ours,
                    outcome: Outcome::Result(result),
                };
            }
            match message.remove("error") {
                Some(Value::Object(error)) => Incoming::Response {
                    id: ours,
                    outcome: Outcome::Error {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("(no message)")
                            .to_owned(),
                    },
                },
                _ => Incoming::Malformed {
                    id: Some(ours),
                    text: excerpt(text),
                },
            }
        }
        (None, None) => Incoming::Malformed {
            id: None,
            text: excerpt(text),
        },
    }
}

/// The answer to a server's own request: `ping` is answered, the rest refused (Cairn
/// offers no sampling, roots or elicitation).
pub fn answer_to(id: Value, method: &str) -> Value {
    if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Cairn does not offer `{method}`")}})
    }
}

/// Characters an error quotes of what a server wrote.
const SHOWN: usize = 120;

/// The start of a message, for an error that quotes it.
pub fn excerpt(text: &[u8]) -> String {
    let flat = flatten(text);
    match flat.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The end of a log, for an error that quotes a server's last words.
pub fn last_words(text: &[u8]) -> String {
    let flat = flatten(text);
    let chars = flat.chars().count();
    match flat.char_indices().nth(chars.saturating_sub(SHOWN)) {
        Some((cut, _)) if cut > 0 => format!("…{}", &flat[cut..]),
        _ => flat,
    }
}

fn flatten(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_quoted_by_its_end() {
        assert_eq!(last_words(b"short\nlog"), "short log");
        let long = format!("{}\nfatal: port in use", "noise ".repeat(100));
        let quoted = last_words(long.as_bytes());
        assert!(
            quoted.starts_with('…') && quoted.ends_with("fatal: port in use"),
            "{quoted}"
        );
        assert_eq!(quoted.chars().count(), SHOWN + 1);
    }

    #[test]
    fn every_kind_of_message_is_told_apart() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#,
                Incoming::Response {
                    id: 3,
                    outcome: Outcome::Result(json!({"tools": []})),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"bad"}}"#,
                Incoming::Response {
                    id: 4,
                    outcome: Outcome::Error {
                        code: -32602,
                        message: "bad".into(),
                    },
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","result":{}}"#,
                Incoming::StrayResponse(json!("x")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
                Incoming::Request {
                    id: json!(7),
                    method: "ping".into(),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
                Incoming::Notification {
                    method: "notifications/message".into(),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":5}"#,
                Incoming::Malformed {
                    id: Some(5),
                    text: r#"{"jsonrpc":"2.0","id":5}"#.into(),
                },
            ),
            (
                r#"[1,2]"#,
                Incoming::Malformed {
                    id: None,
                    text: "[1,2]".into(),
                },
            ),
            (
                "Server listening on stdio",
                Incoming::Garbage("Server listening on stdio".into()),
            ),
        ];
        for (text, read) in cases {
            assert_eq!(parse(text.as_bytes()), read, "{text}");
        }
    }

    #[test]
    fn a_long_message_is_quoted_short() {
        let quoted = excerpt("x".repeat(10_000).as_bytes());
        assert_eq!(quoted.chars().count(), 121);
    }
}
