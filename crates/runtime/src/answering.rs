//! The rule every front end shares about a thread that is answering: it is not
//! deleted or renamed, nor answered in a second time, whether the answer runs in this
//! process or in another one sharing the database (the app and a CLI run).

use cairn_core::SessionError;
use cairn_store::Store;

use crate::RuntimeError;

/// This process's mark on a thread it answers in (see [`Store::claim_answering`]),
/// taken off when released or, failing that, when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    store: Store,
    thread_id: String,
    held: bool,
}

impl Lease {
    /// Marks `thread_id` as answered here; refused when another process answers in it.
    pub(crate) async fn take(store: &Store, thread_id: &str) -> Result<Self, RuntimeError> {
        if !store.claim_answering(thread_id).await? {
            return Err(SessionError::AlreadyRunning.into());
        }
        Ok(Self {
            store: store.clone(),
            thread_id: thread_id.to_owned(),
            held: true,
        })
    }

    pub(crate) async fn release(mut self) {
        self.held = false;
        release(&self.store, &self.thread_id).await;
    }
}

impl Drop for Lease {
    /// A turn that failed to start: the mark comes off in the background.
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, thread_id) = (self.store.clone(), std::mem::take(&mut self.thread_id));
            runtime.spawn(async move { release(&store, &thread_id).await });
        }
    }
}

async fn release(store: &Store, thread_id: &str) {
    if let Err(err) = store.release_answering(thread_id).await {
        // Harmless once this process ends: a mark whose process is gone holds nothing.
        tracing::warn!(thread_id, error = %err, "a thread's answering mark stayed");
    }
}
