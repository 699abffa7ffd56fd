//! File-system work a tool does, run off the async threads.

use std::sync::Arc;

use cairn_core::tool::{ToolContext, ToolError};
use cairn_core::workspace::{Workspace, WorkspaceError};

/// Runs blocking file-system work off the async threads, stopping early on cancel.
pub(crate) async fn on_disk<T, F>(ctx: &ToolContext, work: F) -> Result<T, ToolError>
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
