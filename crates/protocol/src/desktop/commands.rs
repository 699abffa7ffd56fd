//! Every IPC command the webview calls, defined once for both sides: its name, its
//! arguments (the struct itself) and its reply, and for a command that streams, the
//! channel and what flows on it. The shell's handlers take these structs and return
//! these replies; the webview's `ipc::call` takes a struct and gives its reply. A
//! renamed field or a changed reply breaks the build, not a WebDriver test.
//!
//! Over IPC a command's arguments travel as `{"args": {...}}` (camelCase fields), a
//! channel as its own argument beside them.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{
    ContextInfo, DetectedServer, ExportFormat, LlmView, McpServerInfo, NewThreadOptions,
    PendingApproval, PullStep, RuleInfo, Sent, ServerCheck, ServerView, Settings, SettingsSaved,
    ShellEvent, Startup, ThreadDetail, ToolInfo,
};
use crate::accounting::{ModelPrice, ThreadUsage};
use crate::agent::AgentInfo;
use crate::dialect::Dialect;
use crate::event::Event;
use crate::permission::{ApprovalDecision, PermissionMode, RuleList};
use crate::restore::RestorePlan;
use crate::thread::{SearchHit, ThreadInfo};

/// One IPC command: the implementing struct is its arguments.
pub trait Command: Serialize + DeserializeOwned {
    /// The name the shell registers it under.
    const NAME: &'static str;
    type Reply: Serialize + DeserializeOwned;
}

/// A command that also streams messages on a channel while (or after) it answers.
pub trait Streaming: Command {
    /// The channel argument's name over IPC.
    const CHANNEL: &'static str;
    type Message: Serialize + DeserializeOwned;
}

