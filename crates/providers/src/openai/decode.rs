//! `chat.completion.chunk` payloads → [`ModelEvent`]s, reassembling tool calls.
//!
//! Servers disagree on how tool calls stream (see the recorded fixtures): most send
//! `index` + `id` + `name` first and argument pieces after, some send whole arguments
//! at once, some omit `index`, some repeat `id: ""` on continuations. The rules here:
//! key by `index` when present; otherwise a fragment with a new non-empty `id`, or a
//! new name after a named call, starts a call and anything else continues the last;
//! an empty `id` never overwrites a real one.

use std::borrow::Cow;

use cairn_protocol::ToolCall;
use serde::Deserialize;
use serde_json::Value;

use crate::http::{BodyDecoder, Progress, error_message};
use cairn_core::model::ProviderError;
use cairn_core::model::{FinishReason, ModelEvent, PromptRead, TokenUsage};

#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<WireChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// llama.cpp's reading of the prompt, when the request asked (`return_progress`).
    #[serde(default)]
    prompt_progress: Option<WireProgress>,
    #[serde(default)]
    error: Option<Value>,
    /// Older vLLM answers errors as a top-level `{"object": "error", "message": …}`.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<WireToolCall<'a>>>,
}

#[derive(Deserialize)]
struct WireToolCall<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<WireFunction<'a>>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<WireArguments<'a>>,
}

/// Arguments are a JSON string by the spec; a few servers send the object itself.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireArguments<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Json(Value),
}

#[derive(Deserialize, Default)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    /// What of the prompt the server had cached (OpenAI, vLLM, llama.cpp).
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct WireProgress {
    #[serde(default)]
    total: u64,
    #[serde(default)]
    cache: u64,
    #[serde(default)]
    processed: u64,
    #[serde(default)]
    time_ms: f64,
}

#[derive(Deserialize, Default)]
pub(crate) struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed answer.
#[derive(Debug, Default)]
pub struct ChunkDecoder {
    calls: Vec<PartialCall>,
    finish: Option<FinishReason>,
    finished: bool,
}

impl ChunkDecoder {
    pub fn new() -> Self {
        Self::default()
    }
}

impl BodyDecoder for ChunkDecoder {
    /// Decodes one `data:` payload, appending what it carries to `out`.
    fn push(
        &mut self,
        server: &str,
        payload: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Progress, ProviderError> {
        if payload.trim_end() == "[DONE]" {
            self.finish_into(out);
            return Ok(Progress::Done);
        }
        let chunk: WireChunk<'_> =
            serde_json::from_str(payload).map_err(|err| ProviderError::Protocol {
                server: server.to_owned(),
                detail: format!(
                    "a stream chunk is not valid JSON ({err}): {}",
                    clip(payload)
                ),
            })?;
        if let Some(error) = &chunk.error {
            return Err(ProviderError::Server {
                server: server.to_owned(),
                message: error_message(error),
            });
        }
        if chunk.object.as_deref() == Some("error") {
            return Err(ProviderError::Server {
                server: server.to_owned(),
                message: chunk
                    .message
                    .as_deref()
                    .unwrap_or("unknown error")
                    .to_owned(),
            });
        }
        if let Some(progress) = chunk.prompt_progress {
            out.push(ModelEvent::PromptRead(PromptRead {
                total: progress.total,
                cached: progress.cache,
                read: progress.processed,
                // Whole milliseconds of a duration the server measured.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                elapsed_ms: progress.time_ms.max(0.0) as u64,
            }));
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(FinishReason::parse(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(ModelEvent::Usage(TokenUsage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cached_prompt_tokens: usage
                    .prompt_tokens_details
                    .map_or(0, |details| details.cached_tokens),
            }));
        }
        Ok(Progress::More)
    }

    /// Whether the server said why it stopped (a finish reason or `[DONE]`): a stream
    /// that ends without either was cut off.
    fn saw_finish(&self) -> bool {
        self.finished || self.finish.is_some()
    }

    /// Emits the assembled tool calls and the finish reason; idempotent.
    fn finish_into(&mut self, out: &mut Vec<ModelEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        for call in self.calls.drain(..) {
            out.push(ModelEvent::ToolCall(ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
                written: None,
            }));
        }
        out.push(ModelEvent::Finished(
            self.finish.take().unwrap_or(FinishReason::Stop),
        ));
    }
}

impl ChunkDecoder {
    fn delta(&mut self, delta: WireDelta<'_>, out: &mut Vec<ModelEvent>) {
        // Servers moving between the two names send both with the same text: take
        // one, never both.
        let reasoning = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find(|text| !text.is_empty());
        if let Some(reasoning) = reasoning {
            out.push(ModelEvent::Reasoning(reasoning.into_owned()));
        }
        if let Some(content) = delta.content
            && !content.is_empty()
        {
            out.push(ModelEvent::Text(content.into_owned()));
        }
        for fragment in delta.tool_calls.into_iter().flatten() {
            self.tool_fragment(fragment, out);
        }
    }

    fn tool_fragment(&mut self, fragment: WireToolCall<'_>, out: &mut Vec<ModelEvent>) {
        let id = fragment.id.as_deref().unwrap_or("");
        let (name, arguments) = match fragment.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        let name = name.as_deref().unwrap_or("");
        let slot = self.slot_for(fragment.index, id, name);
        let call = &mut self.calls[slot];
        if call.id.is_empty() && !id.is_empty() {
            call.id = id.to_owned();
        }
        // Some servers repeat the full name on every fragment: keep the first.
        if call.name.is_empty() && !name.is_empty() {
            call.name = name.to_owned();
        }
        let piece = match arguments {
            Some(WireArguments::Text(piece)) => piece.into_owned(),
            Some(WireArguments::Json(Value::Null)) | None => String::new(),
            Some(WireArguments::Json(value)) => value.to_string(),
        };
        call.arguments.push_str(&piece);
        // Shown while it is written, once it has a name to show.
        if !call.name.is_empty() {
            out.push(ModelEvent::ToolCallDraft {
                slot,
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: piece,
            });
        }
    }

    fn slot_for(&mut self, index: Option<u32>, id: &str, name: &str) -> usize {
        let existing = match index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            None => self.calls.len().checked_sub(1).filter(|&last| {
                let last = &self.calls[last];
                let new_id = !id.is_empty() && !last.id.is_empty() && last.id != id;
                let new_name = id.is_empty() && !name.is_empty() && !last.name.is_empty();
                !(new_id || new_name)
            }),
        };
        existing.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index,
                ..PartialCall::default()
            });
            self.calls.len() - 1
        })
    }
}

fn clip(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}
