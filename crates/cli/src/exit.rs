//! Exit codes (docs/design.md, "The CLI contract") and the failures that lead to them.

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
use cairn_runtime::{FailureKind, RuntimeError};

/// Why a command could not start its work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Flags or configuration the user must fix.
    Usage(String),
    /// The model server could not be reached or refused.
    Provider(String),
    /// The database could not be read or written (locked, full, damaged).
    Storage(String),
    /// The thread already has a turn running.
    Busy(String),
}

impl Failure {
    /// Prints the one-line reason and gives the exit code.
    pub fn report(&self) -> Exit {
        eprintln!("cairn: {}", self.message());
        match self {
            Self::Usage(_) => Exit::USAGE,
            Self::Provider(_) => Exit::PROVIDER,
            Self::Storage(_) | Self::Busy(_) => Exit::FAILED,
        }
    }

    fn message(&self) -> &str {
        match self {
            Self::Usage(message)
            | Self::Provider(message)
            | Self::Storage(message)
            | Self::Busy(message) => message,
        }
    }

    /// The same failure as an `error` event, for `--json` consumers.
    pub fn event(&self) -> ErrorEvent {
        let kind = match self {
            Self::Usage(_) | Self::Busy(_) => ErrorKind::Config,
            Self::Provider(_) => ErrorKind::Provider,
            Self::Storage(_) => ErrorKind::Storage,
        };
        ErrorEvent {
            message: self.message().to_owned(),
            kind,
        }
    }
}

/// Every runtime failure by its kind, as the exit-code table says.
impl From<RuntimeError> for Failure {
    fn from(err: RuntimeError) -> Self {
        let message = err.to_string();
        match err.kind() {
            // The keychain is the user's machine to set up.
            FailureKind::Invalid
            | FailureKind::NotFound
            | FailureKind::NoModel
            | FailureKind::Keychain => Self::Usage(message),
            FailureKind::Provider => Self::Provider(message),
            FailureKind::Storage => Self::Storage(message),
            FailureKind::Busy => Self::Busy(message),
        }
    }
}
