//! Threads: create, list, rename, configure, delete.

use std::path::Path;

use cairn_protocol::{MessageStatus, PermissionMode, ThreadInfo};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Store, StoreError, new_id, now_ms};

/// What a new thread starts with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewThread {
    pub title: String,
    pub mode: PermissionMode,
    pub workspace: Option<String>,
    pub dialect: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
}

/// A page of the thread list, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u32,
    pub offset: u32,
}

impl Default for Page {
    fn default() -> Self {
        Self {
            limit: 50,
            offset: 0,
        }
    }
}

const THREAD_COLUMNS: &str = "t.id, t.title, t.mode, t.workspace, t.dialect, t.base_url, t.model, \
     t.agent, t.routes, \
     t.created_at, t.updated_at, (SELECT COUNT(*) FROM messages m WHERE m.thread_id = t.id) AS message_count, \
     (SELECT m.status FROM messages m WHERE m.thread_id = t.id AND m.role = 'assistant' \
      ORDER BY m.seq DESC LIMIT 1) AS last_status";

pub(crate) fn thread_from_row(row: &SqliteRow) -> Result<ThreadInfo, sqlx::Error> {
    let mode: String = row.try_get("mode")?;
    Ok(ThreadInfo {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        mode: mode
            .parse()
            .map_err(|err| sqlx::Error::Decode(Box::new(err)))?,
        workspace: row.try_get("workspace")?,
        dialect: row.try_get("dialect")?,
        base_url: row.try_get("base_url")?,
        model: row.try_get("model")?,
        agent: row.try_get("agent")?,
        routes: row.try_get("routes")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        message_count: u64::try_from(row.try_get::<i64, _>("message_count")?).unwrap_or(0),
        last_status: row
            .try_get::<Option<String>, _>("last_status")?
            .as_deref()
            .and_then(MessageStatus::parse),
    })
}

impl Store {
    pub async fn create_thread(&self, new: NewThread) -> Result<ThreadInfo, StoreError> {
        let id = new_id();
        let now = now_ms();
        let title = if new.title.trim().is_empty() {
            "New chat".to_owned()
        } else {
            new.title
        };
        sqlx::query(
            "INSERT INTO threads (id, title, mode, workspace, dialect, base_url, model, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(&title)
        .bind(new.mode.as_str())
        .bind(&new.workspace)
        .bind(&new.dialect)
        .bind(&new.base_url)
        .bind(&new.model)
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        self.thread(&id).await
    }

    pub async fn thread(&self, id: &str) -> Result<ThreadInfo, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads t WHERE t.id = ?"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| self.err(err))?
        .ok_or_else(|| StoreError::NotFound {
            kind: "thread",
            id: id.to_owned(),
        })?;
        thread_from_row(&row).map_err(|err| self.err(err))
    }

