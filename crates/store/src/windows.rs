//! What model servers said about their models (the context window, whether the chat
//! template takes tools), kept across runs.

use crate::{Store, StoreError, now_ms};

/// A server's answer about one model, and when it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownWindow {
    /// The window in tokens, with where the figure came from; `None` when the server
    /// said nothing.
    pub window: Option<(u32, String)>,
    /// The model's chat template takes no tools: they go in its prompt as text.
    pub tools_in_text: bool,
    /// The model's parameter count, where the server said.
    pub params: Option<u64>,
    /// The server says how far it has read a prompt.
    pub reads_progress: bool,
    /// Milliseconds since the Unix epoch.
    pub asked_at: i64,
}

/// What a server said of a model besides its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SaidOfModel {
    /// Its chat template takes no tools.
    pub tools_in_text: bool,
    /// Its parameter count.
    pub params: Option<u64>,
    /// The server says how far it has read a prompt.
    pub reads_progress: bool,
}

impl Store {
    /// What `server` last said about `model`'s window, if it was asked.
    pub async fn context_window(
        &self,
        server: &str,
        model: &str,
    ) -> Result<Option<KnownWindow>, StoreError> {
        type Row = (Option<i64>, Option<String>, bool, Option<i64>, bool, i64);
        let row: Option<Row> = sqlx::query_as(
            "SELECT tokens, source, tools_in_text, params, reads_progress, asked_at \
             FROM context_windows WHERE server = ? AND model = ?",
        )
        .bind(server)
        .bind(model)
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(row.map(
            |(tokens, source, tools_in_text, params, reads_progress, asked_at)| KnownWindow {
                window: tokens
                    .and_then(|tokens| u32::try_from(tokens).ok())
                    .map(|tokens| (tokens, source.unwrap_or_default())),
                tools_in_text,
                params: params.and_then(|params| u64::try_from(params).ok()),
                reads_progress,
                asked_at,
            },
        ))
    }

    /// Keeps what `server` said about `model` now: its window, whether its chat
    /// template takes tools, its size and whether it says how far it has read.
    pub async fn set_context_window(
        &self,
        server: &str,
        model: &str,
        window: Option<(u32, &str)>,
        said: SaidOfModel,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO context_windows \
             (server, model, tokens, source, tools_in_text, params, reads_progress, asked_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (server, model) DO UPDATE SET \
             tokens = excluded.tokens, source = excluded.source, \
             tools_in_text = excluded.tools_in_text, params = excluded.params, \
             reads_progress = excluded.reads_progress, asked_at = excluded.asked_at",
        )
        .bind(server)
        .bind(model)
        .bind(window.map(|(tokens, _)| i64::from(tokens)))
        .bind(window.map(|(_, source)| source))
        .bind(said.tools_in_text)
        .bind(said.params.and_then(|params| i64::try_from(params).ok()))
        .bind(said.reads_progress)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(())
    }

    /// Forgets what `server` said about `model`'s window: it is asked again.
    pub async fn forget_context_window(&self, server: &str, model: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM context_windows WHERE server = ? AND model = ?")
            .bind(server)
            .bind(model)
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        Ok(())
    }
}
