//! The model servers a turn's levels run on: the thread's own ("home"), and the named
//! ones a profile picks with `server:` in its front matter. Each server takes only so
//! many requests at once (its slots): a level waits for one of its server's slots
//! before it takes one of the turn's, so a subtask queued on a busy machine never
//! holds up the work meant for another.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::model::ModelClient;
use crate::port::PortError;

/// One model server, connected, with its slots.
pub struct ModelServer {
    /// What the user calls it (`cairn servers list`); the usage log and the cards say it.
    pub name: String,
    pub client: Arc<dyn ModelClient>,
    /// Shared by every turn that asks this server: the slots are the server's, not
    /// a turn's.
    slots: Arc<Semaphore>,
    slot_count: usize,
    /// The one model it serves, where its directory learned that: what a profile that
    /// names this server but no model asks (the thread's model name means nothing on
    /// another machine).
    served_model: Option<String>,
    /// How fast it read its last whole prompt, in tokens a thousand seconds (0: not
    /// yet seen): what a prompt's time left is told from.
    read_rate: AtomicU64,
}

impl fmt::Debug for ModelServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelServer")
            .field("name", &self.name)
            .field("slots", &self.slot_count)
            .finish_non_exhaustive()
    }
}

impl ModelServer {
    /// A server with `slots` requests at once, counted by this handle alone.
    pub fn new(name: impl Into<String>, client: Arc<dyn ModelClient>, slots: usize) -> Self {
        let slots = slots.max(1);
        Self::sharing(name, client, Arc::new(Semaphore::new(slots)), slots)
    }

    /// A server whose `slots` (`count` of them) are shared with other handles on it:
    /// a front end keeps one semaphore per server for all its turns.
    pub fn sharing(
        name: impl Into<String>,
        client: Arc<dyn ModelClient>,
        slots: Arc<Semaphore>,
        count: usize,
    ) -> Self {
        Self {
            name: name.into(),
            client,
            slots,
            slot_count: count,
            served_model: None,
            read_rate: AtomicU64::new(0),
        }
    }

    /// `read` as the turn shows it: with the time the rest should take at the speed
    /// this server read a whole prompt at before; a prompt read to its end is that
    /// speed from now on.
    pub(crate) fn reading(&self, read: &crate::model::PromptRead) -> Option<u64> {
        let fresh = read.read.saturating_sub(read.cached);
        if read.read >= read.total && fresh > 0 && read.elapsed_ms > 0 {
            self.read_rate
                .store(fresh * 1_000_000 / read.elapsed_ms, Ordering::Relaxed);
        }
        let rate = self.read_rate.load(Ordering::Relaxed);
        (rate > 0).then(|| read.total.saturating_sub(read.read) * 1_000_000 / rate)
    }

    /// The same server, known to serve `model` alone.
    #[must_use]
    pub fn serving(mut self, model: Option<String>) -> Self {
        self.served_model = model;
        self
    }

    /// The one model it serves, when known.
    pub fn served_model(&self) -> Option<&str> {
        self.served_model.as_deref()
    }

    /// How many requests it takes at once.
    pub fn slot_count(&self) -> usize {
        self.slot_count
    }

    /// A slot at once, if one is free.
    pub(crate) fn try_slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }

    /// A slot, once one is free.
    pub(crate) async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).acquire_owned().await.ok()
    }
}

pub type ServerFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Arc<ModelServer>, PortError>> + Send + 'a>>;
pub type ProbeFuture<'a> = Pin<Box<dyn Future<Output = Result<(), PortError>> + Send + 'a>>;

/// Why the server a profile names cannot be used: the turn fails with it at the root,
/// and the model reads it where it asked for a subtask or a hand-over.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServerUnusable {
    #[error("the agent `{agent}` runs on the server `{server}`: {why}")]
    Unavailable {
        agent: String,
        server: String,
        why: PortError,
    },
    #[error("the agent `{agent}` runs on the server `{server}`, which cannot be reached: {why}")]
    Unreachable {
        agent: String,
        server: String,
        why: PortError,
    },
}

/// The servers the user named, for the profiles that pick one. An error's words are
/// for the model and the user alike (why the server cannot be used); the engine adds
/// which profile and which server.
pub trait ServerDirectory: Send + Sync {
    /// The server called `name`, ready to be asked (nothing is sent yet).
    fn server<'a>(&'a self, name: &'a str) -> ServerFuture<'a>;

    /// Whether `server` answers now: a hand-over asks before it gives the thread to a
    /// profile on another machine.
    fn probe<'a>(&'a self, server: &'a ModelServer) -> ProbeFuture<'a> {
        let _ = server;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The directory of a front end that names no servers: every name is unknown.
#[derive(Debug, Default)]
pub struct NoServers;

impl ServerDirectory for NoServers {
    fn server<'a>(&'a self, name: &'a str) -> ServerFuture<'a> {
        Box::pin(std::future::ready(Err(PortError::new(format!(
            "there is no server `{name}`: none are named here"
        )))))
    }
}
