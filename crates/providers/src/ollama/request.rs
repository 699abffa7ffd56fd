//! [`ChatRequest`] → the JSON body of `POST /api/chat`.

use std::borrow::Cow;

use cairn_protocol::ChatMessage;
use serde::Serialize;
use serde_json::{Map, Value};

use cairn_core::model::ChatRequest;

use crate::arguments::Schema;

#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    /// Always false: a prompt longer than the window is then refused (Ollama 0.12.6
    /// and later) instead of cut from the front in silence, so that Cairn can fit it
    /// and send it again. Older servers ignore the field.
    truncate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<bool>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    options: Map<String, Value>,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: Cow<'a, str>,
        /// Base64 images: those tools returned, after their results.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        images: Vec<&'a str>,
    },
    Assistant {
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        content: &'a str,
        tool_call_id: &'a str,
        tool_name: &'a str,
    },
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    /// Ollama wants the arguments as an object, not as JSON text.
    arguments: Value,
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

/// What this round sends besides the conversation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub think: bool,
    pub tools: bool,
    pub num_ctx: Option<u32>,
    /// Show the model the images tools returned.
    pub images: bool,
}

pub(crate) fn body(request: &ChatRequest, shape: Shape) -> Body<'_> {
    let mut options = Map::new();
    let sampling = &request.sampling;
    if let Some(temperature) = sampling.temperature {
        options.insert("temperature".into(), Value::from(temperature));
    }
    if let Some(top_p) = sampling.top_p {
        options.insert("top_p".into(), Value::from(top_p));
    }
    if let Some(max_tokens) = sampling.max_tokens {
        options.insert("num_predict".into(), Value::from(max_tokens));
    }
    if let Some(num_ctx) = shape.num_ctx {
        options.insert("num_ctx".into(), Value::from(num_ctx));
    }
    let tools = if shape.tools {
        request
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
            .collect()
    } else {
        Vec::new()
    };
    Body {
        model: &request.model,
        messages: crate::images::interleave(
            &request.messages,
            shape.images,
            message,
            |text, images| WireMessage::User {
                content: Cow::Owned(text),
                images: images.iter().map(|image| image.data.as_str()).collect(),
            },
        ),
        tools,
        stream: true,
        truncate: false,
        think: shape.think.then_some(true),
        options,
    }
}

fn message(message: &ChatMessage) -> WireMessage<'_> {
    match message {
        ChatMessage::System { content } => WireMessage::System { content },
        ChatMessage::User { content } => WireMessage::User {
            content: Cow::Borrowed(content),
            images: Vec::new(),
        },
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } => WireMessage::Assistant {
            content,
            tool_calls: tool_calls
                .iter()
                .map(|call| WireCall {
                    id: &call.id,
                    function: WireFunction {
                        name: &call.name,
                        arguments: arguments_object(&call.arguments),
                    },
                })
                .collect(),
        },
        ChatMessage::Tool {
            tool_call_id,
            name,
            content,
            ..
        } => WireMessage::Tool {
            content,
            tool_call_id,
            tool_name: name,
        },
    }
}

/// A call's arguments as the object Ollama expects. Malformed text (which earned the
/// model an error result) goes back as an empty object rather than failing the request.
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Object(Map::new()),
    }
}
