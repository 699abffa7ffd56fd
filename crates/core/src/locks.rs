//! Named exclusive locks shared by a whole turn, for tools that must not overlap
//! (writes to the workspace) even across parallel subtasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OwnedMutexGuard;

#[derive(Debug, Default)]
pub(crate) struct NamedLocks {
    locks: Mutex<HashMap<&'static str, Arc<tokio::sync::Mutex<()>>>>,
}

impl NamedLocks {
    pub(crate) async fn acquire(&self, name: &'static str) -> OwnedMutexGuard<()> {
        let lock = Arc::clone(
            self.locks
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(name)
                .or_default(),
        );
        lock.lock_owned().await
    }
}
