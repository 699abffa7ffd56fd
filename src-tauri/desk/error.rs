//! Every way a command can fail, and how the webview is told.

use cairn_protocol::desktop::{CommandError, CommandErrorKind};
use cairn_runtime::{FailureKind, RuntimeError};

#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl DeskError {
    pub fn kind(&self) -> CommandErrorKind {
        match self {
            Self::Invalid(_) => CommandErrorKind::Invalid,
            Self::Runtime(err) => match err.kind() {
                FailureKind::Invalid => CommandErrorKind::Invalid,
                FailureKind::NotFound => CommandErrorKind::NotFound,
                FailureKind::NoModel => CommandErrorKind::NoModel,
                FailureKind::Busy => CommandErrorKind::Busy,
                FailureKind::Provider => CommandErrorKind::Provider,
                FailureKind::Storage => CommandErrorKind::Storage,
                FailureKind::Keychain => CommandErrorKind::Keychain,
            },
        }
    }
}

impl From<DeskError> for CommandError {
    fn from(err: DeskError) -> Self {
        Self {
            message: err.to_string(),
            kind: err.kind(),
        }
    }
}
