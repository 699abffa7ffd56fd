//! How many model requests and tool executions of one turn run at once, across every
//! depth: at most `max_parallel_per_turn`. A subtask waiting on its child holds none,
//! so nesting cannot starve itself.

use cairn_protocol::{Event, ServerState};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

use super::ending::Ending;
use crate::events::Emitter;
use crate::level::Scope;

pub(crate) struct Slots(Semaphore);

impl Slots {
    pub fn new(max_parallel: usize) -> Self {
        Self(Semaphore::new(max_parallel.max(1)))
    }

    /// A slot for one model request or tool execution, once one is free; none when
    /// the turn stops first.
    pub async fn take(&self, ending: &Ending) -> Option<SemaphorePermit<'_>> {
        tokio::select! {
            biased;
            () = ending.stopped() => None,
            permit = self.0.acquire() => permit.ok(),
        }
    }

    /// The slots one model request of the level `scope` holds: one of its server's
    /// first (said on the wire while it waits), then one of the turn's. Waiting for
    /// the server holds nothing of the turn's, so requests to other servers go on.
    /// `None` when the turn stops first.
    pub async fn for_model(
        &self,
        scope: &Scope,
        ending: &Ending,
        emitter: &Emitter,
    ) -> Option<(OwnedSemaphorePermit, SemaphorePermit<'_>)> {
        let server = &scope.server;
        let held = match server.try_slot() {
            Some(permit) => permit,
            None => {
                let state = |waiting| {
                    Event::ServerState(ServerState {
                        parent_id: scope.parent_id.clone(),
                        depth: scope.depth,
                        server: server.name.clone(),
                        waiting,
                    })
                };
                emitter.emit(state(true));
                let permit = tokio::select! {
                    biased;
                    () = ending.stopped() => None,
                    permit = server.slot() => permit,
                };
                emitter.emit(state(false));
                permit?
            }
        };
        Some((held, self.take(ending).await?))
    }
}
