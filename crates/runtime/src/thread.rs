//! Opening the thread a message goes to: an existing one, or a new one titled from
//! the message, with its mode and workspace checked before anything is stored.

use std::path::{Path, PathBuf};

use cairn_protocol::{PermissionMode, ThreadInfo};
use cairn_tools::Workspace;

use crate::{Runtime, RuntimeError};

/// How the thread a message goes to should be set up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadOptions {
    /// The mode to switch to (a new thread starts in default mode without it).
    pub mode: Option<PermissionMode>,
    /// The folder its file tools work in.
    pub workspace: Option<PathBuf>,
}

impl ThreadOptions {
    /// Refuses a folder that cannot be a workspace, before anything else is done.
    pub fn check(&self) -> Result<(), RuntimeError> {
        self.workspace
            .as_deref()
            .map_or(Ok(()), |folder| check_workspace(folder).map(drop))
    }
}

/// A folder a thread can work in, as its full path, or why not.
pub fn check_workspace(folder: &Path) -> Result<PathBuf, RuntimeError> {
    Workspace::open(folder)
        .map(|workspace| workspace.root().to_owned())
        .map_err(|err| RuntimeError::Workspace(err.to_string()))
}

impl Runtime {
    /// The thread `existing` (as loaded) or a new one for `prompt`, with `options`
    /// applied. A bad folder or an empty prompt is refused before anything is
    /// stored, so a message that cannot be sent leaves no empty thread behind.
    pub async fn open_thread(
        &self,
        existing: Option<ThreadInfo>,
        prompt: &str,
        options: &ThreadOptions,
    ) -> Result<ThreadInfo, RuntimeError> {
        if prompt.trim().is_empty() {
            return Err(RuntimeError::EmptyPrompt);
        }
        let workspace = options
            .workspace
            .as_deref()
            .map(check_workspace)
            .transpose()?;
        let mut thread = match existing {
            Some(thread) => thread,
            None => {
                self.new_thread(prompt, options.mode.unwrap_or_default())
                    .await?
            }
        };
        if let Some(mode) = options.mode.filter(|mode| *mode != thread.mode) {
            thread = self.store().set_mode(&thread.id, mode).await?;
        }
        if let Some(folder) = workspace {
            thread = self
                .store()
                .set_workspace(&thread.id, Some(&folder))
                .await?;
        }
        Ok(thread)
    }
}
