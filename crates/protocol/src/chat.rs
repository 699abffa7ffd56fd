//! The model conversation as Cairn stores and replays it: the dialect-neutral shape
//! each provider translates to its own wire format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a model conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Images the tool returned besides its text (`content` names each). A model
        /// that reads images is shown them after the round's results.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}

/// An image a tool returned: its media type (`image/png`) and its bytes in base64, as
/// MCP and the model APIs carry them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub mime_type: String,
    pub data: String,
}

impl Image {
    /// The media types shown in the window and sent to models: the ones every
    /// webview and vision model reads. (SVG, say, is text a model cannot see.)
    pub const SHOWN: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

    /// `data:image/png;base64,…`, for an `<img>` or OpenAI's `image_url`.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            reasoning: None,
            tool_calls: Vec::new(),
        }
    }

    pub fn role(&self) -> &'static str {
        match self {
            Self::System { .. } => "system",
            Self::User { .. } => "user",
            Self::Assistant { .. } => "assistant",
            Self::Tool { .. } => "tool",
        }
    }

    /// The text a model reads from this message (without tool-call arguments).
    pub fn content(&self) -> &str {
        match self {
            Self::System { content }
            | Self::User { content }
            | Self::Assistant { content, .. }
            | Self::Tool { content, .. } => content,
        }
    }

    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Self::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }
}

/// A tool call the model made. `arguments` is the JSON text exactly as the model wrote
/// it: it may be malformed, and the loop reports that back to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    /// The text the call was read from when the model wrote it in its answer instead
    /// of emitting it (a ```json block, `<tool_call>…</tool_call>`, bare JSON), so
    /// that it can be shown to the model again as it wrote it. Absent for a call the
    /// server emitted. (Added after docs/design.md's first wire.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

/// A tool as advertised to the model: name, description, JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}
