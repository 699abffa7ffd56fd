use std::path::PathBuf;

/// What can go wrong with the database, each saying what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{path} was written by a newer version of Cairn (schema {found}; this version knows up \
         to {supported}). Update Cairn to open it; the file was not changed"
    )]
    NewerVersion {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error(
        "{path} is not a Cairn database or is damaged ({detail}). It was not changed; move it \
         aside to start with a new one"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path} is locked by another program (another Cairn?) and stayed locked; close it and \
         try again"
    )]
    Locked { path: PathBuf },
    #[error("the disk holding {path} is full; nothing of this change was saved")]
    Full { path: PathBuf },
    #[error("the database folder {path} cannot be used: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no {kind} `{id}`")]
    NotFound { kind: &'static str, id: String },
    #[error("{0}")]
    Invalid(String),
    #[error("the database at {path} failed: {detail}")]
    Database { path: PathBuf, detail: String },
}

/// SQLite's primary result codes that mean something to a user.
const SQLITE_BUSY: i64 = 5;
const SQLITE_LOCKED: i64 = 6;
const SQLITE_CORRUPT: i64 = 11;
const SQLITE_FULL: i64 = 13;
const SQLITE_NOTADB: i64 = 26;

impl StoreError {
    pub(crate) fn from_sqlx(path: &std::path::Path, err: sqlx::Error) -> Self {
        let code = match &err {
            sqlx::Error::Database(db) => db.code().and_then(|code| code.parse::<i64>().ok()),
            _ => None,
        };
        Self::from_code(path, code, err.to_string())
    }

    /// From an SQLite result code (either driver's) and the driver's message.
    pub(crate) fn from_code(path: &std::path::Path, code: Option<i64>, detail: String) -> Self {
        let path = path.to_owned();
        // Extended result codes carry the primary code in their low byte.
        match code.map(|code| code & 0xff) {
            Some(SQLITE_BUSY | SQLITE_LOCKED) => Self::Locked { path },
            Some(SQLITE_FULL) => Self::Full { path },
            Some(SQLITE_CORRUPT | SQLITE_NOTADB) => Self::Corrupt { path, detail },
            _ => Self::Database { path, detail },
        }
    }
}
