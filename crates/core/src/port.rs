//! How a port fails: the plan book, the memory, the hand-over are filled from outside
//! the engine (by the store, in the runtime), and their failures are the filler's own
//! errors, kept whole so a caller can still tell them apart (`downcast_ref`).

use std::error::Error;

/// A port's implementation failed; its own error is the source.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct PortError(Box<dyn Error + Send + Sync>);

impl PortError {
    pub fn new(err: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self(err.into())
    }

    /// The implementation's error, when it is a `T`.
    pub fn downcast_ref<T: Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}
