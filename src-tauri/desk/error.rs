//! Every way a command can fail, and how the webview is told.

use cairn_core::{ApprovalError, SessionError};
use cairn_protocol::desktop::{CommandError, CommandErrorKind};
use cairn_providers::ProviderError;
use cairn_runtime::RuntimeError;
use cairn_secrets::SecretError;
use cairn_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    #[error("{0}")]
    Invalid(String),
    #[error(
        "no model is chosen: pick one in the model menu below the message box, or set a \
         default in Settings"
    )]
    NoModel,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Secret(#[from] SecretError),
}

impl DeskError {
    pub fn kind(&self) -> CommandErrorKind {
        match self {
            Self::Invalid(_) | Self::Secret(SecretError::Empty) => CommandErrorKind::Invalid,
            Self::NoModel => CommandErrorKind::NoModel,
            Self::Store(StoreError::NotFound { .. }) => CommandErrorKind::NotFound,
            Self::Store(StoreError::Invalid(_)) => CommandErrorKind::Invalid,
            Self::Store(_) => CommandErrorKind::Storage,
            Self::Runtime(RuntimeError::Store(StoreError::NotFound { .. })) => {
                CommandErrorKind::NotFound
            }
            Self::Runtime(RuntimeError::Store(_)) => CommandErrorKind::Storage,
            Self::Runtime(RuntimeError::Session(_)) | Self::Session(_) => CommandErrorKind::Busy,
            Self::Runtime(_) => CommandErrorKind::Invalid,
            Self::Approval(_) => CommandErrorKind::NotFound,
            Self::Provider(ProviderError::BadUrl { .. }) => CommandErrorKind::Invalid,
            Self::Provider(_) => CommandErrorKind::Provider,
            Self::Secret(_) => CommandErrorKind::Keychain,
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
