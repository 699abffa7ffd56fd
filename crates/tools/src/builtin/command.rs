//! `run_command`: a shell command in the workspace root, in a process group of its
//! own so that a timeout, a Stop or the end of the call ends everything it started,
//! and in the sandbox (`cairn_sandbox`) unless the user let it out: it writes only in
//! the workspace and the temp folder, with no network.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cairn_protocol::describe::{CallAbout, first_line, quote, text_arg};
use cairn_protocol::{ApprovalPreview, ToolCategory};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::process_group::Group;
use cairn_core::shell;
use cairn_core::tool::Leave;
use cairn_core::tool::parse_args;
use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};
use cairn_sandbox::Policy;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Output kept from the start of each stream, and from its end (where build and test
/// failures usually are).
const HEAD_BYTES: usize = 8 * 1024;
const TAIL_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct RunCommand;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCommandArgs {
    command: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Run without the sandbox: the user is asked, in every mode.
    #[serde(default)]
    outside_sandbox: bool,
    /// Run in the sandbox with the network: the user is asked, in every mode.
    #[serde(default)]
    network: bool,
}

/// What a call asks beyond the sandbox, from its arguments; where no sandbox can be
/// made, every call runs unconfined, so every call asks.
fn leave(args: &Value) -> Option<Leave> {
    let asks = |name| args.get(name).and_then(Value::as_bool) == Some(true);
    leaving(asks("outside_sandbox"), asks("network"))
}

fn leaving(outside_sandbox: bool, network: bool) -> Option<Leave> {
    if outside_sandbox || !cairn_sandbox::support().is_available() {
        Some(Leave::Unconfined)
    } else if network {
        Some(Leave::Network)
    } else {
        None
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let command = text_arg(args, "command").unwrap_or_default();
        let how = match leave(args) {
            None => "",
            Some(Leave::Network) => " with network access",
            Some(Leave::Unconfined) if cairn_sandbox::support().is_available() => {
                " outside the sandbox, free to write anywhere and use the network"
            }
            Some(Leave::Unconfined) => " unconfined (no sandbox on this system)",
        };
        CallAbout::new(
            format!("run `{}`{how}", quote(command)),
            Some(first_line(command)),
        )
    }

    fn description(&self) -> &str {
        "Run a shell command (sh) in the workspace root: its exit code and output. It is \
         stopped after timeout_ms (default 120000), with anything it started. Sandboxed: \
         it writes only in the workspace and temp, with no network; network: true or \
         outside_sandbox: true asks the user for more."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000},
                "network": {"type": "boolean"},
                "outside_sandbox": {"type": "boolean"}
            },
            "required": ["command"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Execute
    }

    fn parallel_safe(&self) -> bool {
        false
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        let Some(line) = args.get("command").and_then(Value::as_str) else {
            return Vec::new();
        };
        match shell::split(line) {
            Some(commands) => commands.into_iter().map(Subject::Command).collect(),
            None => vec![Subject::Unreadable(line.to_owned())],
        }
    }

    fn leaves_sandbox(&self, args: &Value) -> Option<Leave> {
        leave(args)
    }

    /// Each program with its subcommand (`cargo test`), never the shell; for a call
    /// that leaves the sandbox, leaving it that way (`run_command.network(curl:*)`).
    fn session_grants(&self, args: &Value) -> Vec<String> {
        let tool = leave(args).map_or_else(
            || self.name().to_owned(),
            |leave| leave.rule_tool(self.name()),
        );
        let commands = args
            .get("command")
            .and_then(Value::as_str)
            .and_then(shell::split)
            .unwrap_or_default();
        let mut grants: Vec<String> = commands
            .iter()
            .map(|command| shell::program_and_subcommand(command))
            .filter(|program| !program.is_empty())
            .map(|program| format!("{tool}({program}:*)"))
            .collect();
        grants.dedup();
        grants
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Option<ApprovalPreview> {
        let command = args.get("command").and_then(Value::as_str)?;
        super::preview::command(ctx, command)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: RunCommandArgs = parse_args(args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments("`command` is empty".into()));
        }
        let workspace = ctx.workspace()?;
        let timeout = args
            .timeout_ms
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
            .min(MAX_TIMEOUT);
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&args.command)
            .current_dir(workspace.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let confined = Confined::enter(&mut command, workspace.root(), &args)?;
        let mut child = command
            .spawn()
            .map_err(|err| ToolError::Failed(format!("the command could not start: {err}")))?;
        // Killed on every way out of this function, Stop (the future dropped) included.
        let group = Group::of(child.id());
        let stdout = tokio::spawn(capture(child.stdout.take()));
        let stderr = tokio::spawn(capture(child.stderr.take()));
        let ended = tokio::select! {
            status = child.wait() => Ended::Exited(status),
            () = tokio::time::sleep(timeout) => Ended::TimedOut,
            () = ctx.cancel.cancelled() => Ended::Cancelled,
        };
        drop(group);
        let (stdout, stderr) = (
            stdout.await.unwrap_or_default(),
            stderr.await.unwrap_or_default(),
        );
        let mut report = format!("$ {}\n{}\n", args.command, confined.said());
        match ended {
            Ended::Exited(Ok(status)) => match status.code() {
                Some(code) => report.push_str(&format!("exit code: {code}\n")),
                None => report.push_str("ended by a signal\n"),
            },
            Ended::Exited(Err(err)) => {
                return Err(ToolError::Failed(format!(
                    "the command could not be waited for: {err}"
                )));
            }
            Ended::TimedOut => report.push_str(&format!(
                "timed out after {} ms; it and everything it started were stopped\n",
                timeout.as_millis()
            )),
            Ended::Cancelled => return Err(ToolError::Cancelled),
        }
        let (stdout, stderr) = (stdout.render(), stderr.render());
        report.push_str(&stdout);
        if !stderr.trim().is_empty() {
            report.push_str("[stderr]\n");
            report.push_str(&stderr);
        }
        let failed = !matches!(ended, Ended::Exited(Ok(status)) if status.success());
        if failed && confined.sandboxed() && refused_by_sandbox(&stdout, &stderr) {
            report.push_str(confined.refusal_hint());
        }
        Ok(ToolOutput::text(report))
    }
}

