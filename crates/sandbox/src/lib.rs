//! A command's sandbox: the kernel confines the child (and all it starts) to write
//! only where it works, with no network unless allowed.
//!
//! On Linux, Landlock refuses writes outside the allowed folders and, from its fourth
//! ABI, TCP connects and binds; a seccomp filter refuses every Internet socket (UDP
//! and raw ones, which Landlock does not cover) and `io_uring` (whose requests no
//! filter sees). Reading stays as the user can: builds need the toolchain. Both are
//! built in the parent and put in place in the child between `fork` and `exec`, where
//! only system calls are made. Where the kernel has no Landlock, [`support`] says so
//! and nothing is confined: the caller asks the user instead.

use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;

/// What a confined command may do besides reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Folders (and files) it may change: the workspace, the temp folder, its own
    /// scratch folder.
    pub writable: Vec<PathBuf>,
    /// Whether it may use the network.
    pub network: bool,
}

/// Whether commands can be confined here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// The kernel's Landlock, at this ABI version.
    Landlock { abi: u32 },
    /// Nothing confines a command here; the words say why.
    Missing(String),
}

impl Support {
    pub fn is_available(&self) -> bool {
        matches!(self, Self::Landlock { .. })
    }

    /// For the user: what confines commands here, or why nothing does.
    pub fn said(&self) -> String {
        match self {
            Self::Landlock { abi } => format!(
                "commands run in a sandbox (Landlock ABI {abi} and a seccomp filter): they \
                 write only in the workspace and the temp folder, with no network"
            ),
            Self::Missing(why) => format!(
                "commands cannot be sandboxed here ({why}): each one asks first, in every mode"
            ),
        }
    }
}

/// The switch that makes this process act as on a kernel without Landlock, so that
/// the unconfined fallback can be tried on any machine.
pub const PRETEND_MISSING: &str = "CAIRN_SANDBOX_UNSUPPORTED";

/// Whether commands can be confined here: asked of the kernel once.
pub fn support() -> &'static Support {
    static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
    SUPPORT.get_or_init(|| {
        if std::env::var_os(PRETEND_MISSING).is_some_and(|value| value == "1") {
            return Support::Missing(format!("{PRETEND_MISSING}=1 says so"));
        }
        probe()
    })
}

#[cfg(target_os = "linux")]
fn probe() -> Support {
    linux::probe()
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Support {
    Support::Missing("the sandbox is built for Linux only so far".into())
}

/// A sandbox could not be made for a command.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("commands cannot be sandboxed here")]
    Unsupported,
    #[error("the sandbox could not be set up for `{path}`: {detail}")]
    Path { path: PathBuf, detail: String },
    #[error("the sandbox could not be set up: {0}")]
    Kernel(String),
}

/// Confines `command`'s child to `policy` from its start: the rules are made now, in
/// this process, and take hold in the child just before it runs the program.
pub fn confine(command: &mut tokio::process::Command, policy: &Policy) -> Result<(), SandboxError> {
    if !support().is_available() {
        return Err(SandboxError::Unsupported);
    }
    confine_here(command, policy)
}

#[cfg(target_os = "linux")]
fn confine_here(
    command: &mut tokio::process::Command,
    policy: &Policy,
) -> Result<(), SandboxError> {
    linux::confine(command, policy)
}

#[cfg(not(target_os = "linux"))]
fn confine_here(_: &mut tokio::process::Command, _: &Policy) -> Result<(), SandboxError> {
    Err(SandboxError::Unsupported)
}
