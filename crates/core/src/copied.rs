//! A change that writes the thread's context block into a file. Asked to "put the
//! code word from memo.txt into a new file", the 1.5B wrote the block that opened
//! the request (the permission mode, the folder) as the new file, without reading
//! memo.txt: it took the block for the file's words. Cairn's own words about a chat
//! belong in no file of the user's, so such a call is not run, and its error says
//! what the content was.

use cairn_protocol::ToolCall;
use serde_json::Value;

use crate::prompt;
use crate::repeats::Verdict;

/// The shortest line of the block that counts as copied: the block's lines are
/// sentences, and a short one could be the user's own words.
const MIN_LINE_CHARS: usize = 24;

/// What the model is told of a call that copied the block.
const REJECTED: &str = "nothing was written: this content is Cairn's note about \
     this chat (its permission mode and folder), which no file holds. If the request needs \
     a file's words, read that file first, then write what it says.";

/// Rejects, among a round's `calls` that are to run, each one that `changes` a file
/// and whose arguments carry a line Cairn wrote in the thread's `context`.
pub(crate) fn reject_copies(
    verdicts: &mut [Verdict],
    calls: &[ToolCall],
    context: Option<&str>,
    changes: impl Fn(&ToolCall) -> bool,
) {
    let Some(context) = context else {
        return;
    };
    let lines: Vec<&str> = prompt::own_lines(context)
        .filter(|line| line.chars().count() >= MIN_LINE_CHARS)
        .collect();
    if lines.is_empty() {
        return;
    }
    for (verdict, call) in verdicts.iter_mut().zip(calls) {
        if *verdict == Verdict::Run && changes(call) && carries_any(call, &lines) {
            *verdict = Verdict::Reject(REJECTED.to_owned());
        }
    }
}

/// Whether a text argument of `call` holds one of `lines`.
fn carries_any(call: &ToolCall, lines: &[&str]) -> bool {
    let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(&call.arguments) else {
        return false;
    };
    arguments
        .values()
        .filter_map(Value::as_str)
        .any(|text| lines.iter().any(|line| text.contains(line)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: arguments.to_string(),
            written: None,
        }
    }

    #[test]
    fn a_line_of_the_block_in_any_text_argument_is_carried() {
        let lines = ["Workspace (file paths are relative to it): the folder `work`."];
        let copied = call(serde_json::json!({
            "path": "notes.txt",
            "content": "Permission mode: auto.\nWorkspace (file paths are relative to it): the folder `work`.",
        }));
        assert!(carries_any(&copied, &lines));
        let own = call(serde_json::json!({"path": "notes.txt", "content": "OSPREY"}));
        assert!(!carries_any(&own, &lines));
        let not_an_object = ToolCall {
            arguments: "[\"Workspace\"]".into(),
            ..own
        };
        assert!(!carries_any(&not_an_object, &lines));
    }
}
