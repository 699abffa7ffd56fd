//! What model servers say about their models (the context window, whether the chat
//! template takes tools), kept in the store across runs: a run that finds a fresh
//! answer there asks the server nothing before its first model call (each question is
//! a round trip, and every `cairn run` is a new process). A request the server refuses
//! as too large for the model's context makes the answer stale at once: the next turn
//! asks again.

use std::sync::Arc;
use std::time::Duration;

use cairn_providers::{
    ChatRequest, ContextFuture, ContextWindow, LearnFuture, ModelClient, ModelStream, Said,
    WarmFuture,
};
use cairn_store::Store;
use futures_util::StreamExt;

/// How long an answer is trusted unless the front end says otherwise: long enough
/// for a script's runs, short enough that a server started again at a larger size is
/// soon used at it (at a smaller one, its refusal says so at once).
pub const KEPT_FOR: Duration = Duration::from_secs(10 * 60);

/// A model client whose context windows are remembered in the store.
pub(crate) struct RememberedWindows {
    inner: Arc<dyn ModelClient>,
    store: Store,
    /// The server's address, as the client names it.
    server: String,
    /// How old a stored answer may be and still be used.
    trusted_for: Duration,
}

impl RememberedWindows {
    pub fn wrap(
        inner: Arc<dyn ModelClient>,
        store: Store,
        server: &str,
        trusted_for: Duration,
    ) -> Arc<dyn ModelClient> {
        Arc::new(Self {
            inner,
            store,
            server: server.to_owned(),
            trusted_for,
        })
    }

    /// The window the store holds for `model`, when it was asked recently enough.
    async fn stored(&self, model: &str) -> Option<Option<ContextWindow>> {
        let known = match self.store.context_window(&self.server, model).await {
            Ok(known) => known?,
            Err(err) => {
                // Asking the server instead costs a round trip, not the turn.
                tracing::debug!(error = %err, "the stored context window cannot be read");
                return None;
            }
        };
        let age = Duration::from_millis(
            u64::try_from(now_ms().saturating_sub(known.asked_at)).unwrap_or(0),
        );
        if age >= self.trusted_for {
            return None;
        }
        let said = Said {
            window: known
                .window
                .map(|(tokens, source)| ContextWindow::new(tokens, source)),
            tools_in_text: known.tools_in_text,
            slots: None,
            params: known.params,
            reads_progress: known.reads_progress,
        };
        // The client reads it too (Ollama sends the window back as num_ctx; a template
        // without tools gets them in its prompt).
        cairn_providers::windows::remember(&self.server, model, said.clone(), age);
        Some(said.window)
    }
}

impl ModelClient for RememberedWindows {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let model = request.model.clone();
        let store = self.store.clone();
        let server = self.server.clone();
        let stream = self.inner.stream_chat(request);
        // Forgotten before the error goes on, so a run that ends on it has forgotten.
        Box::pin(stream.then(move |item| {
            let stale = match &item {
                Err(err) if err.is_context_overflow() => {
                    Some((store.clone(), server.clone(), model.clone()))
                }
                _ => None,
            };
            async move {
                if let Some((store, server, model)) = stale {
                    tracing::info!(%server, %model, "the server refused a request as too large; its window is asked again");
                    cairn_providers::windows::forget(&server, &model);
                    if let Err(err) = store.forget_context_window(&server, &model).await {
                        tracing::warn!(error = %err, "a stale context window could not be forgotten");
                    }
                }
                item
            }
        }))
    }

    fn context_window<'a>(&'a self, model: &'a str) -> ContextFuture<'a> {
        Box::pin(async move {
            if let Some(window) = self.stored(model).await {
                return window;
            }
            let window = self.inner.context_window(model).await;
            let server_said = cairn_providers::windows::said(&self.server, model);
            let of_model = cairn_store::SaidOfModel {
                tools_in_text: self.inner.tools_in_text(model),
                params: server_said.as_ref().and_then(|said| said.params),
                reads_progress: server_said.is_some_and(|said| said.reads_progress),
            };
            let said = window
                .as_ref()
                .map(|window| (window.tokens, window.source.as_str()));
            if let Err(err) = self
                .store
                .set_context_window(&self.server, model, said, of_model)
                .await
            {
                tracing::debug!(error = %err, "the context window cannot be kept");
            }
            window
        })
    }

    fn can_call_tools(&self, model: &str) -> bool {
        self.inner.can_call_tools(model)
    }

    fn tools_in_text(&self, model: &str) -> bool {
        self.inner.tools_in_text(model)
    }

    fn params(&self, model: &str) -> Option<u64> {
        self.inner.params(model)
    }

    fn keeps_prefix(&self, model: &str) -> bool {
        self.inner.keeps_prefix(model)
    }

    fn warm(&self, request: ChatRequest) -> WarmFuture<'_> {
        self.inner.warm(request)
    }

    /// Kept in the store too: the next run fits the window the server showed, not
    /// the one it says.
    fn learn_window<'a>(&'a self, model: &'a str, window: ContextWindow) -> LearnFuture<'a> {
        Box::pin(async move {
            self.inner.learn_window(model, window.clone()).await;
            let of_model = cairn_store::SaidOfModel {
                tools_in_text: self.inner.tools_in_text(model),
                params: self.inner.params(model),
                reads_progress: cairn_providers::windows::said(&self.server, model)
                    .is_some_and(|said| said.reads_progress),
            };
            let said = Some((window.tokens, window.source.as_str()));
            if let Err(err) = self
                .store
                .set_context_window(&self.server, model, said, of_model)
                .await
            {
                tracing::warn!(error = %err, "the window the server showed cannot be kept");
            }
        })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}
