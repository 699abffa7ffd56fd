//! Opening the thread a message goes to: an existing one, or a new one titled from
//! the message, with its mode, workspace and agent checked before anything is stored.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Agent;
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
    /// The agent profile it answers as from now on.
    pub agent: Option<String>,
}

/// Options that can be applied: the folder as its full path, the agent resolved.
#[derive(Debug)]
pub struct CheckedOptions {
    workspace: Option<PathBuf>,
    agent: Option<Arc<Agent>>,
}

/// A folder a thread can work in, as its full path, or why not.
pub fn check_workspace(folder: &Path) -> Result<PathBuf, RuntimeError> {
    Workspace::open(folder)
        .map(|workspace| workspace.root().to_owned())
        .map_err(|err| RuntimeError::Workspace(err.to_string()))
}

impl Runtime {
    /// Refuses a folder that cannot be a workspace, or an agent the thread (in that
    /// folder, else its own) cannot use, before anything else is done.
    pub fn check_thread_options(
        &self,
        options: &ThreadOptions,
        existing: Option<&ThreadInfo>,
    ) -> Result<CheckedOptions, RuntimeError> {
        let workspace = options
            .workspace
            .as_deref()
            .map(check_workspace)
            .transpose()?;
        let agent = match &options.agent {
            None => None,
            Some(id) => {
                let folder = workspace
                    .clone()
                    .or_else(|| existing?.workspace.as_ref().map(PathBuf::from));
                Some(self.agents(folder.as_deref()).choose(id)?)
            }
        };
        Ok(CheckedOptions { workspace, agent })
    }

    /// The thread `existing` (as loaded) or a new one for `prompt`, with `options`
    /// applied. A bad folder or agent, or an empty prompt, is refused before anything
    /// is stored, so a message that cannot be sent leaves no empty thread behind.
    pub async fn open_thread(
        &self,
        existing: Option<ThreadInfo>,
        prompt: &str,
        options: &ThreadOptions,
    ) -> Result<ThreadInfo, RuntimeError> {
        if prompt.trim().is_empty() {
            return Err(RuntimeError::EmptyPrompt);
        }
        let checked = self.check_thread_options(options, existing.as_ref())?;
        let agent = match &checked.agent {
            Some(agent) => Arc::clone(agent),
            None => {
                let folder = checked
                    .workspace
                    .clone()
                    .or_else(|| existing.as_ref()?.workspace.as_ref().map(PathBuf::from));
                self.agents(folder.as_deref())
                    .choose(&self.agent_id(existing.as_ref()).await?)?
            }
        };
        self.check_agent_server(&agent).await?;
        let mut thread = match existing {
            Some(thread) => thread,
            None => {
                self.new_thread(prompt, options.mode.unwrap_or_default())
                    .await?
            }
        };
        if let Some(mode) = options.mode.filter(|mode| *mode != thread.mode) {
            thread = self.store.set_mode(&thread.id, mode).await?;
        }
        if let Some(folder) = checked.workspace {
            thread = self.store.set_workspace(&thread.id, Some(&folder)).await?;
        }
        if let Some(agent) = checked.agent {
            thread = self.give_agent(&thread.id, &agent).await?;
        }
        Ok(thread)
    }
}
