//! What the desktop shell and its webview say to each other over IPC, beyond the
//! event wire: settings, thread views, servers, rules, and the shell's own notices.
//! Every command is defined once, in [`commands`], for both sides.

pub mod commands;

pub use crate::llm::LlmView;

use serde::{Deserialize, Serialize};

use crate::ToolApprovalRequest;
use crate::dialect::Dialect;
use crate::event::Usage;
use crate::permission::RuleList;
use crate::permission::{PermissionMode, ToolCategory};
use crate::thread::{MessageView, ThreadInfo};

/// The user's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub dialect: Dialect,
    pub base_url: String,
    /// The model new threads use.
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Ollama: the largest context window to ask for.
    pub context_cap: Option<u32>,
    /// The global shortcut that summons the window.
    pub summon_shortcut: String,
    pub notifications: bool,
    pub close_to_tray: bool,
    /// Start Cairn at login, hidden in the tray (an XDG autostart entry).
    pub start_at_login: bool,
    /// Servers the user added by hand.
    pub endpoints: Vec<SavedEndpoint>,
    /// Set once the first-run setup was done or skipped.
    pub first_run_done: bool,
    /// The page zoom, in percent (Ctrl+= / Ctrl+- / Ctrl+0).
    pub zoom_percent: u16,
    /// The agent profile new chats start with.
    pub default_agent: String,
}

impl Settings {
    /// The model parameters Settings set, as `/llm` names them.
    pub fn llm_params(&self) -> crate::LlmParams {
        crate::LlmParams {
            temperature: self.temperature,
            top_p: self.top_p,
            max_tokens: self.max_tokens,
            context_cap: self.context_cap,
            model: self.model.clone(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            dialect: Dialect::Ollama,
            base_url: "http://localhost:11434".into(),
            model: None,
            temperature: None,
            top_p: None,
            max_tokens: None,
            context_cap: None,
            summon_shortcut: "Ctrl+Shift+Space".into(),
            notifications: true,
            close_to_tray: true,
            start_at_login: false,
            endpoints: Vec::new(),
            first_run_done: false,
            zoom_percent: 100,
            default_agent: "chat".into(),
        }
    }
}

/// A model server the user named (`cairn servers`, Settings): the thread's server is
/// picked from these, and an agent profile names one with `server: NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedEndpoint {
    pub name: String,
    pub dialect: Dialect,
    pub base_url: String,
    /// The requests it is sent at once; unset, what the server says (llama.cpp's
    /// slots), else a default for its kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
}

/// A named server as Settings lists it, with what it said of itself when asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerView {
    pub server: SavedEndpoint,
    /// "llama.cpp server", "Ollama", …; `None` when it did not answer.
    pub kind: Option<String>,
    /// The requests it is sent at once, as things stand.
    pub slots: u32,
    /// Its context window, where one serves every request (llama.cpp).
    pub window: Option<u32>,
    /// Why it did not answer, if it did not.
    pub error: Option<String>,
}

/// A known kind of server, for the settings and first-run screens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderPreset {
    pub id: String,
    pub name: String,
    pub dialect: Dialect,
    pub base_url: String,
    pub needs_key: bool,
    pub start_hint: String,
}

/// A server found running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectedServer {
    pub preset: ProviderPreset,
    pub base_url: String,
    pub models: Vec<String>,
}

/// What the webview gets when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Startup {
    pub settings: Settings,
    pub presets: Vec<ProviderPreset>,
    pub threads: Vec<ThreadInfo>,
    pub running: Vec<String>,
    pub pending: Vec<PendingApproval>,
    /// Why the summon shortcut could not be registered, if it could not.
    pub shortcut_problem: Option<String>,
    /// Why closing the window quits instead of hiding to the tray (no tray here).
    #[serde(default)]
    pub tray_problem: Option<String>,
    /// The folder a chat was last given: a new chat starts there.
    #[serde(default)]
    pub last_workspace: Option<String>,
    /// The `CAIRN_*` variables that overrode the saved server at start, as `NAME=value`.
    #[serde(default)]
    pub env_overrides: Vec<String>,
}

/// What the model picker says about the chosen model's context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextInfo {
    /// The context window in tokens, when the server reports it.
    pub tokens: Option<u32>,
    /// Who reported it ("Ollama, as loaded").
    pub source: Option<String>,
    /// The tools would crowd the window: the model sees them on demand.
    pub tools_on_demand: bool,
    /// The tool groups the model loads when it needs them (`web`, `memory`, an MCP
    /// server's `mcp__github`, …).
    #[serde(default)]
    pub on_demand: Vec<String>,
    /// The model's chat template takes no tools: Cairn describes them in its prompt
    /// and reads its calls from its text.
    #[serde(default)]
    pub tools_in_text: bool,
    /// What Cairn learned of the model by trying it ("needs the question restated
    /// (writes calls as text)"), once it has.
    #[serde(default)]
    pub checkup: Option<String>,
}

/// Whether a server answers, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCheck {
    /// Its models, when it answered.
    pub models: Vec<String>,
    /// Why it cannot be used, if it cannot.
    pub problem: Option<String>,
    /// The dialect its address plainly speaks, when not the one chosen: the way out
    /// of a 404 from the wrong API.
    pub suggested_dialect: Option<Dialect>,
}

/// Settings as kept, and whether the summon shortcut in them works.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsSaved {
    pub settings: Settings,
    pub shortcut_problem: Option<String>,
}

