//! `todo_write`: the agent's task list for the work at hand, shown to the user.

use async_trait::async_trait;
use cairn_protocol::ToolCategory;
use cairn_protocol::describe::CallAbout;
use serde::Deserialize;
use serde_json::{Value, json};

use cairn_core::disclosure::ToolGroup;
use cairn_core::tool::parse_args;
use cairn_core::tool::{Tool, ToolContext, ToolError, ToolOutput};

#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWrite;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoArgs {
    items: Vec<Item>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    text: String,
    #[serde(default)]
    done: bool,
}

#[async_trait]
impl Tool for TodoWrite {
    fn name(&self) -> &str {
        "todo_write"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let items = args.get("items").and_then(Value::as_array).map(Vec::len);
        let subject = items.map(|count| match count {
            1 => "1 item".to_owned(),
            n => format!("{n} items"),
        });
        CallAbout::new("update the to-do list", subject)
    }

    fn description(&self) -> &str {
        "Your own checklist for a job of several steps (the whole list each time), \
         ticking items off as you finish them; the user sees it. It changes no file: a \
         list in a file is changed with edit_file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"text": {"type": "string"}, "done": {"type": "boolean"}},
                        "required": ["text"]
                    }
                }
            },
            "required": ["items"]
        })
    }

    /// Loaded for long work; a question needs no list.
    fn group(&self) -> Option<ToolGroup> {
        Some(ToolGroup::rare("todo"))
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    /// Its name and the user's `todo.md` read alike to a small model, which ticked
    /// the file's box here (task benchmark, README "Small models").
    fn for_small_models(&self) -> bool {
        false
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: TodoArgs = parse_args(args)?;
        if args.items.iter().any(|item| item.text.trim().is_empty()) {
            return Err(ToolError::InvalidArguments(
                "every item needs a `text`".into(),
            ));
        }
        let done = args.items.iter().filter(|item| item.done).count();
        let mut list = format!("{done} of {} done\n", args.items.len());
        for item in &args.items {
            list.push_str(if item.done { "- [x] " } else { "- [ ] " });
            list.push_str(item.text.trim());
            list.push('\n');
        }
        Ok(ToolOutput::text(list))
    }
}
