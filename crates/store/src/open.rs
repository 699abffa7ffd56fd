//! Opening the file: one process at a time (a lock file beside it), refuse what this
//! version cannot read before writing a byte, then migrate.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, SqliteConnection};

use crate::{Store, StoreError};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How the database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long a write waits for another process's lock before giving up.
    pub lock_timeout: Duration,
    /// A cap on the file's size in pages of 4 KiB; past it writes fail as on a full
    /// disk. `None`: only the disk limits it.
    pub max_pages: Option<u64>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            lock_timeout: crate::reader::LOCK_TIMEOUT,
            max_pages: None,
        }
    }
}

impl Store {
    /// Opens (or creates) the database at `path`.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, StoreOptions::default()).await
    }

    pub async fn open_with(
        path: impl AsRef<Path>,
        store_options: StoreOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        let fail = |err| StoreError::from_sqlx(&path, err);
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|source| StoreError::Folder {
                path: folder.to_owned(),
                source,
            })?;
        }
        // Held until the schema is current: a second process opening a new file at
        // the same moment waits here, then finds every migration applied.
        let schema = lock_schema(&path).await?;
        if path.exists() {
            check_before_writing(&path).await?;
        }
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL with NORMAL loses no committed transaction on a crash of the app,
            // only (at worst) the last ones on a power cut, and commits stay fast.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(store_options.lock_timeout);
        let options = match store_options.max_pages {
            Some(pages) => options.pragma("max_page_count", pages.to_string()),
            None => options,
        };
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(fail)?;
        MIGRATOR.run(&pool).await.map_err(|err| match err {
            sqlx::migrate::MigrateError::Execute(err) => fail(err),
            other => StoreError::Database {
                path: path.clone(),
                detail: other.to_string(),
            },
        })?;
        drop(schema);
        let path = Arc::new(path);
        Ok(Self {
            pool,
            reader: crate::reader::Reader::new(Arc::clone(&path)),
            path,
        })
    }
}

/// How long an open waits for another process to finish migrating the same file.
const SCHEMA_WAIT: Duration = Duration::from_secs(60);

/// Locks the file beside the database (`cairn.db.lock`) that whoever checks and
/// migrates the schema holds. sqlx's SQLite migrator takes no lock of its own: two
/// processes opening a new database together (the app and a CLI on a first run, a
/// script starting many runs) would each create the tables, and all but one fail.
/// The lock file is left in place: removing it would race with the next open.
async fn lock_schema(path: &Path) -> Result<File, StoreError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let folder_error = |source| StoreError::Folder {
        path: lock_path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(folder_error)?;
    let deadline = Instant::now() + SCHEMA_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.to_owned(),
                });
            }
            Err(TryLockError::Error(source)) => return Err(folder_error(source)),
        }
    }
}

/// The newest schema this build knows.
fn supported_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Reads an existing file read-only: a damaged file or one from a newer version is
/// refused before anything (not even the WAL switch) writes to it.
async fn check_before_writing(path: &Path) -> Result<(), StoreError> {
    let fail = |err| StoreError::from_sqlx(path, err);
    let mut connection: SqliteConnection = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await
        .map_err(fail)?;
    let has_migrations: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')",
    )
    .fetch_one(&mut connection)
    .await
    .map_err(fail)?;
    if has_migrations {
        let found: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&mut connection)
            .await
            .map_err(fail)?;
        let supported = supported_version();
        if let Some(found) = found.filter(|found| *found > supported) {
            return Err(StoreError::NewerVersion {
                path: path.to_owned(),
                found,
                supported,
            });
        }
    } else {
        let tables: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'")
                .fetch_one(&mut connection)
                .await
                .map_err(fail)?;
        if tables > 0 {
            return Err(StoreError::Corrupt {
                path: path.to_owned(),
                detail: "it is an SQLite file from another program".into(),
            });
        }
    }
    let _ = connection.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use super::MIGRATOR;

    /// The first bytes of each migration's checksum, as released. sqlx refuses a
    /// database whose applied migrations have changed since: a migration that has
    /// shipped is never edited; what changes the schema again is a new one.
    const RELEASED: [(i64, &str); 12] = [
        (1, "f4b95e4f63395670"),
        (2, "16b804fea5895333"),
        (3, "7ce84ab61846a94a"),
        (4, "a763dd58a02061bb"),
        (5, "7a1e97bce80bc9f1"),
        (6, "b67a11bc579fcf1b"),
        (7, "491d823e8dcfcf64"),
        (8, "ad2c35625b1759d8"),
        (9, "ea493cded1014def"),
        (10, "ea8e871177146c16"),
        (11, "aa83977ba7448365"),
        (12, "08513f34e24994e4"),
    ];

    #[test]
    fn released_migrations_never_change() {
        let found: Vec<(i64, String)> = MIGRATOR
            .iter()
            .map(|migration| {
                let head =
                    migration
                        .checksum
                        .iter()
                        .take(8)
                        .fold(String::new(), |mut hex, byte| {
                            let _ = write!(hex, "{byte:02x}");
                            hex
                        });
                (migration.version, head)
            })
            .collect();
        for (version, checksum) in RELEASED {
            assert!(
                found.contains(&(version, checksum.to_owned())),
                "migration {version} changed after release: {found:?}"
            );
        }
        assert_eq!(
            found.len(),
            RELEASED.len(),
            "a new migration: add its checksum to RELEASED ({found:?})"
        );
    }
}
