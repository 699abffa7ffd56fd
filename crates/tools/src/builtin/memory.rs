//! `memory_list`, `memory_read`, `memory_write`: notes the agent keeps across
//! threads, persisted by whoever implements [`MemoryStore`] (the SQLite store).

use std::sync::Arc;

use async_trait::async_trait;
use cairn_protocol::ToolCategory;
use cairn_protocol::describe::{CallAbout, quote, text_arg};
use serde::Deserialize;
use serde_json::{Value, json};

use cairn_core::PortError;
use cairn_core::disclosure::ToolGroup;
use cairn_core::tool::parse_args;
use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};

/// The group the memory tools wait in until loaded: most turns never need them.
const MEMORY_TOOLS: &str = "memory";

/// Where memory lives.
#[async_trait]
pub trait MemoryStore: Send + Sync + std::fmt::Debug {
    /// Every key, with the first line of its value.
    async fn list(&self) -> Result<Vec<(String, String)>, PortError>;
    async fn read(&self, key: &str) -> Result<Option<String>, PortError>;
    async fn write(&self, key: &str, value: &str) -> Result<(), PortError>;
}

/// Longest key and value accepted: memory is for notes, not files.
const MAX_KEY: usize = 200;
const MAX_VALUE: usize = 20_000;

macro_rules! memory_tool {
    ($name:ident) => {
        #[derive(Debug, Clone)]
        pub struct $name {
            store: Arc<dyn MemoryStore>,
        }

        impl $name {
            pub fn new(store: Arc<dyn MemoryStore>) -> Self {
                Self { store }
            }
        }
    };
}

memory_tool!(MemoryList);
memory_tool!(MemoryRead);
memory_tool!(MemoryWrite);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    key: String,
    value: String,
}

fn key_subject(args: &Value) -> Vec<Subject> {
    args.get("key")
        .and_then(Value::as_str)
        .map(|key| vec![Subject::Key(key.to_owned())])
        .unwrap_or_default()
}

#[async_trait]
impl Tool for MemoryList {
    fn name(&self) -> &str {
        "memory_list"
    }

    fn describe(&self, _args: &Value) -> CallAbout {
        CallAbout::new("list what is remembered", None)
    }

    fn description(&self) -> &str {
        "List the keys of your long-term memory (notes kept across conversations)."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn group(&self) -> Option<ToolGroup> {
        Some(ToolGroup::rare(MEMORY_TOOLS))
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let entries = self
            .store
            .list()
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?;
        if entries.is_empty() {
            return Ok(ToolOutput::text("memory is empty"));
        }
        let lines: Vec<String> = entries
            .iter()
            .map(|(key, first_line)| format!("{key}: {first_line}"))
            .collect();
        Ok(ToolOutput::text(lines.join("\n")))
    }
}

#[async_trait]
impl Tool for MemoryRead {
    fn name(&self) -> &str {
        "memory_read"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let key = text_arg(args, "key").unwrap_or_default();
        CallAbout::new(format!("recall “{}”", quote(key)), Some(key.to_owned()))
    }

    fn description(&self) -> &str {
        "Read one entry of your long-term memory by key."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]})
    }

    fn group(&self) -> Option<ToolGroup> {
        Some(ToolGroup::rare(MEMORY_TOOLS))
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        key_subject(args)
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: KeyArgs = parse_args(args)?;
        match self
            .store
            .read(&args.key)
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?
        {
            Some(value) => Ok(ToolOutput::text(value)),
            None => Err(ToolError::Failed(format!(
                "there is no memory `{}`; memory_list shows the keys",
                args.key
            ))),
        }
    }
}

#[async_trait]
impl Tool for MemoryWrite {
    fn name(&self) -> &str {
        "memory_write"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let key = text_arg(args, "key").unwrap_or_default();
        CallAbout::new(format!("remember “{}”", quote(key)), Some(key.to_owned()))
    }

    fn description(&self) -> &str {
        "Store a note in your long-term memory under a key (replacing what was there)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
            "required": ["key", "value"]
        })
    }

    fn group(&self) -> Option<ToolGroup> {
        Some(ToolGroup::rare(MEMORY_TOOLS))
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        key_subject(args)
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_args(args)?;
        let key = args.key.trim();
        if key.is_empty() || key.chars().count() > MAX_KEY {
            return Err(ToolError::InvalidArguments(format!(
                "`key` must be 1 to {MAX_KEY} characters"
            )));
        }
        if args.value.chars().count() > MAX_VALUE {
            return Err(ToolError::InvalidArguments(format!(
                "`value` is over {MAX_VALUE} characters; keep memory to notes"
            )));
        }
        self.store
            .write(key, &args.value)
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?;
        Ok(ToolOutput::text(format!("remembered `{key}`")))
    }
}
