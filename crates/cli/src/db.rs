//! Opening the database the desktop app shares.

use std::path::PathBuf;

use cairn_store::Store;

use crate::args::DbArgs;
use crate::exit::Failure;

impl DbArgs {
    pub fn path(&self) -> Result<PathBuf, Failure> {
        match &self.db {
            Some(path) => Ok(path.clone()),
            None => Store::default_path().ok_or_else(|| {
                Failure::Usage(
                    "this system has no data folder for the database; pass --db PATH".into(),
                )
            }),
        }
    }

    pub async fn open(&self) -> Result<Store, Failure> {
        Ok(Store::open(self.path()?).await?)
    }
}