/// How a command runs: in the sandbox (with or without the network) or not, with the
/// scratch folder it was given, removed when it is done.
struct Confined {
    how: Option<Leave>,
    scratch: Option<PathBuf>,
}

impl Confined {
    fn enter(command: &mut Command, root: &Path, args: &RunCommandArgs) -> Result<Self, ToolError> {
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

    fn sandboxed(&self) -> bool {
        self.how != Some(Leave::Unconfined)
    }

    /// The line under the command in its result: how it ran.
    fn said(&self) -> &'static str {
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

    fn refusal_hint(&self) -> &'static str {
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
fn refused_by_sandbox(stdout: &str, stderr: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ]
    .iter()
    .any(|words| stderr.contains(words) || stdout.contains(words))
}

enum Ended {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

/// A stream's output, its middle dropped when long.
#[derive(Debug, Default)]
struct Captured {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

impl Captured {
    fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        let kept = self.head.len() + self.tail.len();
        if self.total > kept {
            out.push_str(&format!("\n[… {} bytes not shown …]\n", self.total - kept));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}

async fn capture(stream: Option<impl AsyncRead + Unpin>) -> Captured {
    let mut captured = Captured::default();
    let Some(mut stream) = stream else {
        return captured;
    };
    let mut buffer = [0u8; 8192];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        captured.total += read;
        let mut bytes = &buffer[..read];
        let room = HEAD_BYTES - captured.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            captured.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        captured.tail.extend(bytes);
        while captured.tail.len() > TAIL_BYTES {
            captured.tail.pop_front();
        }
    }
    captured
}
