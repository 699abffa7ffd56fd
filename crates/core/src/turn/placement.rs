//! Where a turn runs: the thread's server and the ones profiles name, the thread's
//! model and sampling (for a profile that names none of its own), and how a level is
//! fitted to the window its server says its model has.

use std::sync::Arc;

use crate::agent::Agent;
use crate::context::ContextFit;
use crate::level::Scope;
use crate::limits::Limits;
use crate::model::{ContextWindow, Sampling};
use crate::servers::{ModelServer, ServerDirectory, ServerUnusable};

use super::ending::Ending;

/// A window that cannot hold a turn: the root ends with it before any model call, and
/// a subtask asking such a model is refused with it.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the model's context window is {} tokens ({}), too small to work in: Cairn needs at \
     least {}. Raise it where the model is served: Ollama's num_ctx (or \
     OLLAMA_CONTEXT_LENGTH), the context length LM Studio loads the model with, llama.cpp's \
     --ctx-size or vLLM's --max-model-len; for Ollama, Cairn asks for at most --context-cap \
     tokens (the context_cap setting)",
    .0.tokens,
    .0.source,
    crate::context::MIN_WINDOW_TOKENS
)]
pub(crate) struct TooSmall(pub(super) ContextWindow);

pub(crate) struct Placement {
    /// The thread's server.
    pub(crate) home: Arc<ModelServer>,
    /// The servers profiles name.
    pub(crate) servers: Arc<dyn ServerDirectory>,
    thread_model: String,
    thread_sampling: Sampling,
    /// The engine's limits as configured, before any window: a level on another
    /// server is fitted from these.
    configured: Limits,
}

impl Placement {
    pub(crate) fn new(
        home: Arc<ModelServer>,
        servers: Arc<dyn ServerDirectory>,
        (thread_model, thread_sampling): (String, Sampling),
        configured: Limits,
    ) -> Self {
        Self {
            home,
            servers,
            thread_model,
            thread_sampling,
            configured,
        }
    }

    /// The server `agent`'s calls go to.
    pub(crate) async fn server_for(
        &self,
        agent: &Agent,
    ) -> Result<Arc<ModelServer>, ServerUnusable> {
        server_for(agent, &self.home, self.servers.as_ref()).await
    }

    /// Whether `model` is the one the thread asked for (not a profile's own).
    pub(crate) fn is_thread_model(&self, model: &str) -> bool {
        self.thread_model == model
    }

    /// The model and sampling `agent`'s calls on `server` use.
    pub(crate) fn model_for(&self, agent: &Agent, server: &ModelServer) -> (String, Sampling) {
        model_for(agent, server, &self.thread_model, self.thread_sampling)
    }

    /// Fits the level `scope` to `window` from its next request on, and has its
    /// server keep that window for the model: the server showed it to be so.
    pub(crate) async fn refit(&self, scope: &mut Scope, window: ContextWindow) {
        let client = &scope.server.client;
        scope.fit = ContextFit::new(
            self.configured,
            Some(window.clone()),
            scope.sampling.max_tokens,
        )
        .for_model(client.params(&scope.model));
        tracing::info!(model = %scope.model, fit = %scope.fit.describe(), "fitted again to what the server showed");
        client.learn_window(&scope.model, window).await;
    }

    /// How a level asking `model` on `server` fits that model's window: each server
    /// says its own. Configured limits stay the ceiling, as for the root. Refused when
    /// the window is too small to work in; not waited for once the turn is `ending`.
    pub(crate) async fn fit_on(
        &self,
        ending: &Ending,
        server: &ModelServer,
        model: &str,
        sampling: Sampling,
    ) -> Result<ContextFit, TooSmall> {
        let window = tokio::select! {
            biased;
            () = ending.stopped() => None,
            window = server.client.context_window(model) => window,
        };
        let fit = ContextFit::new(self.configured, window, sampling.max_tokens)
            .for_model(server.client.params(model));
        match fit.too_small() {
            Some(window) => Err(TooSmall(window.clone())),
            None => Ok(fit),
        }
    }

    /// Whether `server` is the thread's own.
    pub(crate) fn is_home(&self, server: &Arc<ModelServer>) -> bool {
        Arc::ptr_eq(server, &self.home)
    }
}

/// The server `agent`'s calls go to: the one it names, else the thread's (`home`).
pub(crate) async fn server_for(
    agent: &Agent,
    home: &Arc<ModelServer>,
    servers: &dyn ServerDirectory,
) -> Result<Arc<ModelServer>, ServerUnusable> {
    match agent.server.as_deref() {
        None => Ok(Arc::clone(home)),
        Some(name) if name == home.name => Ok(Arc::clone(home)),
        Some(name) => servers
            .server(name)
            .await
            .map_err(|why| ServerUnusable::Unavailable {
                agent: agent.id.clone(),
                server: name.to_owned(),
                why,
            }),
    }
}

/// A profile's own model and temperature where it names them; else the one model its
/// server serves, where that is known (a named server, not the thread's); else the
/// thread's.
pub(super) fn model_for(
    agent: &Agent,
    server: &ModelServer,
    thread_model: &str,
    thread_sampling: Sampling,
) -> (String, Sampling) {
    let mut sampling = thread_sampling;
    if agent.temperature.is_some() {
        sampling.temperature = agent.temperature;
    }
    let model = agent
        .model
        .as_deref()
        .or_else(|| server.served_model())
        .unwrap_or(thread_model)
        .to_owned();
    (model, sampling)
}

#[cfg(test)]
mod tests {
    use crate::model::{ChatRequest, ModelClient, ModelStream};
    use crate::servers::NoServers;

    use super::*;

    /// A server that is never asked anything here.
    struct Silent;

    impl ModelClient for Silent {
        fn stream_chat(&self, _request: ChatRequest) -> ModelStream {
            Box::pin(futures_util::stream::empty())
        }
    }

    fn server(name: &str) -> Arc<ModelServer> {
        Arc::new(ModelServer::new(name, Arc::new(Silent), 1))
    }

    #[tokio::test]
    async fn a_profile_runs_where_and_with_what_it_names_else_as_the_thread_does() {
        let home = server("home");
        let sampling = Sampling {
            temperature: Some(0.2),
            ..Sampling::default()
        };
        let placement = Placement::new(
            Arc::clone(&home),
            Arc::new(NoServers),
            ("thread-model".into(), sampling),
            Limits::default(),
        );
        let plain = Agent::default();
        let chosen = placement.server_for(&plain).await.unwrap();
        assert!(placement.is_home(&chosen));
        assert_eq!(
            placement.model_for(&plain, &chosen),
            ("thread-model".to_owned(), sampling)
        );
        assert!(placement.is_thread_model("thread-model"));

        let own = Agent {
            model: Some("coder".into()),
            temperature: Some(0.9),
            ..Agent::default()
        };
        let (model, sampled) = placement.model_for(&own, &chosen);
        assert_eq!((model.as_str(), sampled.temperature), ("coder", Some(0.9)));
        assert!(!placement.is_thread_model("coder"));

        // A server known to serve one model answers with it, for a profile naming none.
        let boxed =
            Arc::new(ModelServer::new("box", Arc::new(Silent), 1).serving(Some("qwen".into())));
        assert_eq!(placement.model_for(&plain, &boxed).0, "qwen");
        assert!(!placement.is_home(&boxed));

        let elsewhere = Agent {
            id: "gpu-worker".into(),
            server: Some("gpu".into()),
            ..Agent::default()
        };
        assert!(
            placement.server_for(&elsewhere).await.is_err(),
            "a server no list has"
        );
    }
}
