//! Cairn's threads in one SQLite file, shared by the desktop app and the CLI.
//!
//! A thread's messages are the bubbles a user sees (user prompts, assistant answers
//! with their execution trees); each assistant message also keeps, as JSON, the
//! model-facing messages its turn added, so the next turn replays exactly what the
//! model would have seen had the app never stopped. The runtime's recorder writes a
//! running turn's answer as it builds up ([`Store::save_assistant`]) and commits it
//! at the end ([`Store::finish_turn`]).
//!
//! The store knows the wire types and SQLite, nothing of the engine: it sits beside
//! the engine, not above it.

mod answering;
mod answers;
mod checkpoints;
mod error;
mod export;
mod habits;
mod kinds;
mod liveness;
mod messages;
mod open;
mod plans;
mod reader;
mod results;
mod search;
mod settings;
mod threads;
mod windows;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlx::SqlitePool;

pub use answers::AnswerSpan;
pub use checkpoints::FileCheckpoint;
pub use error::StoreError;
pub use export::{ExportedMessage, ThreadExport, markdown};
pub use habits::ModelHabits;
pub use messages::{AnswerSnapshot, Redo, TurnStart, title_from_prompt};
pub use open::StoreOptions;
pub use settings::StoredRule;
pub use threads::{NewThread, Page};
pub use windows::{KnownWindow, SaidOfModel};

/// The database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    path: Arc<PathBuf>,
    reader: reader::Reader,
}

impl Store {
    /// Where the database lives unless `--db` or `CAIRN_DB` say otherwise: the OS data
    /// folder (`~/.local/share/cairn/cairn.db` on Linux).
    pub fn default_path() -> Option<PathBuf> {
        dirs::data_dir().map(|dir| dir.join("cairn").join("cairn.db"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn err(&self, err: sqlx::Error) -> StoreError {
        StoreError::from_sqlx(&self.path, err)
    }

    /// A write transaction. IMMEDIATE takes the write lock up front, so a database
    /// another process is writing is waited for (the lock timeout), where a read
    /// transaction upgrading to a write would fail at once.
    pub(crate) async fn write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|err| self.err(err))
    }

    /// Checks the file is sound, for tests and `cairn doctor`-style checks.
    pub async fn integrity_check(&self) -> Result<String, StoreError> {
        sqlx::query_scalar::<_, String>("PRAGMA integrity_check")
            .fetch_one(&self.pool)
            .await
            .map_err(|err| self.err(err))
    }

    /// Closes every connection (the file can then be moved or deleted).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Unix milliseconds now.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
