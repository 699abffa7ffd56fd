//! [`ChatRequest`] → the JSON body of `POST /v1/chat/completions`.

use cairn_protocol::{ChatMessage, ToolCall};
use serde::Serialize;
use serde::de::IgnoredAny;

use cairn_core::model::ChatRequest;

use crate::arguments::Schema;

#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    /// llama.cpp's server then streams how far it has read the prompt; only sent to
    /// a server that takes it (a hosted API may refuse a field it does not know).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    return_progress: bool,
    /// llama.cpp's GBNF that holds a model's text calls to the offered tools (see
    /// [`crate::grammar`]); sent with `tool_choice: "none"`, which it needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    grammar: Option<String>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    /// A user message of parts: the images tools returned, after their results.
    #[serde(rename = "user")]
    UserParts {
        content: Vec<Part>,
    },
    Assistant {
        /// `null` when the message only calls tools, as the API expects.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCallFunction<'a>,
}

#[derive(Serialize)]
struct WireCallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireToolFunction<'a>,
}

#[derive(Serialize)]
struct WireToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Schema<'a>,
}

/// What a request asks of llama.cpp's server beyond the OpenAI API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extras {
    /// Say how far the prompt is read.
    pub progress: bool,
    /// Hold the model's text calls to the offered tools.
    pub grammar: bool,
}

/// The body; `tool_choice` is `Some("required")` for the forced retry; `images`
/// shows the model the images tools returned.
pub(crate) fn body<'a>(
    request: &'a ChatRequest,
    tool_choice: Option<&'static str>,
    images: bool,
    extras: Extras,
) -> Body<'a> {
    let grammar = extras
        .grammar
        .then(|| crate::grammar::calls(&request.tools))
        .flatten();
    Body {
        model: &request.model,
        messages: crate::images::interleave(&request.messages, images, message, |text, images| {
            let mut content = vec![Part::Text { text }];
            content.extend(images.into_iter().map(|image| Part::ImageUrl {
                image_url: ImageUrl {
                    url: image.data_url(),
                },
            }));
            WireMessage::UserParts { content }
        }),
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                kind: "function",
                function: WireToolFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: Schema(&tool.parameters),
                },
            })
            .collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        temperature: request.sampling.temperature,
        top_p: request.sampling.top_p,
        max_tokens: request.sampling.max_tokens,
        tool_choice: if grammar.is_some() {
            Some("none")
        } else {
            tool_choice
        },
        return_progress: extras.progress,
        grammar,
    }
}

fn message(message: &ChatMessage) -> WireMessage<'_> {
    match message {
        ChatMessage::System { content } => WireMessage::System { content },
        ChatMessage::User { content } => WireMessage::User { content },
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } => WireMessage::Assistant {
            content: (!content.is_empty() || tool_calls.is_empty()).then_some(content.as_str()),
            tool_calls: tool_calls.iter().map(call).collect(),
        },
        ChatMessage::Tool {
            tool_call_id,
            content,
            ..
        } => WireMessage::Tool {
            tool_call_id,
            content,
        },
    }
}

fn call(call: &ToolCall) -> WireCall<'_> {
    WireCall {
        id: &call.id,
        kind: "function",
        function: WireCallFunction {
            name: &call.name,
            arguments: replayable_arguments(&call.arguments),
        },
    }
}

/// Arguments as they can be sent back. A model's malformed JSON already earned it an
/// error result; replaying the broken text would make servers that parse history
/// (chat templates in llama.cpp and vLLM) reject the whole request.
fn replayable_arguments(arguments: &str) -> &str {
    match serde_json::from_str::<IgnoredAny>(arguments) {
        Ok(_) if arguments.trim_start().starts_with('{') => arguments,
        _ => "{}",
    }
}
