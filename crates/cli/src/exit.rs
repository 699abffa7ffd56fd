//! Exit codes (DESIGN.md "The CLI contract") and the failures that lead to them.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(i32);

impl Exit {
    pub const OK: Exit = Exit(0);
    /// Something failed that has no code of its own (a bug, storage).
    pub const FAILED: Exit = Exit(1);
    pub const USAGE: Exit = Exit(2);
    pub const PROVIDER: Exit = Exit(3);
    pub const BUDGET: Exit = Exit(4);
    pub const CANCELLED: Exit = Exit(130);

    pub fn code(self) -> i32 {
        self.0
    }
}

use cairn_protocol::{ErrorEvent, ErrorKind};
use cairn_providers::ProviderError;

/// Why a command could not start its work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Flags or configuration the user must fix.
    Usage(String),
    /// The model server could not be reached or refused.
    Provider(String),
}

impl Failure {
    /// Prints the one-line reason and gives the exit code.
    pub fn report(&self) -> Exit {
        match self {
            Self::Usage(message) => {
                eprintln!("cairn: {message}");
                Exit::USAGE
            }
            Self::Provider(message) => {
                eprintln!("cairn: {message}");
                Exit::PROVIDER
            }
        }
    }
}

impl Failure {
    /// A provider error as the failure it is for the user: a bad address is theirs to
    /// fix (exit 2); anything else is the server's (exit 3).
    pub fn from_provider(err: ProviderError) -> Self {
        match err {
            ProviderError::BadUrl { .. } => Self::Usage(err.to_string()),
            other => Self::Provider(other.to_string()),
        }
    }

    /// The same failure as an `error` event, for `--json` consumers.
    pub fn event(&self) -> ErrorEvent {
        match self {
            Self::Usage(message) => ErrorEvent {
                message: message.clone(),
                kind: ErrorKind::Config,
            },
            Self::Provider(message) => ErrorEvent {
                message: message.clone(),
                kind: ErrorKind::Provider,
            },
        }
    }
}
