//! What a tool is to Cairn, and the built-in tools that touch the user's files.
//!
//! A [`Tool`] declares its name, argument schema, permission category and whether it
//! may run beside others; the engine gates and schedules it, the tool only does the
//! work. File tools reach the disk only through a [`Workspace`], which confines every
//! path to the thread's workspace root.

mod builtin;
mod diff;
pub mod mcp;
mod process_tree;

pub use builtin::{
    EditFile, ListDir, MemoryList, MemoryRead, MemoryStore, MemoryWrite, ReadFile, RunCommand,
    SearchFiles, TodoWrite, WebFetch, WriteFile, common_tools, file_tools, workspace_tools,
};
// The tool port and the workspace a call acts in are the engine's; named here too
// because every tool implements and uses them.
pub use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput, parse_args};
pub use cairn_core::workspace::{Workspace, WorkspaceError};
pub use cairn_core::{shell, workspace};
/// The unified diff the approvals show, for other views of a change (a restore's).
pub use diff::unified as unified_diff;
