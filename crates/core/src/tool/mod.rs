//! The tool port: what a capability the model calls is to the engine. The tools
//! crate implements the built-in and MCP tools against it.

use std::sync::Arc;

use async_trait::async_trait;
use cairn_protocol::describe::CallAbout;
use cairn_protocol::{ApprovalPreview, Image, ToolCategory, ToolSpec};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::disclosure::{ToolGroup, group_of};
use crate::workspace::{Workspace, WorkspaceError};

mod args;

pub use args::{parse_args, without_copied_schema};

/// A capability the model can call.
///
/// The engine, not the tool, decides whether a call runs (the permission gate) and
/// when (parallel batches, exclusive locks); `call` only does the work.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by; unique within a toolbelt.
    fn name(&self) -> &str;

    /// One or two sentences the model reads to decide when to use it.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;

    /// What the tool can do to the world. A tool that does not say is external: the
    /// most guarded category short of being blocked.
    fn category(&self) -> ToolCategory {
        ToolCategory::External
    }

    /// Whether calls may run concurrently with other calls of the same model turn.
    fn parallel_safe(&self) -> bool {
        true
    }

    /// The argument whose text a call being written shows as it grows (`content` for
    /// a file being written); `None`: its arguments as they come.
    fn streams(&self) -> Option<&'static str> {
        None
    }

    /// The group the tool waits in when tools are shown on demand (see
    /// `disclosure`); `None` for a core tool, always shown. By default the group its
    /// name gives (`mcp__github` for `mcp__github__create_issue`).
    fn group(&self) -> Option<ToolGroup> {
        group_of(self.name()).map(ToolGroup::shown)
    }

    /// Whether a small model (4B parameters or fewer, as its server says) is offered
    /// it. Some tools only mislead one: asked to tick a box in `todo.md`, the 1.5B
    /// ticked it in its own to-do list instead.
    fn for_small_models(&self) -> bool {
        true
    }

    /// The argument naming the one file a call reads whole (`path`), for a tool that
    /// is such a reader: a tiny model's request that names a file gets the file with
    /// it, read as this tool would read it, when the gate lets it run unasked
    /// (`named_files`).
    fn reads_file_at(&self) -> Option<&'static str> {
        None
    }

    /// The arguments naming the file a call writes whole and the text it writes
    /// (`("path", "content")`), for a tool that is such a writer: a tiny model asked
    /// to change one file answers with the file's new text, which runs as this tool's
    /// call (`whole_file`).
    fn writes_file_at(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// A named lock held while the call runs, shared by every tool naming it across the
    /// whole turn (parallel subtasks included).
    fn exclusive_lock(&self) -> Option<&'static str> {
        None
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// What permission rules match a call against: the path it touches, the commands
    /// it runs, the address it fetches. Empty: only rules naming the bare tool apply.
    fn subjects(&self, args: &Value) -> Vec<Subject> {
        let _ = args;
        Vec::new()
    }

    /// What the user checks before allowing a call, where its arguments alone show it
    /// badly: the change a write would make, the line a command would run. Asked only
    /// when the gate asks the user; `None` shows the arguments.
    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Option<ApprovalPreview> {
        let _ = (args, ctx);
        None
    }

    /// How a call reads to the user: what it will do ("write notes.md (3 lines)") and
    /// what it acts on (`notes.md`), for approvals and cards. By default its name and
    /// arguments, the first text among them as the subject.
    fn describe(&self, args: &Value) -> CallAbout {
        CallAbout::generic(self.name(), args)
    }

    /// Whether this call asks for more than the sandbox gives (a command run outside
    /// it, or with the network): such a call asks the user in every mode, auto too,
    /// unless a rule on `tool.<leave>` (`run_command.network(cargo build:*)`) allows it.
    fn leaves_sandbox(&self, args: &Value) -> Option<Leave> {
        let _ = args;
        None
    }

    /// What "allow for this chat" grants for this call, as rules. The tool itself by
    /// default; a command tool grants its programs, never the whole shell.
    fn session_grants(&self, args: &Value) -> Vec<String> {
        let _ = args;
        vec![self.name().to_owned()]
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

/// What a call asks for beyond the sandbox its tool runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// The network, from inside the sandbox otherwise.
    Network,
    /// No sandbox at all (asked for, or none can be made on this system).
    Unconfined,
}

impl Leave {
    /// The word rules name it by: `run_command.unconfined(make:*)`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Network => "network",
            Self::Unconfined => "unconfined",
        }
    }

    /// The rule name a grant or rule for `tool` leaving this way has.
    pub fn rule_tool(self, tool: &str) -> String {
        format!("{tool}.{}", self.as_str())
    }
}

/// A thing a call acts on, in the form rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A workspace-relative path, normalized (`docs/a.md`).
    Path(String),
    /// One simple shell command (a compound line gives one subject per command).
    Command(String),
    /// A command line that could not be split: no allow rule can vouch for it.
    Unreadable(String),
    Url(String),
    /// A memory key.
    Key(String),
}

/// What a running call may use besides its arguments.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// The thread's workspace; `None` when the thread has no folder.
    pub workspace: Option<Arc<Workspace>>,
    /// Cancelled when the user stops the turn or a budget ends it.
    pub cancel: CancellationToken,
    /// The turn the call belongs to (its answer's message id), for limits a tool
    /// keeps per turn; `None` outside a turn.
    pub turn: Option<String>,
}

impl ToolContext {
    pub fn workspace(&self) -> Result<&Arc<Workspace>, ToolError> {
        self.workspace.as_ref().ok_or_else(|| {
            ToolError::Refused(
                "this thread has no workspace folder; ask the user to choose one".into(),
            )
        })
    }
}

/// A successful result, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    /// Images besides the text (which names each): shown in the call's card, and to
    /// a model that reads images.
    pub images: Vec<Image>,
    /// The change the call made to a file, for its card: kept there once the call is
    /// done, whether or not anyone was asked first.
    pub change: Option<ApprovalPreview>,
    /// Workspace files the call changed besides `change` (a command's), told to the
    /// workspace's log: Restore can put them back.
    pub changed: Vec<String>,
    /// It ran and did not do its job, by its own account (a command's non-zero exit):
    /// its result reads as a failure, its content as it is.
    pub failed: bool,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            images: Vec::new(),
            change: None,
            changed: Vec::new(),
            failed: false,
        }
    }

    #[must_use]
    pub fn with_change(self, change: Option<ApprovalPreview>) -> Self {
        Self { change, ..self }
    }
}

/// A failed call. The message goes back to the model, so it says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("refused: {0}")]
    Refused(String),
    #[error("{0}")]
    Failed(String),
    #[error("cancelled before it finished")]
    Cancelled,
}

/// A path refused is the model's to fix; the rest is the disk's.
impl From<WorkspaceError> for ToolError {
    fn from(err: WorkspaceError) -> Self {
        match err {
            WorkspaceError::Escapes { .. } | WorkspaceError::Symlink { .. } => {
                ToolError::Refused(err.to_string())
            }
            WorkspaceError::Root { .. }
            | WorkspaceError::NotFound { .. }
            | WorkspaceError::IsDirectory { .. }
            | WorkspaceError::NotDirectory { .. }
            | WorkspaceError::TooLarge { .. }
            | WorkspaceError::Io { .. } => ToolError::Failed(err.to_string()),
        }
    }
}
