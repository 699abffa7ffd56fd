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
    /// Milliseconds since the Unix epoch.
    pub asked_at: i64,
}

impl Store {
    /// What `server` last said about `model`'s window, if it was asked.
    pub async fn context_window(
        &self,
        server: &str,
        model: &str,
    ) -> Result<Option<KnownWindow>, StoreError> {
        let row: Option<(Option<i64>, Option<String>, bool, i64)> = sqlx::query_as(
            "SELECT tokens, source, tools_in_text, asked_at FROM context_windows \
             WHERE server = ? AND model = ?",
        )
        .bind(server)
        .bind(model)
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(
            row.map(|(tokens, source, tools_in_text, asked_at)| KnownWindow {
                window: tokens
                    .and_then(|tokens| u32::try_from(tokens).ok())
                    .map(|tokens| (tokens, source.unwrap_or_default())),
                tools_in_text,
                asked_at,
            }),
        )
    }

    /// Keeps what `server` said about `model` now: its window, and whether its chat
    /// template takes tools.
    pub async fn set_context_window(
        &self,
        server: &str,
        model: &str,
        window: Option<(u32, &str)>,
        tools_in_text: bool,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO context_windows (server, model, tokens, source, tools_in_text, asked_at) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server, model) DO UPDATE SET \
             tokens = excluded.tokens, source = excluded.source, \
             tools_in_text = excluded.tools_in_text, asked_at = excluded.asked_at",
        )
        .bind(server)
        .bind(model)
        .bind(window.map(|(tokens, _)| i64::from(tokens)))
        .bind(window.map(|(_, source)| source))
        .bind(tools_in_text)
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
