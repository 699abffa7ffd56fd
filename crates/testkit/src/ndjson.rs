//! Ollama-style streams built to order (`POST /api/chat`, one JSON object a line), in
//! the shape Ollama's documentation and the recorded streams show: text in pieces, or
//! whole tool calls in one line, then a closing line with `done_reason` and counts.

use serde_json::{Value, json};

fn line(out: &mut Vec<u8>, payload: &Value) {
    out.extend_from_slice(payload.to_string().as_bytes());
    out.push(b'\n');
}

fn close(out: &mut Vec<u8>, reason: &str, completion_tokens: u64) {
    close_after_reading(out, reason, completion_tokens, 10);
}

fn close_after_reading(
    out: &mut Vec<u8>,
    reason: &str,
    completion_tokens: u64,
    prompt_tokens: u64,
) {
    line(
        out,
        &json!({
            "model": "test-model", "created_at": "2026-11-25T10:00:00Z",
            "message": {"role": "assistant", "content": ""},
            "done_reason": reason, "done": true,
            "prompt_eval_count": prompt_tokens, "eval_count": completion_tokens
        }),
    );
}

/// A streamed answer made of these text pieces.
pub fn text(pieces: &[&str]) -> Vec<u8> {
    text_after_reading(pieces, 10)
}

/// A streamed answer made of these text pieces, its closing line saying the server
/// read `prompt_tokens` of the prompt (`prompt_eval_count`), as a server that cut a
/// long prompt says.
pub fn text_after_reading(pieces: &[&str], prompt_tokens: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for piece in pieces {
        line(
            &mut out,
            &json!({"model": "test-model", "created_at": "2026-11-25T10:00:00Z",
                    "message": {"role": "assistant", "content": piece}, "done": false}),
        );
    }
    close_after_reading(&mut out, "stop", pieces.len() as u64, prompt_tokens);
    out
}

/// An answer that calls these tools (`(name, arguments)`), as Ollama sends them:
/// whole, in one line.
pub fn tool_calls(calls: &[(&str, Value)]) -> Vec<u8> {
    let mut out = Vec::new();
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, arguments)| json!({"function": {"name": name, "arguments": arguments}}))
        .collect();
    line(
        &mut out,
        &json!({"model": "test-model", "created_at": "2026-11-25T10:00:00Z",
                "message": {"role": "assistant", "content": "", "tool_calls": calls},
                "done": false}),
    );
    close(&mut out, "stop", 1);
    out
}
