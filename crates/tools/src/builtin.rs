//! The file tools of the built-in toolbelt: `read_file`, `list_dir`, `write_file`.
//! Argument names are part of the contract (DESIGN.md, "Permissions").

use std::sync::Arc;

use async_trait::async_trait;
use cairn_protocol::ToolCategory;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::parse_args;
use crate::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};
use crate::workspace::{EntryKind, RelPath, Workspace, WorkspaceError, WriteOutcome};

/// Lines `read_file` returns when the model gives no `limit`.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Entries `list_dir` shows before saying how many more there are.
pub const MAX_LIST_ENTRIES: usize = 1000;

/// The lock every workspace-writing tool holds, so parallel subtasks never interleave
/// their writes.
pub const WORKSPACE_WRITE_LOCK: &str = "workspace_write";

/// The file tools, for a thread that has a workspace.
pub fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ReadFile), Arc::new(ListDir), Arc::new(WriteFile)]
}

/// The path argument `key` as a rule subject. A path that would leave the workspace
/// is kept as written: the call fails anyway, and deny rules still see it.
pub(crate) fn path_subject(args: &Value, key: &str) -> Vec<Subject> {
    let Some(text) = args.get(key).and_then(Value::as_str) else {
        return Vec::new();
    };
    let path = RelPath::parse(text).map_or_else(|_| text.to_owned(), |rel| rel.normalized());
    vec![Subject::Path(path)]
}

/// Runs blocking file-system work off the async threads, stopping early on cancel.
async fn on_disk<T, F>(ctx: &ToolContext, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Workspace) -> Result<T, WorkspaceError> + Send + 'static,
{
    let workspace = Arc::clone(ctx.workspace()?);
    let job = tokio::task::spawn_blocking(move || work(&workspace));
    tokio::select! {
        joined = job => match joined {
            Ok(result) => result.map_err(ToolError::from),
            Err(err) => Err(ToolError::Failed(format!("the file operation did not finish: {err}"))),
        },
        () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    path: String,
    /// 1-based line to start from.
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a text file in the workspace. Large files come in pieces: pass offset \
         (the 1-based line to start at) and limit (how many lines) to read more."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read"}
            },
            "required": ["path"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ReadFileArgs = parse_args(args)?;
        let path = args.path.clone();
        let bytes = on_disk(ctx, move |ws| ws.read(&path)).await?;
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::Failed(format!(
                "`{}` is not UTF-8 text; read_file reads text files only",
                args.path
            ))
        })?;
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_READ_LINES).max(1);
        Ok(ToolOutput::text(window(&text, offset, limit)))
    }
}

/// Lines `offset..offset+limit` of `text`, with a note when that is not all of it.
fn window(text: &str, offset: usize, limit: usize) -> String {
    let total = text.lines().count();
    if offset == 1 && total <= limit {
        return text.to_owned();
    }
    if offset > total {
        return format!("[the file has {total} lines; offset {offset} is past the end]");
    }
    let last = (offset - 1 + limit).min(total);
    let mut out = String::new();
    for line in text.lines().skip(offset - 1).take(limit) {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("[lines {offset}-{last} of {total}"));
    if last < total {
        out.push_str(&format!("; read on with offset {}", last + 1));
    }
    out.push(']');
    out
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirArgs {
    path: String,
}

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "List a directory in the workspace. Folders end with `/`, links with `@`. \
         Use \".\" for the workspace root."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the workspace root; \".\" for the root"}
            },
            "required": ["path"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ListDirArgs = parse_args(args)?;
        let path = args.path.clone();
        let entries = on_disk(ctx, move |ws| ws.list(&path)).await?;
        if entries.is_empty() {
            return Ok(ToolOutput::text(format!("`{}` is empty", args.path)));
        }
        let mut out = String::new();
        for entry in entries.iter().take(MAX_LIST_ENTRIES) {
            out.push_str(&entry.name);
            out.push_str(match entry.kind {
                EntryKind::Directory => "/",
                EntryKind::Symlink => "@",
                EntryKind::File | EntryKind::Other => "",
            });
            out.push('\n');
        }
        if entries.len() > MAX_LIST_ENTRIES {
            out.push_str(&format!(
                "[{} more entries not shown]\n",
                entries.len() - MAX_LIST_ENTRIES
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create or replace a file in the workspace with the given content. Missing \
         parent folders are created."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["path", "content"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn parallel_safe(&self) -> bool {
        false
    }

    fn exclusive_lock(&self) -> Option<&'static str> {
        Some(WORKSPACE_WRITE_LOCK)
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WriteFileArgs = parse_args(args)?;
        let bytes = args.content.len();
        let path = args.path.clone();
        let outcome = on_disk(ctx, move |ws| ws.write(&path, args.content.as_bytes())).await?;
        let verb = match outcome {
            WriteOutcome::Created => "created",
            WriteOutcome::Replaced => "replaced",
        };
        Ok(ToolOutput::text(format!(
            "{verb} `{}` ({bytes} bytes)",
            args.path
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn window_returns_small_files_whole_and_marks_partial_reads() {
        assert_eq!(window("a\nb\n", 1, 10), "a\nb\n");
        assert_eq!(
            window("a\nb\nc\n", 2, 1),
            "b\n[lines 2-2 of 3; read on with offset 3]"
        );
        assert_eq!(window("a\nb\nc\n", 3, 5), "c\n[lines 3-3 of 3]");
        assert_eq!(
            window("a\n", 4, 5),
            "[the file has 1 lines; offset 4 is past the end]"
        );
    }
}
