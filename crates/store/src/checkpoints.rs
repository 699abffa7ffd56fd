//! What an answer's writes replaced, kept with the answer: the content each file held
//! before the answer first wrote it, and what the answer left in it. Restoring puts
//! the first back where the file still holds the second.

use crate::{Store, StoreError, now_ms};

/// One file an answer wrote.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FileCheckpoint {
    /// Workspace-relative.
    pub path: String,
    /// The workspace folder it was written in.
    pub workspace: String,
    /// Whether the file was there before the answer wrote it.
    pub existed: bool,
    /// What it held then; `None` where it did not exist, or was too large to keep.
    pub before: Option<Vec<u8>>,
    /// What the answer's last write of it left (empty where it removed the file).
    pub after: Vec<u8>,
    /// The answer's last change of the path removed the file (a command deleted it).
    pub removed: bool,
}

impl Store {
    /// Keeps that the answer `message_id` wrote `file.path`: the first write of a path
    /// keeps what was there before; every write keeps what it left.
    pub async fn record_write(
        &self,
        message_id: &str,
        file: &FileCheckpoint,
    ) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        insert_write(self, &mut tx, message_id, file).await?;
        tx.commit().await.map_err(|err| self.err(err))
    }

    /// The files the answer `message_id` wrote and that were not put back yet, by path.
    pub async fn checkpoint(&self, message_id: &str) -> Result<Vec<FileCheckpoint>, StoreError> {
        sqlx::query_as(UNRESTORED)
            .bind(message_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|err| self.err(err))
    }

    /// The thread's last answer with files to put back, if any.
    pub async fn last_restorable(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar(
            "SELECT m.id FROM messages m WHERE m.thread_id = ? AND EXISTS \
             (SELECT 1 FROM checkpoints c WHERE c.message_id = m.id AND c.restored_at IS NULL \
              AND (c.existed = 1 OR c.removed = 0)) \
             ORDER BY m.seq DESC LIMIT 1",
        )
        .bind(thread_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| self.err(err))
    }

    /// Whether `message_id` is a message of the thread `thread_id`.
    pub async fn message_in_thread(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<bool, StoreError> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM messages WHERE id = ? AND thread_id = ?")
                .bind(message_id)
                .bind(thread_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|err| self.err(err))?;
        Ok(found.is_some())
    }

    /// Marks the answer's files as put back: Restore is not offered for them again.
    pub async fn mark_restored(&self, message_id: &str) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        sqlx::query(
            "UPDATE checkpoints SET restored_at = ? WHERE message_id = ? AND restored_at IS NULL",
        )
        .bind(now_ms())
        .bind(message_id)
        .execute(&mut *tx)
        .await
        .map_err(|err| self.err(err))?;
        tx.commit().await.map_err(|err| self.err(err))
    }
}

/// Keeps `file` for `message_id`: a path already kept keeps its first "before".
pub(crate) async fn insert_write(
    store: &Store,
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    message_id: &str,
    file: &FileCheckpoint,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO checkpoints (message_id, path, workspace, existed, before, after, removed) \
         VALUES (?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (message_id, path) DO UPDATE SET after = excluded.after, \
         removed = excluded.removed",
    )
    .bind(message_id)
    .bind(&file.path)
    .bind(&file.workspace)
    .bind(file.existed)
    .bind(&file.before)
    .bind(&file.after)
    .bind(file.removed)
    .execute(&mut **tx)
    .await
    .map_err(|err| store.err(err))?;
    Ok(())
}

/// The writes of `message_id` not yet put back, by path.
const UNRESTORED: &str = "SELECT path, workspace, existed, before, after, removed FROM checkpoints \
                          WHERE message_id = ? AND restored_at IS NULL ORDER BY path";

/// [`Store::checkpoint`] within a transaction: what an answer being replaced wrote.
pub(crate) async fn unrestored_writes(
    store: &Store,
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    message_id: &str,
) -> Result<Vec<FileCheckpoint>, StoreError> {
    sqlx::query_as(UNRESTORED)
        .bind(message_id)
        .fetch_all(&mut **tx)
        .await
        .map_err(|err| store.err(err))
}
