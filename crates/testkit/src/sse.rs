//! OpenAI-style streams built to order, for tests whose exact shape no recording
//! has (a tool call with these arguments, this text). They follow the framing of the
//! recorded OpenAI streams: role delta first, tool-call ids and names on the first
//! fragment only, arguments in pieces, a finish reason, a usage chunk, `[DONE]`.

use serde_json::{Value, json};

fn event(out: &mut Vec<u8>, payload: &Value) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(payload.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}

fn close(out: &mut Vec<u8>, finish: &str, completion_tokens: u64) {
    close_after_reading(out, finish, completion_tokens, 10);
}

fn close_after_reading(
    out: &mut Vec<u8>,
    finish: &str,
    completion_tokens: u64,
    prompt_tokens: u64,
) {
    event(out, &chunk(json!({}), Some(finish)));
    event(
        out,
        &json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}),
    );
    out.extend_from_slice(b"data: [DONE]\n\n");
}

/// A streamed answer made of these text deltas.
pub fn text(pieces: &[&str]) -> Vec<u8> {
    text_ending(pieces, "stop")
}

/// A streamed answer made of these text deltas, its usage saying the server read
/// `prompt_tokens` of the prompt, as a server that cut a long prompt says.
pub fn text_after_reading(pieces: &[&str], prompt_tokens: u64) -> Vec<u8> {
    let mut out = opened(pieces);
    close_after_reading(&mut out, "stop", pieces.len() as u64, prompt_tokens);
    out
}

/// A streamed answer made of these text deltas, ended with this `finish_reason`
/// (`length`: the server stopped it at its limit).
pub fn text_ending(pieces: &[&str], finish: &str) -> Vec<u8> {
    let mut out = opened(pieces);
    close(&mut out, finish, pieces.len() as u64);
    out
}

/// The role delta and these text deltas.
fn opened(pieces: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    event(
        &mut out,
        &chunk(json!({"role": "assistant", "content": ""}), None),
    );
    for piece in pieces {
        event(&mut out, &chunk(json!({"content": piece}), None));
    }
    out
}

/// A streamed answer event by event, for a test that pauses between them: the
/// opening, each reasoning delta, each text delta, and the close, one part each.
pub fn answer_parts(reasoning: &[&str], text: &[&str]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    let mut part = |delta: Value| {
        let mut out = Vec::new();
        event(&mut out, &chunk(delta, None));
        parts.push(out);
    };
    part(json!({"role": "assistant", "content": ""}));
    for piece in reasoning {
        part(json!({"reasoning_content": piece}));
    }
    for piece in text {
        part(json!({"content": piece}));
    }
    let mut out = Vec::new();
    close(&mut out, "stop", text.len() as u64);
    parts.push(out);
    parts
}

/// A streamed call event by event, for a test that pauses while the model writes
/// it: the opening with the call's id and name, each piece of its arguments, and the
/// close, one part each.
pub fn call_parts(id: &str, name: &str, pieces: &[&str]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    let mut part = |delta: Value| {
        let mut out = Vec::new();
        event(&mut out, &chunk(delta, None));
        parts.push(out);
    };
    part(json!({"role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": id, "type": "function",
                                "function": {"name": name, "arguments": ""}}]}));
    for piece in pieces {
        part(json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}));
    }
    let mut out = Vec::new();
    close(&mut out, "tool_calls", pieces.len() as u64);
    parts.push(out);
    parts
}

/// A streamed answer that calls these tools: `(id, name, arguments as JSON)`.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Vec<u8> {
    say_and_call("", calls)
}

/// A streamed answer that says `text` first, then calls these tools.
pub fn say_and_call(text: &str, calls: &[(&str, &str, Value)]) -> Vec<u8> {
    let mut out = Vec::new();
    event(
        &mut out,
        &chunk(json!({"role": "assistant", "content": null}), None),
    );
    if !text.is_empty() {
        event(&mut out, &chunk(json!({"content": text}), None));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        event(
            &mut out,
            &chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                       "function": {"name": name, "arguments": ""}}]}),
                None,
            ),
        );
        let text = arguments.to_string();
        let mut cut = text.len() / 2;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        for piece in [&text[..cut], &text[cut..]] {
            event(
                &mut out,
                &chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ),
            );
        }
    }
    close(&mut out, "tool_calls", 5);
    out
}