    /// Threads, most recently active first.
    pub async fn list_threads(&self, page: Page) -> Result<Vec<ThreadInfo>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads t ORDER BY t.updated_at DESC, t.id DESC LIMIT ? OFFSET ?"
        ))
        .bind(i64::from(page.limit))
        .bind(i64::from(page.offset))
        .fetch_all(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        rows.iter()
            .map(thread_from_row)
            .collect::<Result<_, _>>()
            .map_err(|err| self.err(err))
    }

    pub async fn rename_thread(&self, id: &str, title: &str) -> Result<ThreadInfo, StoreError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(StoreError::Invalid(
                "a thread's title cannot be empty".into(),
            ));
        }
        self.update_thread(id, "title", Some(title)).await
    }

    /// The permission mode: set only by the user.
    pub async fn set_mode(&self, id: &str, mode: PermissionMode) -> Result<ThreadInfo, StoreError> {
        self.update_thread(id, "mode", Some(mode.as_str())).await
    }

    /// The workspace folder; it must exist and is stored as its canonical path.
    pub async fn set_workspace(
        &self,
        id: &str,
        folder: Option<&Path>,
    ) -> Result<ThreadInfo, StoreError> {
        let canonical = match folder {
            Some(folder) => {
                let canonical = folder.canonicalize().map_err(|err| {
                    StoreError::Invalid(format!(
                        "{} cannot be a workspace: {err}",
                        folder.display()
                    ))
                })?;
                if !canonical.is_dir() {
                    return Err(StoreError::Invalid(format!(
                        "{} is not a folder",
                        folder.display()
                    )));
                }
                Some(canonical.to_string_lossy().into_owned())
            }
            None => None,
        };
        self.update_thread(id, "workspace", canonical.as_deref())
            .await
    }

    /// The server and model the thread talks to.
    pub async fn set_model(
        &self,
        id: &str,
        dialect: &str,
        base_url: &str,
        model: &str,
    ) -> Result<ThreadInfo, StoreError> {
        let result = sqlx::query(
            "UPDATE threads SET dialect = ?, base_url = ?, model = ?, updated_at = ? WHERE id = ?",
        )
        .bind(dialect)
        .bind(base_url)
        .bind(model)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        touched(&result, id)?;
        self.thread(id).await
    }

    /// The agent profile the thread answers as; `routes` once it ran with the router.
    pub async fn set_agent(
        &self,
        id: &str,
        agent: &str,
        routes: bool,
    ) -> Result<ThreadInfo, StoreError> {
        let result = sqlx::query(
            "UPDATE threads SET agent = ?, routes = routes OR ?, updated_at = ? WHERE id = ?",
        )
        .bind(agent)
        .bind(routes)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        touched(&result, id)?;
        self.thread(id).await
    }

    async fn update_thread(
        &self,
        id: &str,
        column: &'static str,
        value: Option<&str>,
    ) -> Result<ThreadInfo, StoreError> {
        let result = sqlx::query(&format!(
            "UPDATE threads SET {column} = ?, updated_at = ? WHERE id = ?"
        ))
        .bind(value)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        touched(&result, id)?;
        self.thread(id).await
    }

    /// Deletes a thread with all its messages; `false` if there was none.
    pub async fn delete_thread(&self, id: &str) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM threads WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        Ok(result.rows_affected() > 0)
    }
}

impl Store {
    /// A thread's own model parameters (none set: empty).
    pub async fn thread_llm_params(
        &self,
        id: &str,
    ) -> Result<cairn_protocol::LlmParams, StoreError> {
        let json: Option<Option<String>> =
            sqlx::query_scalar("SELECT llm_params FROM threads WHERE id = ?")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|err| self.err(err))?;
        let Some(json) = json else {
            return Err(StoreError::NotFound {
                kind: "thread",
                id: id.to_owned(),
            });
        };
        json.map(|json| {
            serde_json::from_str(&json).map_err(|err| {
                StoreError::Invalid(format!(
                    "the thread's model parameters cannot be read: {err}"
                ))
            })
        })
        .transpose()
        .map(Option::unwrap_or_default)
    }

    pub async fn set_thread_llm_params(
        &self,
        id: &str,
        params: &cairn_protocol::LlmParams,
    ) -> Result<(), StoreError> {
        let json = if params.is_empty() {
            None
        } else {
            Some(serde_json::to_string(params).map_err(|err| {
                StoreError::Invalid(format!("cannot encode the model parameters: {err}"))
            })?)
        };
        let result = sqlx::query("UPDATE threads SET llm_params = ? WHERE id = ?")
            .bind(json)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        touched(&result, id)?;
        Ok(())
    }
}

/// A thread update that changed no row found no thread.
fn touched(result: &sqlx::sqlite::SqliteQueryResult, id: &str) -> Result<(), StoreError> {
    if result.rows_affected() == 0 {
        return Err(StoreError::NotFound {
            kind: "thread",
            id: id.to_owned(),
        });
    }
    Ok(())
}
