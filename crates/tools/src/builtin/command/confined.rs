//! How a command runs: in the sandbox (with the network or not) or, where the user let
//! it out or no sandbox can be made, unconfined; and what its result says of that.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_core::tool::Leave;
use cairn_sandbox::Policy;
use tokio::process::Command;

use super::{RunCommandArgs, leaving};
use cairn_core::tool::ToolError;

/// How a command runs: in the sandbox (with or without the network) or not, with the
/// scratch folder it was given, removed when it is done.
pub(super) struct Confined {
    how: Option<Leave>,
    scratch: Option<PathBuf>,
}

impl Confined {
    pub(super) fn enter(
        command: &mut Command,
        root: &Path,
        args: &RunCommandArgs,
    ) -> Result<Self, ToolError> {
        let how = leaving(args.outside_sandbox, args.network);
        if how == Some(Leave::Unconfined) {
            return Ok(Self { how, scratch: None });
        }
        let scratch = scratch_folder()?;
        command.env("TMPDIR", &scratch);
        let policy = Policy {
            writable: vec![root.to_owned(), std::env::temp_dir(), scratch.clone()],
            network: how == Some(Leave::Network),
        };
        let confined = Self {
            how,
            scratch: Some(scratch),
        };
        cairn_sandbox::confine(command, &policy)
            .map_err(|err| ToolError::Failed(format!("{err}; the command did not run")))?;
        Ok(confined)
    }

    pub(super) fn sandboxed(&self) -> bool {
        self.how != Some(Leave::Unconfined)
    }

    /// The line under the command in its result: how it ran.
    pub(super) fn said(&self) -> &'static str {
        match self.how {
            None => "(sandboxed: writes only in the workspace and the temp folder, no network)",
            Some(Leave::Network) => {
                "(sandboxed, with the network: writes only in the workspace and the temp folder)"
            }
            Some(Leave::Unconfined) if cairn_sandbox::support().is_available() => {
                "(outside the sandbox, as the user allowed)"
            }
            Some(Leave::Unconfined) => "(unconfined: no sandbox on this system)",
        }
    }

    pub(super) fn refusal_hint(&self) -> &'static str {
        if self.how == Some(Leave::Network) {
            "[sandbox] This command ran in a sandbox that refuses writing outside the \
             workspace and the temp folder. If that is what was denied above and the command \
             must, call run_command again with outside_sandbox: true; the user will be asked.\n"
        } else {
            "[sandbox] This command ran in a sandbox that refuses writing outside the \
             workspace and the temp folder, and the network. If that is what was denied \
             above: for the network, call run_command again with network: true; to write \
             elsewhere, with outside_sandbox: true. Either asks the user.\n"
        }
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        if let Some(scratch) = &self.scratch {
            // What a command leaves in its scratch folder is not the user's.
            let _ = std::fs::remove_dir_all(scratch);
        }
    }
}

/// A new folder of the command's own in the temp folder, its `TMPDIR`.
fn scratch_folder() -> Result<PathBuf, ToolError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "cairn-command-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let path = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&path).map_err(|err| {
        ToolError::Failed(format!(
            "the command's scratch folder {} could not be made: {err}; the command did not run",
            path.display()
        ))
    })?;
    Ok(path)
}

/// Whether a failed command's output reads like a refusal the sandbox makes: the
/// kernel's words for a write or a socket it refused.
pub(super) fn refused_by_sandbox(stdout: &str, stderr: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ]
    .iter()
    .any(|words| stderr.contains(words) || stdout.contains(words))
}
