//! The built-in toolbelt. Names and argument names are part of the contract
//! (docs/design.md, "Permissions").

mod command;
mod disk;
mod files;
mod html;
mod memory;
mod nearby;
mod preview;
mod syntax;
mod todo;
mod web;

use std::sync::Arc;

pub use command::RunCommand;
pub use files::{EditFile, ListDir, ReadFile, SearchFiles, WriteFile};
pub use memory::{MemoryList, MemoryRead, MemoryStore, MemoryWrite};
pub use todo::TodoWrite;
pub use web::WebFetch;

use cairn_core::tool::Tool;

/// The tools that work in a workspace: files and commands. A thread without a
/// workspace has none of them.
pub fn workspace_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(ListDir),
        Arc::new(SearchFiles),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(RunCommand),
    ]
}

/// The file tools alone (without commands).
pub fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ReadFile), Arc::new(ListDir), Arc::new(WriteFile)]
}

/// The tools every thread has: the web, memory, the todo list.
pub fn common_tools(http: reqwest::Client, memory: Arc<dyn MemoryStore>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(WebFetch::new(http)),
        Arc::new(MemoryList::new(Arc::clone(&memory))),
        Arc::new(MemoryRead::new(Arc::clone(&memory))),
        Arc::new(MemoryWrite::new(memory)),
        Arc::new(TodoWrite),
    ]
}
