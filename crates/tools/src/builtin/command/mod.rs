//! `run_command`: a shell command in the workspace root, in a process group of its
//! own so that a timeout, a Stop or the end of the call ends everything it started,
//! and in the sandbox (`cairn_sandbox`) unless the user let it out: it writes only in
//! the workspace and the temp folder, with no network.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use cairn_protocol::describe::{CallAbout, first_line, quote, text_arg};
use cairn_protocol::{ApprovalPreview, ToolCategory};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::process_tree::Tree;
use cairn_core::shell;
use cairn_core::tool::Leave;
use cairn_core::tool::parse_args;
use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};
use cairn_core::workspace::Workspace;

mod changes;
mod confined;
mod host_shell;
mod ignore;
mod inside;

use changes::{NotingError, Snapshot};
use confined::{Confined, refused_by_sandbox};

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
pub(super) struct RunCommandArgs {
    pub command: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Run without the sandbox: the user is asked, in every mode.
    #[serde(default)]
    pub outside_sandbox: bool,
    /// Run in the sandbox with the network: the user is asked, in every mode.
    #[serde(default)]
    pub network: bool,
}

/// What a call asks beyond the sandbox, from its arguments; where no sandbox can be
/// made, every call runs unconfined, so every call asks.
fn leave(args: &Value) -> Option<Leave> {
    let asks = |name| args.get(name).and_then(Value::as_bool) == Some(true);
    leaving(asks("outside_sandbox"), asks("network"))
}

pub(super) fn leaving(outside_sandbox: bool, network: bool) -> Option<Leave> {
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

    fn streams(&self) -> Option<&'static str> {
        Some("command")
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
        // The model writes for the shell it has.
        static DESCRIPTION: LazyLock<String> = LazyLock::new(|| {
            format!(
                "Run a shell command ({}) in the workspace root: its exit code and output. \
                 It is stopped after timeout_ms (default 120000), with anything it started. \
                 Sandboxed: it writes only in the workspace and temp, with no network; \
                 network: true or outside_sandbox: true asks the user for more.",
                host_shell::NAME
            )
        });
        &DESCRIPTION
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
        let mut command = host_shell::command(&args.command);
        command
            .current_dir(workspace.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Tree::prepare(&mut command);
        let confined = Confined::enter(&mut command, workspace.root(), &args)?;
        let noted = match workspace.is_logged() {
            true => Some(note(workspace.root().to_owned()).await),
            false => None,
        };
        let mut child = command
            .spawn()
            .map_err(|err| ToolError::Failed(format!("the command could not start: {err}")))?;
        // Killed on every way out of this function, Stop (the future dropped) included.
        let group = Tree::of(&child);
        let stdout = tokio::spawn(capture(child.stdout.take()));
        let stderr = tokio::spawn(capture(child.stderr.take()));
        let ended = tokio::select! {
            status = child.wait() => Ended::Exited(status),
            () = tokio::time::sleep(timeout) => Ended::TimedOut,
            () = ctx.cancel.cancelled() => Ended::Cancelled,
        };
        drop(group);
        // What it changed is kept before the result is read. (A command the user
        // stops is dropped with its call: its changes are not kept.)
        let kept = match noted {
            Some(noted) => keep_changes(workspace, noted).await,
            None => Kept::default(),
        };
        let (stdout, stderr) = (
            stdout.await.unwrap_or_default(),
            stderr.await.unwrap_or_default(),
        );
        // What the command printed comes right after its exit, said to be that, and
        // how it ran after a blank line: with the sandbox's line between them, the
        // 1.5B model answered that a script "prints the sandboxed information and the
        // exit code"; with its output unlabelled, that it prints "Hello, world!".
        let mut report = format!("$ {}\n", args.command);
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
        if !stdout.trim().is_empty() {
            report.push_str("It printed:\n");
            report.push_str(&stdout);
        }
        if !stderr.trim().is_empty() {
            report.push_str("[stderr]\n");
            report.push_str(&stderr);
        }
        report.push('\n');
        report.push_str(confined.said());
        report.push('\n');
        let failed = !matches!(ended, Ended::Exited(Ok(status)) if status.success());
        if failed && confined.sandboxed() && refused_by_sandbox(&stdout, &stderr) {
            report.push_str(confined.refusal_hint());
        }
        if failed && let Some(hint) = inside::hint(&args.command, workspace.root()) {
            report.push_str(&hint);
        }
        report.push_str(&kept.said);
        Ok(ToolOutput {
            changed: kept.paths,
            // A failure the model is told of as one: told only what happened, the
            // 1.5B model answered with the hint's own words instead of running it.
            failed,
            ..ToolOutput::text(report)
        })
    }
}

/// The workspace's files before a command, noted away from the async threads.
async fn note(root: PathBuf) -> Result<Snapshot, NotingError> {
    tokio::task::spawn_blocking(move || Snapshot::take(&root))
        .await
        .unwrap_or_else(|err| Err(NotingError::Failed(err.to_string())))
}

/// What a command's changes left for Restore.
#[derive(Debug, Default)]
struct Kept {
    /// The files it can put back.
    paths: Vec<String>,
    /// The lines the result ends with: what Restore can take back, or why it cannot.
    said: String,
}

/// Tells the workspace's log what the command changed since `noted`.
async fn keep_changes(workspace: &Arc<Workspace>, noted: Result<Snapshot, NotingError>) -> Kept {
    let found = match noted {
        Ok(snapshot) => {
            let root = workspace.root().to_owned();
            tokio::task::spawn_blocking(move || snapshot.changes(&root))
                .await
                .unwrap_or_else(|err| Err(NotingError::Failed(err.to_string())))
        }
        Err(why) => Err(why),
    };
    let found = match found {
        Ok(found) => found,
        Err(why) => {
            return Kept {
                paths: Vec::new(),
                said: format!("[restore] Its changes cannot be restored: {why}.\n"),
            };
        }
    };
    let mut line = String::new();
    if !found.changes.is_empty() {
        let paths: Vec<&str> = found
            .changes
            .iter()
            .map(|change| change.path.as_str())
            .collect();
        line.push_str(&format!(
            "[restore] It changed {}: Restore can take {} back.\n",
            listed(&paths),
            if paths.len() == 1 { "it" } else { "them" }
        ));
    }
    if !found.too_large.is_empty() {
        let paths: Vec<&str> = found.too_large.iter().map(String::as_str).collect();
        line.push_str(&format!(
            "[restore] Too large to keep, so not restorable: {}.\n",
            listed(&paths)
        ));
    }
    let mut paths = Vec::new();
    for change in found.changes {
        workspace.changed_by_others(&change.path, change.before, change.after.as_deref());
        paths.push(change.path);
    }
    Kept { paths, said: line }
}

/// Up to five paths, and how many more.
fn listed(paths: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut out = paths
        .iter()
        .take(SHOWN)
        .map(|path| format!("`{path}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        out.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    out
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
