//! Whole tool results, kept beside the answer where its execution tree keeps only a
//! preview: what a card's "Show all" reads after a reload.

use crate::{Store, StoreError};

impl Store {
    /// Keeps the whole result of the call `tool_call_id` of the answer `message_id`.
    pub async fn keep_result(
        &self,
        message_id: &str,
        tool_call_id: &str,
        content: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT INTO tool_results (message_id, tool_call_id, content) VALUES (?, ?, ?) \
             ON CONFLICT (message_id, tool_call_id) DO UPDATE SET content = excluded.content",
        )
        .bind(message_id)
        .bind(tool_call_id)
        .bind(content)
        .execute(&mut *tx)
        .await
        .map_err(|err| self.err(err))?;
        tx.commit().await.map_err(|err| self.err(err))
    }

    /// The whole result kept for a call, if one was.
    pub async fn tool_result(
        &self,
        message_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar(
            "SELECT content FROM tool_results WHERE message_id = ? AND tool_call_id = ?",
        )
        .bind(message_id)
        .bind(tool_call_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| self.err(err))
    }
}
