//! Requests read as a model server receives them (either dialect's JSON body): what
//! Cairn's own estimator makes of one, and the fixed prompt it opens with. Tests and
//! benchmarks measure what was sent, not what the engine meant to send.

use cairn_core::history::{MESSAGE_FRAMING, bytes_to_tokens};
use serde_json::Value;

/// The request's size as the engine estimates a prompt: its messages (text and
/// calls, each with its framing) and its tool schemas as sent.
pub fn estimated_tokens(body: &Value) -> u64 {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let messages: u64 = messages
        .iter()
        .map(|message| {
            let calls: usize = message["tool_calls"].as_array().map_or(0, |calls| {
                calls
                    .iter()
                    .map(|call| {
                        let function = &call["function"];
                        let arguments = match &function["arguments"] {
                            Value::String(text) => text.len(),
                            other => other.to_string().len(),
                        };
                        function["name"].as_str().map_or(0, str::len)
                            + arguments
                            + call["id"].as_str().map_or(0, str::len)
                    })
                    .sum()
            });
            let content = message["content"].as_str().map_or(0, str::len);
            bytes_to_tokens(content + calls) + MESSAGE_FRAMING
        })
        .sum();
    let tools = body.get("tools").map_or(0, |tools| tools.to_string().len());
    messages + bytes_to_tokens(tools)
}

/// What the model reads before the conversation: the system prompt and the tool
/// schemas as sent, in characters.
///
/// # Panics
/// When the request does not open with a system message.
#[allow(clippy::panic)]
pub fn fixed_prompt_chars(body: &Value) -> usize {
    let first = &body["messages"][0];
    let Some(system) = first["content"]
        .as_str()
        .filter(|_| first["role"] == "system")
    else {
        panic!("the request does not open with a system prompt: {first}");
    };
    let tools = body
        .get("tools")
        .map_or(0, |tools| tools.to_string().chars().count());
    system.chars().count() + tools
}

/// Whether a chat request reads a prompt ahead of its question (a warm-up, sent to a
/// server that said its window): it asks for an answer of one token, in either
/// dialect.
pub fn is_warm_up(body: &Value) -> bool {
    body["max_tokens"] == 1 || body["options"]["num_predict"] == 1
}

/// A message's text as the user wrote it: without the thread's `<context>` block
/// that opens the first one.
pub fn users_words(message: &Value) -> &str {
    cairn_core::prompt::split_context(message["content"].as_str().unwrap_or_default()).1
}

/// The thread's `<context>` block a request's first user message opens with (its mode,
/// folder and project instructions), or "" without one.
pub fn context_block(body: &Value) -> &str {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .and_then(|message| message["content"].as_str())
        .map_or("", |content| cairn_core::prompt::split_context(content).0)
}
