//! What the tools' test files share.

use std::sync::Arc;

use cairn_tools::{ToolContext, Workspace};

/// A new folder, and a tool context whose workspace it is.
pub fn workspace() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        workspace: Some(Arc::new(Workspace::open(dir.path()).unwrap())),
        ..ToolContext::default()
    };
    (dir, ctx)
}
