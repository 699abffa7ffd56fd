//! Tools through the prompt, for a model whose chat template takes none. llama.cpp
//! then renders a request's `tools` nowhere and says nothing ("Content-only"); Ollama
//! lists no `tools` capability. The model would never learn it has tools.
//!
//! request → its tools described after the system prompt, each with its arguments, in
//! the `<tool_call>` convention the text-call reader already reads back (`textcalls`)
//! → the calls the model made before written back as text, their results as user
//! messages (such a template may have no tool role; [`crate::framing`]) → sent
//! without `tools`.

use std::fmt::Write;

use cairn_protocol::{ChatMessage, ToolSpec};
use serde_json::Value;

use cairn_core::model::ChatRequest;

use crate::framing;

/// `request` as a template without tools can render it (see the module's doc).
pub(crate) fn rewrite(mut request: ChatRequest) -> ChatRequest {
    let tools = describe(&request.tools);
    let mut messages = framing::in_words(std::mem::take(&mut request.messages), &WORDS);
    match messages.first_mut() {
        Some(ChatMessage::System { content }) => {
            content.push_str("\n\n");
            content.push_str(&tools);
        }
        _ => messages.insert(0, ChatMessage::system(tools)),
    }
    request.messages = messages;
    request.tools = Vec::new().into();
    request
}

/// Such a template may have no tool role: results come as the user's, opened so that
/// the model tells them from the user's words. The prose beside a call is kept: the
/// model wrote its calls in it, as it was told to.
const WORDS: framing::Words = framing::Words {
    results_open: "[tool results]\n",
    result_head: |tool, failed| {
        if failed {
            format!("{tool} failed:\n")
        } else {
            format!("Result of {tool}:\n")
        }
    },
    keep_prose: true,
    restate: None,
};

/// The tools as the system prompt gives them: how to call one, then a line each with
/// its arguments (`?` after an optional one) and its description.
pub(crate) fn describe(tools: &[ToolSpec]) -> String {
    let mut text = String::from(
        "You can use tools. To call one, answer with only this:\n\
         <tool_call>{\"name\": \"TOOL\", \"arguments\": {…}}</tool_call>\n\
         Its result comes back in the next message. The tools:\n",
    );
    for tool in tools {
        let _ = writeln!(
            text,
            "- {}({}): {}",
            tool.name,
            arguments(&tool.parameters),
            tool.description.trim()
        );
    }
    text
}

/// A schema's arguments on one line, in the order the model is to write them
/// ([`crate::arguments`]): `path: string, limit?: integer`.
fn arguments(schema: &Value) -> String {
    crate::arguments::in_order(schema)
        .into_iter()
        .map(|(name, property, required)| {
            let mark = if required { "" } else { "?" };
            format!("{name}{mark}: {}", kind(property))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An argument's type as a reader takes it in: its choices, or its JSON type (and an
/// array's items').
fn kind(property: &Value) -> String {
    if let Some(choices) = property.get("enum").and_then(Value::as_array) {
        let choices: Vec<String> = choices.iter().map(Value::to_string).collect();
        return choices.join("|");
    }
    match property.get("type").and_then(Value::as_str) {
        Some("array") => match property.get("items") {
            Some(items) => format!("array of {}", kind(items)),
            None => "array".to_owned(),
        },
        Some(kind) => kind.to_owned(),
        None => "any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::ToolCall;
    use serde_json::json;

    fn read_file() -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file in the workspace.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1}
            }, "required": ["path"]}),
        }
    }

    fn request(messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages,
            tools: vec![
                read_file(),
                ToolSpec {
                    name: "load_tools".into(),
                    description: "Make more tools callable.".into(),
                    parameters: json!({"type": "object", "properties": {
                        "groups": {"type": "array", "items": {"type": "string", "enum": ["web", "memory"]}}
                    }, "required": ["groups"]}),
                },
            ]
            .into(),
            sampling: Default::default(),
            origin: Default::default(),
            answer_only: false,
        }
    }

    #[test]
    fn each_tool_is_described_with_its_arguments_after_the_system_prompt() {
        let sent = rewrite(request(vec![
            ChatMessage::system("You are Cairn."),
            ChatMessage::user("What is in notes.md?"),
        ]));
        assert!(sent.tools.is_empty(), "no tools on the wire");
        let system = sent.messages[0].content();
        assert!(
            system.starts_with("You are Cairn.\n\nYou can use tools."),
            "{system}"
        );
        assert!(system.contains("<tool_call>{\"name\": \"TOOL\", \"arguments\": {…}}</tool_call>"));
        assert!(
            system.contains(
                "- read_file(path: string, limit?: integer): Read a text file in the workspace.\n"
            ),
            "{system}"
        );
        assert!(
            system.contains(
                "- load_tools(groups: array of \"web\"|\"memory\"): Make more tools callable.\n"
            ),
            "{system}"
        );
        assert_eq!(sent.messages[1], ChatMessage::user("What is in notes.md?"));
    }

    #[test]
    fn earlier_calls_are_written_back_as_text_and_results_come_as_the_users() {
        let call = |id: &str, path: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"path": path}).to_string(),
            written: None,
        };
        let result = |id: &str, content: &str, is_error: bool| ChatMessage::Tool {
            tool_call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error,
            images: Vec::new(),
        };
        let sent = rewrite(request(vec![
            ChatMessage::system("s"),
            ChatMessage::user("Read both."),
            ChatMessage::Assistant {
                content: "Reading.".into(),
                reasoning: None,
                tool_calls: vec![call("c1", "a.md"), call("c2", "b.md")],
            },
            result("c1", "alpha", false),
            result("c2", "no such file", true),
            ChatMessage::assistant("Done."),
        ]));
        assert_eq!(
            sent.messages[2],
            ChatMessage::Assistant {
                content: "Reading.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\":\"a.md\"}}</tool_call>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\":\"b.md\"}}</tool_call>".into(),
                reasoning: None,
                tool_calls: Vec::new(),
            }
        );
        assert_eq!(
            sent.messages[3],
            ChatMessage::user(
                "[tool results]\nResult of read_file:\nalpha\n\nread_file failed:\nno such file"
            )
        );
        assert_eq!(sent.messages[4], ChatMessage::assistant("Done."));
        assert_eq!(sent.messages.len(), 5);
    }

    #[test]
    fn a_request_without_a_system_prompt_gets_one() {
        let sent = rewrite(request(vec![ChatMessage::user("hi")]));
        assert!(sent.messages[0].content().starts_with("You can use tools."));
        assert_eq!(sent.messages[1], ChatMessage::user("hi"));
    }
}
