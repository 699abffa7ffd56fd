//! Opening the database the desktop app shares, through the runtime.

use std::path::PathBuf;
use std::sync::Arc;

use cairn_runtime::{Limits, Runtime};

use crate::args::DbArgs;
use crate::exit::Failure;

impl DbArgs {
    pub fn path(&self) -> Result<PathBuf, Failure> {
        match &self.db {
            Some(path) => Ok(path.clone()),
            None => cairn_runtime::default_database_path().ok_or_else(|| {
                Failure::Usage(
                    "this system has no data folder for the database; pass --db PATH".into(),
                )
            }),
        }
    }

    /// The runtime over the database, with the default budgets.
    pub async fn open(&self) -> Result<Arc<Runtime>, Failure> {
        self.open_with(Limits::default()).await
    }

    pub async fn open_with(&self, limits: Limits) -> Result<Arc<Runtime>, Failure> {
        Ok(Runtime::open(&self.path()?, limits).await?)
    }
}