/// What sending a message started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    pub thread_id: String,
    pub message_id: String,
    /// The question as it is stored to be shown, when the core wrote it for the user's
    /// action (running a plan: "Run plan p1"; the model reads its own instruction):
    /// the window shows it in place of its own stand-in, as a reload will.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// An answer given again: the files it can put back from its start, those the
    /// answer it replaced wrote and left as they were (shown at once, as a reload
    /// will).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restorable: Vec<String>,
}

/// A thread with its messages, and whether a turn is running in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadDetail {
    pub thread: ThreadInfo,
    pub messages: Vec<MessageView>,
    pub running: bool,
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    pub thread_id: String,
    pub request: ToolApprovalRequest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub category: ToolCategory,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleInfo {
    pub id: i64,
    pub list: RuleList,
    pub rule: String,
}

/// One step of a model download.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullStep {
    /// Where the download stands.
    pub phase: PullPhase,
    /// Ollama's own words for the step ("pulling manifest").
    pub status: String,
    pub completed: Option<u64>,
    pub total: Option<u64>,
    /// Set on the last step when the pull failed.
    pub error: Option<String>,
}

/// Where a model download stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullPhase {
    Working,
    /// The last step: the model is there.
    Done,
    /// The last step: it is not (the step's `error` says why).
    Failed,
}

/// How a thread is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// Markdown, for people.
    Md,
    /// JSON, complete (it imports back).
    Json,
}

impl ExportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Md => "md",
            Self::Json => "json",
        }
    }
}

/// Options of a message that starts a new thread.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NewThreadOptions {
    pub mode: PermissionMode,
    pub workspace: Option<String>,
    /// The agent profile it answers as; the default one (Settings) when absent.
    #[serde(default)]
    pub agent: Option<String>,
}

/// A configured MCP server, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    pub name: String,
    /// The command line, or the address.
    pub target: String,
    /// The user lets it start.
    pub allowed: bool,
    /// The user believes its read-only marks (else all its tools are external).
    pub trusted: bool,
    /// Running, with this many tools.
    pub tools: Option<usize>,
    /// Why it is not running, though allowed.
    pub error: Option<String>,
}

/// What the shell tells the webview on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ShellEvent {
    /// Show this thread (a notification was clicked).
    OpenThread { thread_id: String },
    /// The summon shortcut was pressed.
    FocusComposer,
    /// "New chat" from the tray.
    NewChat,
    /// Turns started or ended: the threads with one running.
    Running { threads: Vec<String> },
    /// Approvals were asked or answered: every one still waiting.
    Pending { approvals: Vec<PendingApproval> },
    /// This approval was answered (in the window or from its notification): its card
    /// stops asking, though its call may run on.
    Answered { approval_id: String },
    /// Something the user should know that belongs to no thread.
    Notice { message: String },
    /// The user asked to quit while turns run: ask them, with the running count as it
    /// changes (`quit_app` confirms).
    ConfirmQuit,
}

impl ShellEvent {
    /// Every wire tag, in the order of the variants.
    pub const TAGS: &'static [&'static str] = &[
        "open_thread",
        "focus_composer",
        "new_chat",
        "running",
        "pending",
        "answered",
        "notice",
        "confirm_quit",
    ];

    /// Reads the event tagged `tag` from `body`, the object that carried the tag: as
    /// `Event::from_tagged`, so that the webview compiles no buffering reader of it.
    pub fn from_tagged<'de, D: serde::Deserializer<'de>>(
        tag: &str,
        body: D,
    ) -> Result<Self, D::Error> {
        // The variants' fields, read the way the derived reader reads them.
        #[derive(Deserialize)]
        struct OpenThread {
            thread_id: String,
        }
        #[derive(Deserialize)]
        struct Running {
            threads: Vec<String>,
        }
        #[derive(Deserialize)]
        struct Pending {
            approvals: Vec<PendingApproval>,
        }
        #[derive(Deserialize)]
        struct Answered {
            approval_id: String,
        }
        #[derive(Deserialize)]
        struct Notice {
            message: String,
        }
        Ok(match tag {
            "open_thread" => Self::OpenThread {
                thread_id: OpenThread::deserialize(body)?.thread_id,
            },
            "focus_composer" => Self::FocusComposer,
            "new_chat" => Self::NewChat,
            "running" => Self::Running {
                threads: Running::deserialize(body)?.threads,
            },
            "pending" => Self::Pending {
                approvals: Pending::deserialize(body)?.approvals,
            },
            "answered" => Self::Answered {
                approval_id: Answered::deserialize(body)?.approval_id,
            },
            "notice" => Self::Notice {
                message: Notice::deserialize(body)?.message,
            },
            "confirm_quit" => Self::ConfirmQuit,
            other => return Err(serde::de::Error::unknown_variant(other, Self::TAGS)),
        })
    }
}

/// An IPC command's failure, as the webview shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandError {
    pub message: String,
    /// What went wrong, so the UI can offer the way out (`no_model` opens the model
    /// picker, `provider` offers Retry).
    pub kind: CommandErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandErrorKind {
    /// The input was not usable: nothing was changed.
    Invalid,
    NotFound,
    /// A turn is running where none may be (or none is where one must be).
    Busy,
    /// No model is chosen yet.
    NoModel,
    /// The model server could not be reached or refused.
    Provider,
    /// The OS keychain is missing or refused.
    Keychain,
    /// The database could not be read or written.
    Storage,
    /// A program of the system Cairn hands work to (`xdg-open` for links) is missing
    /// or failed.
    System,
}
