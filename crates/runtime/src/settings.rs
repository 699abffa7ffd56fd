//! Settings a front end keeps beside the threads (its window, its form), by key.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Runtime, RuntimeError};

impl Runtime {
    /// The value kept under `key`, if any.
    pub async fn setting<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, RuntimeError> {
        Ok(self.store.setting(key).await?)
    }

    /// Keeps `value` under `key`, replacing what was there.
    pub async fn set_setting<T: Serialize>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<(), RuntimeError> {
        Ok(self.store.set_setting(key, value).await?)
    }
}
