//! Warm-ups: a server reads a turn's fixed prompt while the user is still writing the
//! question (see [`crate::Runtime::warm`]). A question sent while one is being read
//! waits for it to end: a server with several slots would otherwise read the same
//! prompt again beside it, and the user would wait for both. A server already
//! answering is sent none: it would only compete with that answer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};

use cairn_providers::{
    ChatRequest, ContextFuture, ContextWindow, LearnFuture, ModelClient, ModelStream, WarmFuture,
};
use futures_util::{StreamExt, stream};
use tokio::sync::Mutex;

/// The warm-up in flight on each server, if any, and the answers being written there.
#[derive(Debug, Default)]
pub(crate) struct WarmUps {
    servers: std::sync::Mutex<HashMap<String, Arc<Gate>>>,
}

#[derive(Debug, Default)]
struct Gate {
    warming: Mutex<()>,
    /// Answers opened or streaming.
    answering: AtomicUsize,
}

impl WarmUps {
    /// Runs `warm_up` on `server` unless another is in flight there (that one is
    /// enough: the user's next question waits for it). Whether it ran.
    pub(crate) async fn run(&self, server: &str, warm_up: impl Future<Output = ()>) -> bool {
        let gate = self.gate(server);
        let Ok(_held) = gate.warming.try_lock() else {
            return false;
        };
        // Checked once the warm-up holds the gate: an answer that starts later waits.
        if gate.answering.load(Ordering::SeqCst) > 0 {
            return false;
        }
        warm_up.await;
        true
    }

    /// `client` of `server`, whose answers start once no warm-up is in flight there.
    pub(crate) fn after(&self, server: &str, client: Arc<dyn ModelClient>) -> Arc<dyn ModelClient> {
        Arc::new(AfterWarmUps {
            inner: client,
            gate: self.gate(server),
        })
    }

    fn gate(&self, server: &str) -> Arc<Gate> {
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(servers.entry(server.to_owned()).or_default())
    }
}

struct AfterWarmUps {
    inner: Arc<dyn ModelClient>,
    gate: Arc<Gate>,
}

/// Counts an answer as being written until it is dropped.
struct Answering(Arc<Gate>);

impl Answering {
    fn start(gate: Arc<Gate>) -> Self {
        gate.answering.fetch_add(1, Ordering::SeqCst);
        Self(gate)
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.answering.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ModelClient for AfterWarmUps {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        // Counted before waiting: a warm-up that has not begun yet sees it and yields.
        let answering = Answering::start(Arc::clone(&self.gate));
        let inner = Arc::clone(&self.inner);
        Box::pin(
            stream::once(async move {
                drop(answering.0.warming.lock().await);
                inner.stream_chat(request).map(move |item| {
                    let _answering = &answering;
                    item
                })
            })
            .flatten(),
        )
    }

    fn context_window<'a>(&'a self, model: &'a str) -> ContextFuture<'a> {
        self.inner.context_window(model)
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

    fn learn_window<'a>(&'a self, model: &'a str, window: ContextWindow) -> LearnFuture<'a> {
        self.inner.learn_window(model, window)
    }
}
