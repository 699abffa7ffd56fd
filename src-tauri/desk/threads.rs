//! Threads as the sidebar and the thread view see them, the rules, and the tools.

use std::path::Path;

use cairn_protocol::desktop::{ExportFormat, RuleInfo, ThreadDetail, ToolInfo};
use cairn_protocol::{AgentInfo, PermissionMode, RestorePlan, RuleList, SearchHit, ThreadInfo};
use cairn_runtime::Export;

use super::{Desk, DeskError};

/// The most threads one page of the sidebar asks for.
const MAX_PAGE: u32 = 500;
/// The most search results shown.
const SEARCH_LIMIT: u32 = 50;
/// The longest title kept; longer ones are cut at a character boundary.
const MAX_TITLE_CHARS: usize = 200;

impl Desk {
    /// The agent profiles a chat could use: the built-ins, the user's, and those of
    /// the thread's workspace; files skipped are listed with why.
    pub async fn agents(&self, thread_id: Option<&str>) -> Result<Vec<AgentInfo>, DeskError> {
        let thread = self.runtime.thread_if(thread_id).await?;
        let workspace = thread.and_then(|thread| thread.workspace);
        Ok(self
            .runtime
            .agent_infos(workspace.as_deref().map(Path::new)))
    }

    pub async fn list_threads(
        &self,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<ThreadInfo>, DeskError> {
        if limit == 0 || limit > MAX_PAGE {
            return Err(DeskError::Invalid(format!(
                "a page holds 1 to {MAX_PAGE} threads, not {limit}"
            )));
        }
        Ok(self.runtime.list_threads(limit, offset).await?)
    }

    pub async fn search_threads(&self, query: &str) -> Result<Vec<SearchHit>, DeskError> {
        if query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut hits = self.runtime.search_threads(query, SEARCH_LIMIT).await?;
        // One row per chat: its best hit (they come best first).
        let mut seen = std::collections::HashSet::new();
        hits.retain(|hit| seen.insert(hit.thread_id.clone()));
        Ok(hits)
    }

    /// A thread with its messages and their execution trees.
    pub async fn load_thread(&self, thread_id: &str) -> Result<ThreadDetail, DeskError> {
        Ok(self.runtime.thread_detail(thread_id).await?)
    }

    pub async fn rename_thread(
        &self,
        thread_id: &str,
        title: &str,
    ) -> Result<ThreadInfo, DeskError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(DeskError::Invalid("a chat needs a name".into()));
        }
        let title: String = title.chars().take(MAX_TITLE_CHARS).collect();
        Ok(self.runtime.rename_thread(thread_id, &title).await?)
    }

    /// Deletes a thread that has no turn running, here or in another Cairn.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), DeskError> {
        Ok(self.runtime.delete_thread(thread_id).await?)
    }

    /// The whole result of a stored call whose card keeps only its start.
    pub async fn tool_result(
        &self,
        message_id: &str,
        tool_call_id: &str,
    ) -> Result<String, DeskError> {
        Ok(self.runtime.tool_result(message_id, tool_call_id).await?)
    }

    /// What putting back the files of `answer_id` would do; changes nothing.
    pub async fn plan_restore(
        &self,
        thread_id: &str,
        answer_id: &str,
    ) -> Result<RestorePlan, DeskError> {
        Ok(self
            .runtime
            .restore_plan(thread_id, Some(answer_id))
            .await?)
    }

    /// Puts back the files of `answer_id`, all or none.
    pub async fn restore_answer(
        &self,
        thread_id: &str,
        answer_id: &str,
    ) -> Result<RestorePlan, DeskError> {
        Ok(self.runtime.restore(thread_id, answer_id).await?)
    }

    /// A thread as Markdown (`md`) or as Cairn's JSON export (`json`).
    pub async fn export_thread(
        &self,
        thread_id: &str,
        format: ExportFormat,
    ) -> Result<Export, DeskError> {
        Ok(self.runtime.export_thread(thread_id, format).await?)
    }

    /// Sets a thread's mode; a running turn keeps the mode it started with.
    pub async fn set_mode(
        &self,
        thread_id: &str,
        mode: PermissionMode,
    ) -> Result<ThreadInfo, DeskError> {
        Ok(self.runtime.set_mode(thread_id, mode).await?)
    }

    /// Sets or clears the folder a thread's file tools work in; the folder must be
    /// usable now.
    pub async fn set_workspace(
        &self,
        thread_id: &str,
        folder: Option<&str>,
    ) -> Result<ThreadInfo, DeskError> {
        let folder = folder.map(str::trim).filter(|folder| !folder.is_empty());
        if let Some(folder) = folder {
            check_workspace(folder)?;
        }
        let thread = self
            .runtime
            .set_workspace(thread_id, folder.map(Path::new))
            .await?;
        if let Some(folder) = &thread.workspace {
            self.remember_workspace(folder).await?;
        }
        Ok(thread)
    }

    /// The next new chat starts in `folder`.
    pub(super) async fn remember_workspace(&self, folder: &str) -> Result<(), DeskError> {
        Ok(self
            .runtime
            .set_setting(super::settings::LAST_WORKSPACE_KEY, &folder)
            .await?)
    }

    /// The folder a chat was last given, if it is still a folder Cairn can use: a new
    /// chat starts there.
    pub async fn last_workspace(&self) -> Result<Option<String>, DeskError> {
        let folder: Option<String> = self
            .runtime
            .setting(super::settings::LAST_WORKSPACE_KEY)
            .await?;
        Ok(folder.filter(|folder| check_workspace(folder).is_ok()))
    }

    pub async fn list_rules(&self) -> Result<Vec<RuleInfo>, DeskError> {
        Ok(self.runtime.rules().await?)
    }

    pub async fn add_rule(&self, list: RuleList, rule: &str) -> Result<RuleInfo, DeskError> {
        Ok(self.runtime.add_rule(list, rule).await?)
    }

    pub async fn remove_rule(&self, id: i64) -> Result<(), DeskError> {
        if self.runtime.remove_rule(id).await? {
            Ok(())
        } else {
            Err(DeskError::Invalid(format!("there is no rule {id}")))
        }
    }

    /// The tools a thread's next turn offers (the file tools need a workspace).
    pub async fn list_tools(&self, thread_id: Option<&str>) -> Result<Vec<ToolInfo>, DeskError> {
        Ok(self.runtime.tool_infos(thread_id).await?)
    }
}

/// A folder a thread can work in, as its full path, or why not.
pub fn check_workspace(folder: &str) -> Result<String, DeskError> {
    let root = cairn_runtime::check_workspace(Path::new(folder.trim()))?;
    Ok(root.display().to_string())
}
