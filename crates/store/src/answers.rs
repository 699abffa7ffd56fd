//! The writes of a turn's answer that the runtime's recorder makes: the final commit
//! with its model-call log, and the approvals waiting meanwhile.

use cairn_protocol::{ModelCall, ToolApprovalRequest};

use crate::messages::{AnswerSnapshot, update_assistant};
use crate::{Store, StoreError, now_ms};

impl Store {
    /// The final write of a turn: the message, its model calls, no pending approvals.
    pub async fn finish_turn(
        &self,
        thread_id: &str,
        message_id: &str,
        snapshot: AnswerSnapshot<'_>,
        calls: &[ModelCall],
    ) -> Result<(), StoreError> {
        let fail = |err| self.err(err);
        let mut tx = self.write().await?;
        update_assistant(self, &mut tx, thread_id, message_id, snapshot).await?;
        for call in calls {
            sqlx::query(
                "INSERT INTO model_calls (thread_id, message_id, operation, model, server, depth, \
                 prompt_tokens, completion_tokens, estimated, latency_ms, first_token_ms, error, \
                 created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(thread_id)
            .bind(message_id)
            .bind(&call.operation)
            .bind(&call.model)
            .bind(&call.server)
            .bind(i64::from(call.depth))
            .bind(saturate(call.prompt_tokens))
            .bind(saturate(call.completion_tokens))
            .bind(call.estimated)
            .bind(saturate(call.latency_ms))
            .bind(call.first_token_ms.map(saturate))
            .bind(&call.error)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        }
        sqlx::query("DELETE FROM pending_approvals WHERE message_id = ?")
            .bind(message_id)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)
    }

    pub async fn add_pending_approval(
        &self,
        thread_id: &str,
        message_id: &str,
        request: &ToolApprovalRequest,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(request)
            .map_err(|err| StoreError::Invalid(format!("cannot encode the approval: {err}")))?;
        sqlx::query(
            "INSERT OR REPLACE INTO pending_approvals (approval_id, thread_id, message_id, tool_call_id, request, created_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&request.approval_id)
        .bind(thread_id)
        .bind(message_id)
        .bind(&request.tool_call_id)
        .bind(json)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(())
    }

    pub async fn remove_pending_approval(
        &self,
        message_id: &str,
        tool_call_id: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM pending_approvals WHERE message_id = ? AND tool_call_id = ?")
            .bind(message_id)
            .bind(tool_call_id)
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        Ok(())
    }

    /// Approvals recorded as waiting, oldest first (for a front end that restarted).
    pub async fn pending_approvals(
        &self,
        thread_id: &str,
    ) -> Result<Vec<ToolApprovalRequest>, StoreError> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT request FROM pending_approvals WHERE thread_id = ? ORDER BY created_at, approval_id",
        )
        .bind(thread_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        rows.iter()
            .map(|json| {
                serde_json::from_str(json).map_err(|err| {
                    StoreError::Invalid(format!("a stored approval cannot be read: {err}"))
                })
            })
            .collect()
    }

    /// The usage log: every model call, oldest first, of one thread or of all.
    pub async fn model_calls(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Vec<cairn_protocol::LoggedCall>, StoreError> {
        let rows: Vec<CallRow> = sqlx::query_as(
            "SELECT thread_id, message_id, operation, model, server, depth, prompt_tokens, \
             completion_tokens, estimated, latency_ms, first_token_ms, error, created_at \
             FROM model_calls WHERE ?1 IS NULL OR thread_id = ?1 ORDER BY id",
        )
        .bind(thread_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(rows.into_iter().map(CallRow::into_logged).collect())
    }

    /// A thread's answers in order, as far as what they took goes: not their text or
    /// their trees, which a usage view has no use for.
    pub async fn answer_spans(&self, thread_id: &str) -> Result<Vec<AnswerSpan>, StoreError> {
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT id, COALESCE(json_extract(usage, '$.tool_calls'), 0), created_at, \
             updated_at FROM messages WHERE thread_id = ? AND role = 'assistant' ORDER BY seq",
        )
        .bind(thread_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(rows
            .into_iter()
            .map(|(id, tool_calls, created_at, updated_at)| AnswerSpan {
                id,
                tool_calls: u64::try_from(tool_calls).unwrap_or(0),
                elapsed_ms: u64::try_from(updated_at - created_at).unwrap_or(0),
            })
            .collect())
    }

    /// Tokens used in a thread so far, over every model call.
    pub async fn thread_usage(&self, thread_id: &str) -> Result<cairn_protocol::Usage, StoreError> {
        let row: (i64, i64, i64, bool) = sqlx::query_as(
            "SELECT COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), COUNT(*), \
             COALESCE(MAX(estimated), 0) FROM model_calls WHERE thread_id = ?",
        )
        .bind(thread_id)
        .fetch_one(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(cairn_protocol::Usage {
            prompt_tokens: u64::try_from(row.0).unwrap_or(0),
            completion_tokens: u64::try_from(row.1).unwrap_or(0),
            llm_calls: u64::try_from(row.2).unwrap_or(0),
            tool_calls: 0,
            estimated: row.3,
            // Said per turn (`done.usage`); the usage log does not keep it.
            cached_prompt_tokens: 0,
        })
    }
}

/// An answer as [`Store::answer_spans`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerSpan {
    pub id: String,
    pub tool_calls: u64,
    /// From its start to its last write (its end, once it ended).
    pub elapsed_ms: u64,
}

/// A row of `model_calls`.
#[derive(sqlx::FromRow)]
struct CallRow {
    thread_id: String,
    message_id: Option<String>,
    operation: String,
    model: String,
    server: Option<String>,
    depth: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    estimated: bool,
    latency_ms: i64,
    first_token_ms: Option<i64>,
    error: Option<String>,
    created_at: i64,
}

impl CallRow {
    fn into_logged(self) -> cairn_protocol::LoggedCall {
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        cairn_protocol::LoggedCall {
            thread_id: self.thread_id,
            message_id: self.message_id,
            call: cairn_protocol::ModelCall {
                operation: self.operation,
                model: self.model,
                server: self.server,
                depth: u32::try_from(self.depth).unwrap_or(0),
                prompt_tokens: count(self.prompt_tokens),
                completion_tokens: count(self.completion_tokens),
                estimated: self.estimated,
                latency_ms: count(self.latency_ms),
                first_token_ms: self.first_token_ms.map(count),
                error: self.error,
            },
            created_at: self.created_at,
        }
    }
}

fn saturate(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
