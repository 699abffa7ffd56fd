//! Every way the runtime can fail, and the one classification both front ends map
//! from: the CLI's exit codes and the desktop's error kinds.

use cairn_agents::UnknownAgent;
use cairn_core::{ApprovalError, RuleError, SessionError, ToolbeltError};
use cairn_providers::ProviderError;
use cairn_secrets::SecretError;
use cairn_store::StoreError;
use cairn_tools::mcp::McpError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the thread's workspace folder cannot be used: {0}")]
    Workspace(String),
    #[error("an empty message cannot be sent")]
    EmptyPrompt,
    #[error("a plan is carried out in default or auto mode, not plan mode")]
    Plan,
    #[error("the tools do not fit together: {0}")]
    Tools(ToolbeltError),
    #[error(transparent)]
    Mcp(McpError),
    #[error("unknown provider `{id}`: use one of {}", .known.join(", "))]
    UnknownProvider { id: String, known: Vec<String> },
    #[error(
        "no model is chosen: pick one in the model menu below the message box, or set a \
         default in Settings"
    )]
    NoModel,
    #[error(
        "{server} offers no models; load or pull one (`cairn pull MODEL`), then pass it \
         with --model"
    )]
    NoModels { server: String },
    #[error("{server} offers several models; choose one with --model: {}", .models.join(", "))]
    SeveralModels { server: String, models: Vec<String> },
    #[error("the export failed: {0}")]
    Export(String),
    #[error(transparent)]
    Rule(RuleError),
    #[error(transparent)]
    Agent(#[from] UnknownAgent),
    /// Deleting or renaming a thread while it answers, here or in another Cairn.
    #[error("this chat is still answering; stop it or wait for it before {doing} it")]
    Answering { doing: &'static str },
    /// A value out of what it may be (a model parameter, a price), with its range.
    #[error("{0}")]
    BadValue(String),
    /// An approval that is not (or no longer) waiting.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// The OS keychain refused, or was not there.
    #[error(transparent)]
    Keychain(#[from] SecretError),
    /// A model parameter refused (an unknown name, a value out of its range).
    #[error(transparent)]
    Llm(#[from] cairn_protocol::LlmError),
    /// A file given to import that is not a thread exported as JSON.
    #[error("this is not a thread exported as JSON: {0}")]
    NotAnExport(String),
    /// Restore asked of an answer with no files to put back.
    #[error("{0}")]
    NothingToRestore(String),
    /// A restore that would overwrite a later change: nothing was changed.
    #[error("{0}")]
    RestoreRefused(String),
    /// A server name no server has (a profile's `server:`, `cairn servers remove`).
    #[error("there is no server named `{name}`: {}", known_servers(.known))]
    UnknownServer { name: String, known: Vec<String> },
}

fn known_servers(known: &[String]) -> String {
    format!(
        "use one of {} (add one with `cairn servers add NAME URL` or in Settings)",
        known.join(", ")
    )
}

/// What a failure means for the person who met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Input or configuration they must fix; nothing was changed.
    Invalid,
    /// A thread, message or rule that does not exist.
    NotFound,
    /// No model is chosen and none can be guessed.
    NoModel,
    /// A turn is running where none may be (or none is where one must be).
    Busy,
    /// The model server could not be reached or refused.
    Provider,
    /// The database could not be read or written.
    Storage,
    /// The OS keychain could not keep or give a key.
    Keychain,
}

impl RuntimeError {
    /// The kind of this failure. Every variant is named, so a new one must be
    /// classified where it is added.
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::Store(err) => store_kind(err),
            Self::Session(SessionError::AlreadyRunning | SessionError::NotRunning(_))
            | Self::Answering { .. } => FailureKind::Busy,
            Self::Provider(err) => provider_kind(err),
            Self::Workspace(_)
            | Self::EmptyPrompt
            | Self::Plan
            | Self::Tools(ToolbeltError::Duplicate(_) | ToolbeltError::Reserved(_))
            | Self::UnknownProvider { .. }
            | Self::Export(_)
            | Self::Rule(_)
            | Self::Agent(_)
            | Self::BadValue(_)
            | Self::NotAnExport(_)
            | Self::RestoreRefused(_)
            | Self::UnknownServer { .. }
            | Self::Llm(_)
            | Self::Keychain(SecretError::Empty) => FailureKind::Invalid,
            Self::Keychain(_) => FailureKind::Keychain,
            Self::Approval(_) | Self::NothingToRestore(_) => FailureKind::NotFound,
            Self::Mcp(McpError::Config { .. } | McpError::Setting(_)) => FailureKind::Invalid,
            // A server that cannot start is configuration the user can fix.
            Self::Mcp(McpError::Start { .. }) => FailureKind::Invalid,
            Self::NoModel | Self::NoModels { .. } | Self::SeveralModels { .. } => {
                FailureKind::NoModel
            }
        }
    }
}

/// What a store failure means: a missing row or a refused value is the caller's; the
/// rest is the database's.
pub fn store_kind(err: &StoreError) -> FailureKind {
    match err {
        StoreError::NotFound { .. } => FailureKind::NotFound,
        StoreError::Invalid(_) => FailureKind::Invalid,
        StoreError::NewerVersion { .. }
        | StoreError::Corrupt { .. }
        | StoreError::Locked { .. }
        | StoreError::Full { .. }
        | StoreError::Folder { .. }
        | StoreError::Database { .. } => FailureKind::Storage,
    }
}

/// What a model server failure means: a bad address is the user's to fix; the rest
/// is the server's.
pub fn provider_kind(err: &ProviderError) -> FailureKind {
    match err {
        ProviderError::BadUrl { .. } => FailureKind::Invalid,
        ProviderError::Unreachable { .. }
        | ProviderError::UnknownModel { .. }
        | ProviderError::Http { .. }
        | ProviderError::TooLong { .. }
        | ProviderError::Server { .. }
        | ProviderError::StreamCut { .. }
        | ProviderError::Stalled { .. }
        | ProviderError::Protocol { .. } => FailureKind::Provider,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_that_is_locked_or_full_is_a_storage_failure_not_a_usage_error() {
        let path = std::path::PathBuf::from("/tmp/cairn.db");
        let locked = RuntimeError::from(StoreError::Locked { path: path.clone() });
        let full = RuntimeError::from(StoreError::Full { path });
        assert_eq!(locked.kind(), FailureKind::Storage);
        assert_eq!(full.kind(), FailureKind::Storage);
    }

    #[test]
    fn a_missing_thread_a_busy_thread_and_a_bad_address_are_told_apart() {
        let missing = RuntimeError::from(StoreError::NotFound {
            kind: "thread",
            id: "t1".into(),
        });
        assert_eq!(missing.kind(), FailureKind::NotFound);
        let busy = RuntimeError::from(SessionError::AlreadyRunning);
        assert_eq!(busy.kind(), FailureKind::Busy);
        let bad_url = RuntimeError::from(ProviderError::BadUrl {
            url: "htp:/x".into(),
            reason: "no scheme".into(),
        });
        assert_eq!(bad_url.kind(), FailureKind::Invalid);
        let down = RuntimeError::from(ProviderError::Unreachable {
            server: "http://localhost:11434".into(),
            detail: "refused".into(),
            hint: String::new(),
        });
        assert_eq!(down.kind(), FailureKind::Provider);
    }
}
