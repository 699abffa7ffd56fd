//! The stored threads as both front ends see them: listed, searched, opened,
//! changed, exported and imported. A thread that is answering, in this process or
//! another, is never deleted, renamed or imported over.

use std::path::Path;

use cairn_protocol::desktop::{ExportFormat, RuleInfo, ThreadDetail};
use cairn_protocol::{LoggedCall, MessageView, PermissionMode, RuleList, SearchHit, ThreadInfo};
use cairn_store::{Page, StoredRule, ThreadExport};

use crate::{Export, Runtime, RuntimeError};

impl Runtime {
    /// The file the threads are kept in.
    pub fn database_path(&self) -> &Path {
        self.store.path()
    }

    pub async fn thread(&self, thread_id: &str) -> Result<ThreadInfo, RuntimeError> {
        Ok(self.store.thread(thread_id).await?)
    }

    /// `thread_id`'s thread, or none when no id is given.
    pub async fn thread_if(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Option<ThreadInfo>, RuntimeError> {
        match thread_id {
            Some(id) => Ok(Some(self.thread(id).await?)),
            None => Ok(None),
        }
    }

    /// Threads, the most recently changed first.
    pub async fn list_threads(
        &self,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<ThreadInfo>, RuntimeError> {
        Ok(self.store.list_threads(Page { limit, offset }).await?)
    }

    /// Messages matching `query`, best first.
    pub async fn search_threads(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<SearchHit>, RuntimeError> {
        Ok(self.store.search(query, limit).await?)
    }

    pub async fn messages(&self, thread_id: &str) -> Result<Vec<MessageView>, RuntimeError> {
        Ok(self.store.messages(thread_id).await?)
    }

    /// A thread with its messages, their execution trees, what they took, and whether
    /// it is answering in this process.
    pub async fn thread_detail(&self, thread_id: &str) -> Result<ThreadDetail, RuntimeError> {
        Ok(ThreadDetail {
            thread: self.store.thread(thread_id).await?,
            messages: self.store.messages(thread_id).await?,
            usage: self.store.thread_usage(thread_id).await?,
            running: self.is_running(thread_id),
        })
    }

    /// Sets a thread's mode; a running turn keeps the mode it started with.
    pub async fn set_mode(
        &self,
        thread_id: &str,
        mode: PermissionMode,
    ) -> Result<ThreadInfo, RuntimeError> {
        Ok(self.store.set_mode(thread_id, mode).await?)
    }

    /// Sets or clears the folder a thread's file tools work in (checked by the caller
    /// with [`crate::check_workspace`]).
    pub async fn set_workspace(
        &self,
        thread_id: &str,
        folder: Option<&Path>,
    ) -> Result<ThreadInfo, RuntimeError> {
        Ok(self.store.set_workspace(thread_id, folder).await?)
    }

    /// Deletes a thread. Refused while it answers, in this process or another.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), RuntimeError> {
        self.ensure_quiet(thread_id, "deleting").await?;
        if self.store.delete_thread(thread_id).await? {
            Ok(())
        } else {
            Err(cairn_store::StoreError::NotFound {
                kind: "thread",
                id: thread_id.to_owned(),
            }
            .into())
        }
    }

    /// Renames a thread. Refused while it answers, in this process or another.
    pub async fn rename_thread(
        &self,
        thread_id: &str,
        title: &str,
    ) -> Result<ThreadInfo, RuntimeError> {
        self.ensure_quiet(thread_id, "renaming").await?;
        Ok(self.store.rename_thread(thread_id, title).await?)
    }

    /// `thread_id` as Markdown or as Cairn's JSON export, named after its title.
    pub async fn export_thread(
        &self,
        thread_id: &str,
        format: ExportFormat,
    ) -> Result<Export, RuntimeError> {
        crate::export(&self.store, thread_id, format).await
    }

    /// Stores a thread exported as JSON. A thread of that id that is answering is
    /// left alone (one that is merely there is refused by the store).
    pub async fn import_thread(&self, export_json: &str) -> Result<ThreadInfo, RuntimeError> {
        let export: ThreadExport = serde_json::from_str(export_json)
            .map_err(|err| RuntimeError::NotAnExport(err.to_string()))?;
        self.ensure_quiet(&export.thread.id, "importing over")
            .await?;
        Ok(self.store.import(&export).await?)
    }

    /// The whole result of a call whose stored card keeps only its start.
    pub async fn tool_result(
        &self,
        message_id: &str,
        tool_call_id: &str,
    ) -> Result<String, RuntimeError> {
        self.store
            .tool_result(message_id, tool_call_id)
            .await?
            .ok_or_else(|| {
                cairn_store::StoreError::NotFound {
                    kind: "tool result",
                    id: tool_call_id.to_owned(),
                }
                .into()
            })
    }

    pub(crate) async fn ensure_quiet(
        &self,
        thread_id: &str,
        doing: &'static str,
    ) -> Result<(), RuntimeError> {
        if self.is_running(thread_id) || self.store.answered_elsewhere(thread_id).await? {
            return Err(RuntimeError::Answering { doing });
        }
        Ok(())
    }

    /// The permission rules, oldest first.
    pub async fn rules(&self) -> Result<Vec<RuleInfo>, RuntimeError> {
        Ok(self
            .store
            .rules()
            .await?
            .into_iter()
            .map(rule_info)
            .collect())
    }

    /// Adds a permission rule once it parses; adding it twice is no error.
    pub async fn add_rule(&self, list: RuleList, rule: &str) -> Result<RuleInfo, RuntimeError> {
        Ok(rule_info(
            crate::stored::add_rule(&self.store, list, rule).await?,
        ))
    }

    /// Removes rule `id` (false: there was none).
    pub async fn remove_rule(&self, id: i64) -> Result<bool, RuntimeError> {
        Ok(self.store.remove_rule(id).await?)
    }

    /// The usage log, call by call: one thread's, or every thread's.
    pub async fn usage_log(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Vec<LoggedCall>, RuntimeError> {
        if let Some(id) = thread_id {
            // A thread that is not there is an error, not an empty log.
            self.store.thread(id).await?;
        }
        Ok(self.store.model_calls(thread_id).await?)
    }
}

fn rule_info(rule: StoredRule) -> RuleInfo {
    RuleInfo {
        id: rule.id,
        list: rule.list,
        rule: rule.rule,
    }
}
