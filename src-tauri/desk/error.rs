//! Every way a command can fail, and how the webview is told.

use cairn_core::{ApprovalError, SessionError};
use cairn_protocol::desktop::{CommandError, CommandErrorKind};
use cairn_providers::ProviderError;
use cairn_runtime::{FailureKind, RuntimeError};
use cairn_secrets::SecretError;
use cairn_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    #[error(transparent)]
    Secret(#[from] SecretError),
}

impl DeskError {
    pub fn kind(&self) -> CommandErrorKind {
        match self {
            Self::Invalid(_) | Self::Secret(SecretError::Empty) => CommandErrorKind::Invalid,
            Self::Runtime(err) => match err.kind() {
                FailureKind::Invalid => CommandErrorKind::Invalid,
                FailureKind::NotFound => CommandErrorKind::NotFound,
                FailureKind::NoModel => CommandErrorKind::NoModel,
                FailureKind::Busy => CommandErrorKind::Busy,
                FailureKind::Provider => CommandErrorKind::Provider,
                FailureKind::Storage => CommandErrorKind::Storage,
            },
            Self::Approval(_) => CommandErrorKind::NotFound,
            Self::Secret(_) => CommandErrorKind::Keychain,
        }
    }
}

// The runtime's parts fail through the runtime's classification.
impl From<StoreError> for DeskError {
    fn from(err: StoreError) -> Self {
        Self::Runtime(err.into())
    }
}

impl From<SessionError> for DeskError {
    fn from(err: SessionError) -> Self {
        Self::Runtime(err.into())
    }
}

impl From<ProviderError> for DeskError {
    fn from(err: ProviderError) -> Self {
        Self::Runtime(err.into())
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
