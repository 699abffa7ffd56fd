//! `run_command`: a shell command in the workspace root, in a process group of its
//! own so that a timeout, a Stop or the end of the call ends everything it started.

use std::process::Stdio;
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
use cairn_core::tool::parse_args;
use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};

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
}

#[async_trait]
impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let command = text_arg(args, "command").unwrap_or_default();
        CallAbout::new(
            format!("run `{}`", quote(command)),
            Some(first_line(command)),
        )
    }

    fn description(&self) -> &str {
        "Run a shell command (sh) in the workspace root: its exit code and output. It is \
         stopped after timeout_ms (default 120000), with anything it started."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000}
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

    /// Each program with its subcommand (`cargo test`), never the shell.
    fn session_grants(&self, args: &Value) -> Vec<String> {
        let commands = args
            .get("command")
            .and_then(Value::as_str)
            .and_then(shell::split)
            .unwrap_or_default();
        let mut grants: Vec<String> = commands
            .iter()
            .map(|command| shell::program_and_subcommand(command))
            .filter(|program| !program.is_empty())
            .map(|program| format!("run_command({program}:*)"))
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
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&args.command)
            .current_dir(workspace.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
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
        report.push_str(&stdout.render());
        if !stderr.is_empty() {
            report.push_str("[stderr]\n");
            report.push_str(&stderr.render());
        }
        Ok(ToolOutput::text(report))
    }
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
    fn is_empty(&self) -> bool {
        self.total == 0
    }

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