macro_rules! commands {
    ($(
        $(#[$doc:meta])*
        $command:ident = $name:literal { $($field:ident : $ty:ty),* $(,)? } -> $reply:ty
        $(, streams on $channel:literal : $message:ty)?;
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            #[serde(rename_all = "camelCase")]
            pub struct $command {
                $(pub $field: $ty,)*
            }

            impl Command for $command {
                const NAME: &'static str = $name;
                type Reply = $reply;
            }

            $(
                impl Streaming for $command {
                    const CHANNEL: &'static str = $channel;
                    type Message = $message;
                }
            )?
        )*

        /// Every command's name, in the order defined.
        pub const ALL: &[&str] = &[$($name),*];
    };
}

commands! {
    /// The webview started: everything it needs to draw, and a channel for what the
    /// shell tells it later.
    UiReady = "ui_ready" {} -> Startup, streams on "onShell": ShellEvent;
    /// A message in a thread, or in a new one with `options`; `model` overrides the
    /// thread's.
    SendMessage = "send_message" {
        thread_id: Option<String>,
        prompt: String,
        options: Option<NewThreadOptions>,
        model: Option<String>,
    } -> Sent, streams on "onEvent": Event;
    /// Follows a running turn (what streamed so far, then live); false when none runs.
    Attach = "attach" { thread_id: String } -> bool, streams on "onEvent": Event;
    StopTurn = "stop_turn" { thread_id: String } -> ();
    AnswerApproval = "answer_approval" { approval_id: String, decision: ApprovalDecision } -> ();
    PendingApprovals = "pending_approvals" {} -> Vec<PendingApproval>;
    RunningTurns = "running_turns" {} -> Vec<String>;
    ListThreads = "list_threads" { offset: Option<u32>, limit: Option<u32> } -> Vec<ThreadInfo>;
    SearchThreads = "search_threads" { query: String } -> Vec<SearchHit>;
    LoadThread = "load_thread" { thread_id: String } -> ThreadDetail;
    RenameThread = "rename_thread" { thread_id: String, title: String } -> ThreadInfo;
    DeleteThread = "delete_thread" { thread_id: String } -> ();
    /// The whole result of a stored call whose card keeps only its start.
    LoadToolResult = "load_tool_result" { message_id: String, tool_call_id: String } -> String;
    /// What putting back an answer's files would do, file by file; changes nothing.
    PlanRestore = "plan_restore" { thread_id: String, answer_id: String } -> RestorePlan;
    /// Puts back an answer's files, all or none; refused where one changed since.
    RestoreAnswer = "restore_answer" { thread_id: String, answer_id: String } -> RestorePlan;
    /// Saves a thread where the user picks; the path, or `None` if they cancelled.
    ExportThread = "export_thread" { thread_id: String, format: ExportFormat } -> Option<String>;
    SetMode = "set_mode" { thread_id: String, mode: PermissionMode } -> ThreadInfo;
    /// The folder the user picked in the system's dialog, if any.
    PickWorkspace = "pick_workspace" {} -> Option<String>;
    /// The folder as Cairn will use it, if it can.
    CheckWorkspace = "check_workspace" { folder: String } -> String;
    SetWorkspace = "set_workspace" { thread_id: String, folder: Option<String> } -> ThreadInfo;
    GetSettings = "get_settings" {} -> Settings;
    /// The named servers, each asked what it is (its kind, slots and window).
    ServerReports = "server_reports" {} -> Vec<ServerView>;
    SaveSettings = "save_settings" { settings: Settings } -> SettingsSaved;
    SetZoom = "set_zoom" { percent: u16 } -> u16;
    OpenLink = "open_link" { url: String } -> ();
    /// Puts text on the system clipboard (a message, a code block).
    CopyText = "copy_text" { text: String } -> ();
    /// Answers a thread's failed question again, with the server in Settings and
    /// `model` (else the thread's).
    RetryTurn = "retry_turn" { thread_id: String, model: Option<String> } -> Sent,
        streams on "onEvent": Event;
    /// Answers a thread's last question again in its last answer's place
    /// (Regenerate), or rewritten as `question` first (Edit and resend).
    RedoTurn = "redo_turn" {
        thread_id: String,
        question: Option<String>,
        model: Option<String>,
    } -> Sent, streams on "onEvent": Event;
    /// Quits now (the user confirmed while turns ran).
    QuitApp = "quit_app" {} -> ();
    DetectProviders = "detect_providers" {} -> Vec<DetectedServer>;
    /// A server's models; the server in Settings unless both are given.
    ListModels = "list_models" { dialect: Option<Dialect>, base_url: Option<String> } -> Vec<String>;
    CheckServer = "check_server" { dialect: Dialect, base_url: String } -> ServerCheck;
    /// The context window of the model a turn would use (`model`, else the thread's or
    /// the default), and whether its tools would be shown on demand. A new chat
    /// gives its draft `mode` and `workspace`.
    ModelContext = "model_context" {
        thread_id: Option<String>,
        model: Option<String>,
        mode: PermissionMode,
        workspace: Option<String>,
    } -> ContextInfo;
    /// Has a local model server read what the next turn would open with (the
    /// instructions, the tools, the thread so far) while the user writes: asked when a
    /// chat opens and when the composer takes focus. Same arguments as `model_context`.
    WarmPrompt = "warm_prompt" {
        thread_id: Option<String>,
        model: Option<String>,
        mode: PermissionMode,
        workspace: Option<String>,
    } -> ();
    PullModel = "pull_model" { model: String } -> (), streams on "onProgress": PullStep;
    SetApiKey = "set_api_key" { base_url: String, key: String } -> ();
    DeleteApiKey = "delete_api_key" { base_url: String } -> bool;
    HasApiKey = "has_api_key" { base_url: String } -> bool;
    ListRules = "list_rules" {} -> Vec<RuleInfo>;
    AddRule = "add_rule" { list: RuleList, rule: String } -> RuleInfo;
    RemoveRule = "remove_rule" { id: i64 } -> ();
    ListTools = "list_tools" { thread_id: Option<String> } -> Vec<ToolInfo>;
    /// Carries out a thread's plan in `mode`: the plan-mode answer above, or the
    /// `create_plan` draft `plan_id`.
    RunPlan = "run_plan" { thread_id: String, mode: PermissionMode, plan_id: Option<String> } -> Sent,
        streams on "onEvent": Event;
    ListMcpServers = "list_mcp_servers" {} -> Vec<McpServerInfo>;
    /// Every agent profile (with the thread's workspace's own), and every file skipped.
    ListAgents = "list_agents" { thread_id: Option<String> } -> Vec<AgentInfo>;
    /// The agent a thread answers as from its next turn on.
    SetAgent = "set_agent" { thread_id: String, agent: String } -> ThreadInfo;
    /// The model's parameters for a thread (or, without one, the defaults).
    GetLlm = "get_llm" { thread_id: Option<String> } -> LlmView;
    /// Sets one: `value` none resets `key`; `key` none resets them all.
    SetLlm = "set_llm" { thread_id: Option<String>, key: Option<String>, value: Option<String> } -> LlmView;
    /// What each of a chat's answers took (tokens, calls, time, cost) and its totals.
    GetThreadUsage = "thread_usage" { thread_id: String } -> ThreadUsage;
    /// What models cost per million tokens (a model with none is free).
    ListPrices = "list_prices" {} -> Vec<ModelPrice>;
    /// Prices a model; the prices as they now stand.
    SetPrice = "set_price" {
        model: String,
        prompt_per_million: f64,
        completion_per_million: f64,
    } -> Vec<ModelPrice>;
    /// Makes a model free again; the prices as they now stand.
    RemovePrice = "remove_price" { model: String } -> Vec<ModelPrice>;
    /// Starts or stops a configured MCP server, or trusts its read-only marks or not.
    SetMcpServer = "set_mcp_server" {
        name: String,
        allowed: Option<bool>,
        trusted: Option<bool>,
    } -> Vec<McpServerInfo>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_arguments_are_camel_case() {
        let mut names = ALL.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a name defined twice");
        let args = serde_json::to_value(SendMessage {
            thread_id: Some("t".into()),
            prompt: "hi".into(),
            options: None,
            model: None,
        })
        .unwrap_or_default();
        assert_eq!(
            args,
            serde_json::json!({"threadId": "t", "prompt": "hi", "options": null, "model": null})
        );
        assert_eq!(<SendMessage as Streaming>::CHANNEL, "onEvent");
    }
}
