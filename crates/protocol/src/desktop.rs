//! What the desktop shell and its webview say to each other over IPC, beyond the
//! event wire: settings, thread views, servers, rules, and the shell's own notices.

use serde::{Deserialize, Serialize};

use crate::ToolApprovalRequest;
use crate::event::Usage;
use crate::permission::{PermissionMode, ToolCategory};
use crate::thread::{MessageView, ThreadInfo};

/// The user's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// `ollama` or `openai`.
    pub dialect: String,
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
    /// Servers the user added by hand.
    pub endpoints: Vec<SavedEndpoint>,
    /// Set once the first-run setup was done or skipped.
    pub first_run_done: bool,
    /// The page zoom, in percent (Ctrl+= / Ctrl+- / Ctrl+0).
    pub zoom_percent: u16,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            dialect: "ollama".into(),
            base_url: "http://localhost:11434".into(),
            model: None,
            temperature: None,
            top_p: None,
            max_tokens: None,
            context_cap: None,
            summon_shortcut: "Ctrl+Shift+Space".into(),
            notifications: true,
            close_to_tray: true,
            endpoints: Vec::new(),
            first_run_done: false,
            zoom_percent: 100,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedEndpoint {
    pub name: String,
    pub dialect: String,
    pub base_url: String,
}

/// A known kind of server, for the settings and first-run screens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderPreset {
    pub id: String,
    pub name: String,
    pub dialect: String,
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
    /// `allow`, `ask` or `deny`.
    pub list: String,
    pub rule: String,
}

/// One step of a model download.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullStep {
    pub status: String,
    pub completed: Option<u64>,
    pub total: Option<u64>,
    /// Set on the last step when the pull failed.
    pub error: Option<String>,
}

/// Options of a message that starts a new thread.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NewThreadOptions {
    pub mode: PermissionMode,
    pub workspace: Option<String>,
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
    /// Something the user should know that belongs to no thread.
    Notice { message: String },
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
