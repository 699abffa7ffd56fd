//! `/api/chat` NDJSON lines → [`ModelEvent`]s.
//!
//! Ollama never fragments a tool call: each arrives whole, arguments as a JSON object,
//! one or several per line, possibly on the `done` line itself. Thinking arrives in
//! `message.thinking`. An error after streaming began is a line `{"error": …}`.

use std::borrow::Cow;

use cairn_protocol::ToolCall;
use serde::Deserialize;
use serde_json::Value;

use crate::http::{BodyDecoder, Progress, error_message};
use cairn_core::model::ProviderError;
use cairn_core::model::{FinishReason, ModelEvent, TokenUsage};

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
    #[serde(default)]
    done: bool,
    #[serde(default, borrow)]
    done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// The state of one streamed `/api/chat` answer.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    called: bool,
    done: bool,
}

impl ChatDecoder {
    pub fn new() -> Self {
        Self::default()
    }
}

impl BodyDecoder for ChatDecoder {
    fn push(
        &mut self,
        server: &str,
        payload: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Progress, ProviderError> {
        let line: Line<'_> =
            serde_json::from_str(payload).map_err(|err| ProviderError::Protocol {
                server: server.to_owned(),
                detail: format!("a stream line is not valid JSON ({err}): {}", clip(payload)),
            })?;
        if let Some(error) = &line.error {
            return Err(ProviderError::Server {
                server: server.to_owned(),
                message: error_message(error),
            });
        }
        if let Some(message) = line.message {
            if let Some(thinking) = message.thinking.filter(|t| !t.is_empty()) {
                out.push(ModelEvent::Reasoning(thinking.into_owned()));
            }
            if let Some(content) = message.content.filter(|c| !c.is_empty()) {
                out.push(ModelEvent::Text(content.into_owned()));
            }
            for call in message.tool_calls.into_iter().flatten() {
                self.called = true;
                let arguments = match call.function.arguments {
                    Value::Null => "{}".to_owned(),
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                out.push(ModelEvent::ToolCall(ToolCall {
                    id: call.id.unwrap_or_default(),
                    name: call.function.name,
                    arguments,
                    written: None,
                }));
            }
        }
        if !line.done {
            return Ok(Progress::More);
        }
        self.done = true;
        if line.prompt_eval_count.is_some() || line.eval_count.is_some() {
            out.push(ModelEvent::Usage(TokenUsage {
                prompt_tokens: line.prompt_eval_count.unwrap_or(0),
                completion_tokens: line.eval_count.unwrap_or(0),
                // Ollama says nothing of its cache.
                cached_prompt_tokens: 0,
            }));
        }
        // Ollama reports `stop` even after tool calls.
        let reason = match line.done_reason.as_deref() {
            _ if self.called => FinishReason::ToolCalls,
            Some(reason) => FinishReason::parse(reason),
            None => FinishReason::Stop,
        };
        out.push(ModelEvent::Finished(reason));
        Ok(Progress::Done)
    }

    fn saw_finish(&self) -> bool {
        self.done
    }

    fn finish_into(&mut self, _out: &mut Vec<ModelEvent>) {
        // Everything, the finish reason included, went out with the `done` line.
    }
}

fn clip(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}
