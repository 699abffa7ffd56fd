//! The event stream of a turn: every front end (CLI, desktop, tests) consumes exactly
//! these, serialized as JSON objects tagged by `type`.
//!
//! `parent_id` is `null` at the root and otherwise the `tool_call_id` of the enclosing
//! `run_subtask`; `depth` is 0 at the root. Both are always present on the events that
//! carry them, so a consumer never has to guess.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::permission::ToolCategory;
use crate::plan::{PlanCreated, PlanReview, PlanStep};

/// One event of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    Chunk(Chunk),
    Reasoning(Reasoning),
    ToolCallUpdate(ToolCallUpdate),
    ToolApprovalRequest(ToolApprovalRequest),
    BudgetExceeded(BudgetExceeded),
    AgentState(AgentState),
    /// Which model server a level runs on, and whether it waits for one of its slots.
    ServerState(ServerState),
    /// How far the model server has read the prompt of a level's request, where it
    /// says (llama.cpp): a CPU reads a long prompt for many seconds before the first
    /// word.
    PromptProgress(PromptProgress),
    /// The server read less of a level's prompt than Cairn sent, or refused it as
    /// longer than its window: the level is fitted to the window it really has.
    PromptCut(PromptCut),
    /// A plan-mode turn finished: its answer is a plan the user can run.
    PlanReady(PlanReady),
    /// The router handed the thread to another profile; a new answer follows.
    AgentSwitched(AgentSwitched),
    /// `create_plan` made a plan.
    PlanCreated(PlanCreated),
    /// A reviewer judged a plan.
    PlanReview(PlanReview),
    Done(Done),
    Error(ErrorEvent),
}

impl Event {
    /// The wire tag, as it appears in the JSON `type` field.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Chunk(_) => "chunk",
            Self::Reasoning(_) => "reasoning",
            Self::ToolCallUpdate(_) => "tool_call_update",
            Self::ToolApprovalRequest(_) => "tool_approval_request",
            Self::BudgetExceeded(_) => "budget_exceeded",
            Self::AgentState(_) => "agent_state",
            Self::ServerState(_) => "server_state",
            Self::PromptProgress(_) => "prompt_progress",
            Self::PromptCut(_) => "prompt_cut",
            Self::PlanReady(_) => "plan_ready",
            Self::AgentSwitched(_) => "agent_switched",
            Self::PlanCreated(_) => "plan_created",
            Self::PlanReview(_) => "plan_review",
            Self::Done(_) => "done",
            Self::Error(_) => "error",
        }
    }

    /// Every wire tag, in the order of the variants.
    pub const TAGS: &'static [&'static str] = &[
        "chunk",
        "reasoning",
        "tool_call_update",
        "tool_approval_request",
        "budget_exceeded",
        "agent_state",
        "server_state",
        "prompt_progress",
        "prompt_cut",
        "plan_ready",
        "agent_switched",
        "plan_created",
        "plan_review",
        "done",
        "error",
    ];

    /// Reads the event tagged `tag` from `body`, the object that carried the tag (its
    /// `type` field is skipped, as any unknown field is).
    ///
    /// serde's derived reader buffers the whole object before it knows the variant, and
    /// a reader of that buffer is compiled for every variant's fields: the webview, whose
    /// wasm size is its memory, reads a turn's events through this instead (65 KB less).
    pub fn from_tagged<'de, D: serde::Deserializer<'de>>(
        tag: &str,
        body: D,
    ) -> Result<Self, D::Error> {
        Ok(match tag {
            "chunk" => Self::Chunk(Deserialize::deserialize(body)?),
            "reasoning" => Self::Reasoning(Deserialize::deserialize(body)?),
            "tool_call_update" => Self::ToolCallUpdate(Deserialize::deserialize(body)?),
            "tool_approval_request" => Self::ToolApprovalRequest(Deserialize::deserialize(body)?),
            "budget_exceeded" => Self::BudgetExceeded(Deserialize::deserialize(body)?),
            "agent_state" => Self::AgentState(Deserialize::deserialize(body)?),
            "server_state" => Self::ServerState(Deserialize::deserialize(body)?),
            "prompt_progress" => Self::PromptProgress(Deserialize::deserialize(body)?),
            "prompt_cut" => Self::PromptCut(Deserialize::deserialize(body)?),
            "plan_ready" => Self::PlanReady(Deserialize::deserialize(body)?),
            "agent_switched" => Self::AgentSwitched(Deserialize::deserialize(body)?),
            "plan_created" => Self::PlanCreated(Deserialize::deserialize(body)?),
            "plan_review" => Self::PlanReview(Deserialize::deserialize(body)?),
            "done" => Self::Done(Deserialize::deserialize(body)?),
            "error" => Self::Error(Deserialize::deserialize(body)?),
            other => return Err(serde::de::Error::unknown_variant(other, Self::TAGS)),
        })
    }
}

/// A piece of answer text, streamed as the model produces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub content: String,
    pub parent_id: Option<String>,
    pub depth: u32,
}

/// A piece of the model's reasoning ("thinking"), streamed as it arrives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    pub content: String,
    pub parent_id: Option<String>,
    pub depth: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// The model is still writing the call: its name is known, `args` is the text of
    /// its arguments so far (a JSON string, usually not yet valid JSON). Sent at most a
    /// few times a second per call, before its `start`, which carries the same
    /// `tool_call_id`; a call the model never finishes gets no `start`. (An extension of
    /// the wire in docs/design.md: consumers that do not know it ignore it.)
    Pending,
    /// The call is known (arguments parsed) and about to be gated and run.
    Start,
    /// The call finished: `result` and `is_error` are set.
    End,
}

/// A tool call starting or ending. Every `start` is followed by exactly one `end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    pub parent_id: Option<String>,
    pub depth: u32,
    pub status: ToolCallStatus,
    /// On `end`: how long the call took as the engine measured it, so every listener
    /// shows the same figure however late the event reaches it. (An extension of the
    /// wire in docs/design.md: absent on `start` and from older writers.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// On `end`: how much of `duration_ms` the call spent waiting for the user to allow
    /// it, so a card can tell its own time from the user's. (An extension of the
    /// wire in docs/design.md, absent when the call never waited.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
    /// On `end`: the user denied the call; its result is what the model was told.
    /// (An extension of the wire in docs/design.md, absent unless true.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
    /// On `end`: images the tool returned besides its result text. (An extension of
    /// the wire in docs/design.md, absent when there are none.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::Image>,
    /// On `start` and `end`: what the call acts on, as its tool says (`notes.md`,
    /// `cargo test`, `example.com`), for a card's header. (An extension of the wire
    /// in docs/design.md, absent when the tool says nothing and from older writers.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// On `end`: the change the call made to a file (its diff, or the new file), so
    /// its card keeps it whether or not the user was asked. (An extension of the wire
    /// in docs/design.md, absent for calls that change no file.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ApprovalPreview>,
    /// On `end`: the workspace files a call changed other than through a `change` of
    /// its own (a command's edits), which Restore can put back: the window offers it
    /// at once, as a reload does. (An extension of the wire in docs/design.md.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// On `pending`, `start` and `end`: what kind of call this is, as its tool says,
    /// where it is more than a call with a result (a subtask, a plan, the end of a
    /// child level, the hand-over), so a front end shows it by what it is, not by
    /// its name. (An extension of the wire in docs/design.md, absent for plain calls
    /// and from older writers.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<CallKind>,
    /// On `pending`: the argument whose text a call being written shows as it grows
    /// (`content` for a file being written), as its tool says; absent, the arguments
    /// so far are shown as they are. (An extension of the wire in docs/design.md.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<String>,
}

/// What a call is, beyond a call with a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// Starts a child level (`run_subtask`): the calls of its subtask nest in it.
    Subtask,
    /// Makes a plan whose steps run as subtasks under it (`create_plan`).
    Plan,
    /// Ends a child level with its result (`finish_subtask`, a plan's `submit_plan`
    /// and `submit_review`): what its parent's card already shows.
    Finish,
    /// Hands the thread to another profile once the turn ends (`switch_agent`).
    HandOver,
}

/// The engine's tool that starts a subtask; its calls carry `{title, instructions, …}`.
pub const RUN_SUBTASK: &str = "run_subtask";

impl ToolCallUpdate {
    /// An update of `status` for a call, nothing else told yet: the engine's sites set
    /// what their status carries on top of it.
    pub fn new(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        parent_id: Option<String>,
        depth: u32,
        status: ToolCallStatus,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            args: None,
            result: None,
            is_error: None,
            parent_id,
            depth,
            status,
            duration_ms: None,
            waited_ms: None,
            denied: false,
            images: Vec::new(),
            subject: None,
            change: None,
            changed: Vec::new(),
            kind: None,
            streams: None,
        }
    }

    /// The title a `run_subtask` call gave its subtask, if this is one and it has one:
    /// what the execution tree and every front end label the call with.
    pub fn subtask_title(&self) -> Option<String> {
        if self.kind != Some(CallKind::Subtask) {
            return None;
        }
        let title = self.args.as_ref()?.get("title")?.as_str()?;
        Some(title.to_owned())
    }
}

/// The loop is waiting for the user to allow or deny a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolApprovalRequest {
    pub approval_id: String,
    pub tool_call_id: String,
    pub name: String,
    pub args: Value,
    pub category: ToolCategory,
    pub parent_id: Option<String>,
    pub depth: u32,
    /// The title of the subtask that asked; absent at the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask_title: Option<String>,
    /// What "allow for this chat" would grant, in words (`write_file`, `run_command(cargo test)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_grant: Option<String>,
    /// What the call would do, as a person checks it before allowing it (the change
    /// a write makes, the line a command runs), when the tool can say. (An extension
    /// of the wire in docs/design.md.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<ApprovalPreview>,
    /// What the call will do, in one line, as its tool says ("write notes.md (3
    /// lines)", "run `cargo test`"). (An extension of the wire in docs/design.md.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// What a call would do, shown in its approval instead of its raw arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalPreview {
    /// A file that does not exist yet, and what it would hold.
    NewFile { path: String, content: String },
    /// The change to an existing file, as a unified diff (`@@` hunks of ` `, `-` and
    /// `+` lines).
    Diff { path: String, diff: String },
    /// A command as the shell would run it, in its folder.
    Command { folder: String, command: String },
}

/// Read through one struct of every variant's fields, not serde's derived reader of a
/// tagged enum, which buffers the object first and compiles a reader of that buffer
/// for each variant (the webview's wasm, whose size is its memory, would carry it).
impl<'de> Deserialize<'de> for ApprovalPreview {
    fn deserialize<D: serde::Deserializer<'de>>(body: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields {
            kind: String,
            path: Option<String>,
            content: Option<String>,
            diff: Option<String>,
            folder: Option<String>,
            command: Option<String>,
        }
        let fields = Fields::deserialize(body)?;
        Ok(match fields.kind.as_str() {
            "new_file" => Self::NewFile {
                path: required::<D>(fields.path, "path")?,
                content: required::<D>(fields.content, "content")?,
            },
            "diff" => Self::Diff {
                path: required::<D>(fields.path, "path")?,
                diff: required::<D>(fields.diff, "diff")?,
            },
            "command" => Self::Command {
                folder: required::<D>(fields.folder, "folder")?,
                command: required::<D>(fields.command, "command")?,
            },
            other => {
                return Err(serde::de::Error::unknown_variant(
                    other,
                    &["new_file", "diff", "command"],
                ));
            }
        })
    }
}

/// A field a hand-written reader of a tagged enum's variant needs.
pub(crate) fn required<'de, D: serde::Deserializer<'de>>(
    value: Option<String>,
    field: &'static str,
) -> Result<String, D::Error> {
    value.ok_or_else(|| serde::de::Error::missing_field(field))
}

impl ApprovalPreview {
    /// Whether this is a write of exactly what the file already holds: a diff with no
    /// hunks, which front ends show as "no change" rather than as an empty diff.
    pub fn changes_nothing(&self) -> bool {
        matches!(self, Self::Diff { diff, .. } if diff.trim().is_empty())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetReason {
    Subtasks,
    LlmCalls,
    ToolCalls,
    WallClock,
    Tokens,
    Bytes,
}

impl BudgetReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Subtasks => "subtasks",
            Self::LlmCalls => "llm_calls",
            Self::ToolCalls => "tool_calls",
            Self::WallClock => "wall_clock",
            Self::Tokens => "tokens",
            Self::Bytes => "bytes",
        }
    }

    /// The setting that raises it: the environment variable the app and `cairn` read
    /// at start.
    pub fn setting(self) -> &'static str {
        match self {
            Self::Subtasks => "CAIRN_MAX_TOTAL_SUBTASKS",
            Self::LlmCalls => "CAIRN_MAX_TOTAL_LLM_CALLS",
            Self::ToolCalls => "CAIRN_MAX_TOTAL_TOOL_CALLS",
            Self::WallClock => "CAIRN_MAX_WALL_CLOCK_MS",
            Self::Tokens => "CAIRN_MAX_HISTORY_TOKENS",
            Self::Bytes => "CAIRN_MAX_TOOL_RESULT_BYTES",
        }
    }
}

/// A turn-wide budget tripped; the turn ends and its partial answer is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetExceeded {
    pub reason: BudgetReason,
    pub limit: u64,
    pub observed: u64,
}

impl BudgetExceeded {
    /// What was used against the limit, in the budget's unit ("181 s of 180 s",
    /// "61 of 60").
    pub fn used(&self) -> String {
        match self.reason {
            BudgetReason::WallClock => format!(
                "{} s of {} s",
                self.observed.div_ceil(1000),
                self.limit.div_ceil(1000)
            ),
            _ => format!("{} of {}", self.observed, self.limit),
        }
    }

    /// How to give the next turn more of it, in words.
    pub fn how_to_raise(&self) -> String {
        let unit = match self.reason {
            BudgetReason::WallClock => {
                " (milliseconds; the time a model server answers \
                                         and you are asked is not counted)"
            }
            _ => "",
        };
        format!("raise it with {}{unit}", self.reason.setting())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStateKind {
    Thinking,
    Executing,
    WaitingOnUser,
    /// The model server asked Cairn to wait (busy, rate limited); it will retry.
    Reconnecting,
    Idle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentState {
    pub state: AgentStateKind,
}

/// The model server a level runs on, when it is not the thread's own, and whether its
/// next request waits because every slot of that server is taken (a GPU serves only
/// a few requests at once). Sent when a level opens on another server and when its
/// waiting starts and ends; `parent_id`/`depth` say which level, as on `chunk`. (An
/// extension of the wire in docs/design.md.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    pub parent_id: Option<String>,
    pub depth: u32,
    /// The server's name, as the user named it (`cairn servers list`).
    pub server: String,
    /// True while the level waits for a free slot on `server`.
    pub waiting: bool,
}

/// The server's reading of a level's prompt, as it reports it: sent when it starts
/// reading and as it gets on (how often is the server's: llama.cpp reports each batch
/// it reads, 2,048 tokens by default). Of `total` tokens, `cached` it had from an
/// earlier request; `read` it has read by now, the cached ones among them. `left_ms`,
/// when known, is how long the rest should take at the speed this server read at
/// before. (An extension of the wire in docs/design.md.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptProgress {
    pub parent_id: Option<String>,
    pub depth: u32,
    pub total: u64,
    pub cached: u64,
    pub read: u64,
    /// Since the server began reading this prompt.
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_ms: Option<u64>,
}

impl PromptProgress {
    /// Tokens to read in all, the cached ones aside.
    pub fn to_read(&self) -> u64 {
        self.total.saturating_sub(self.cached)
    }

    /// Tokens read so far, the cached ones aside.
    pub fn done(&self) -> u64 {
        self.read.saturating_sub(self.cached)
    }

    /// Whether a front end shows it: a read still under way, long enough that the wait
    /// is felt (256 fresh tokens: about three seconds of a small model's reading on a
    /// CPU); a short one is over before a line would help.
    pub fn worth_showing(&self) -> bool {
        self.to_read() >= 256 && self.done() < self.to_read()
    }

    /// The progress in words: "reading the prompt: 1,200 of 1,900 tokens · 8 s left".
    pub fn said(&self) -> String {
        let mut said = format!(
            "reading the prompt: {} of {} tokens",
            thousands(self.done()),
            thousands(self.to_read())
        );
        if let Some(left) = self.left_ms.filter(|_| self.done() < self.to_read()) {
            said.push_str(&format!(" · {} s left", left.div_ceil(1000)));
        }
        said
    }
}

/// A level's prompt did not fit its model's window, though Cairn fitted it to the
/// window it believed: the server read only the last part of it (`refused: false`;
/// Ollama cuts a prompt longer than its window from the front and answers from the
/// rest, the system prompt and the tools lost first) or refused it (`refused: true`;
/// llama.cpp, and Ollama asked not to cut). `sent` is Cairn's estimate of the
/// request, `read` what the server said it read (refused: what it counted), `window`
/// what the level's requests are fitted to from then on. A refused round is sent
/// again, fitted; a cut one was answered from what the server kept. (An extension of
/// the wire in docs/design.md.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCut {
    pub parent_id: Option<String>,
    pub depth: u32,
    pub sent: u64,
    pub read: u64,
    pub window: u32,
    pub refused: bool,
}

impl PromptCut {
    /// What happened, in words every front end shows.
    pub fn said(&self) -> String {
        let window = thousands(u64::from(self.window));
        if self.refused {
            format!(
                "The model server counted {} tokens in a prompt Cairn estimated at {}, too \
                 many for its window: the prompt is fitted to {window} tokens and sent again.",
                thousands(self.read),
                thousands(self.sent)
            )
        } else {
            format!(
                "The model server read only {} of about {} tokens of the prompt: it dropped \
                 the start, where the instructions and the tools are, so the answer above \
                 may miss them. From now on the prompt is fitted to {window} tokens.",
                thousands(self.read),
                thousands(self.sent)
            )
        }
    }
}

/// `1234567` as `1,234,567`: counts read at a glance, in every front end.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Token and call counts for a turn (or, summed, a thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    #[serde(default)]
    pub llm_calls: u64,
    #[serde(default)]
    pub tool_calls: u64,
    /// True when some token counts were estimated because a server reported none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Of `prompt_tokens`, those the server had cached from an earlier request and
    /// did not read again (as OpenAI-compatible servers report them; 0 when not said).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_prompt_tokens: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.llm_calls += other.llm_calls;
        self.tool_calls += other.tool_calls;
        self.estimated |= other.estimated;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
    }
}

/// The answer of a plan-mode turn, offered to the user to carry out (switching the
/// thread to default or auto).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanReady {
    pub thread_id: String,
    pub message_id: String,
    pub plan: String,
    /// Set when the plan is a `create_plan` draft: run it with `create_plan {plan_id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<PlanStep>>,
}

/// `switch_agent` handed the thread from one profile to another. The answer so far
/// is committed; the thread goes on at once with `follow_up` (stored as a synthetic
/// user message) answered by `to`, whose events follow under `message_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSwitched {
    pub from: String,
    pub to: String,
    pub reason: Option<String>,
    pub follow_up: String,
    pub thread_id: String,
    /// The id of the answer `to` gives next.
    pub message_id: String,
}

/// How a turn ended. `done` is the last event of every turn, whatever happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    #[default]
    Completed,
    BudgetExceeded,
    Cancelled,
    Failed,
}

/// The turn is over and its assistant message is committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    pub thread_id: String,
    pub message_id: String,
    pub usage: Usage,
    #[serde(default)]
    pub status: TurnStatus,
    /// Set when the answer was cut before the model finished it; the text so far is
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

/// Why an answer ended before the model finished it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// The server stopped it at its length limit (`max_tokens`, or the context's end).
    Length,
    /// It repeated the same words over and over, and was stopped.
    Repetition,
}

impl Cut {
    /// What the user is told.
    pub fn said(self) -> &'static str {
        match self {
            Self::Length => "The model stopped at its length limit: the answer is cut short.",
            Self::Repetition => {
                "The model kept repeating itself, so Cairn stopped it: the answer is cut short."
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The model server could not be reached or failed.
    Provider,
    /// A level ran out of iterations without finishing.
    IterationLimit,
    /// The model kept repeating a call it was told not to repeat.
    Loop,
    /// The configuration (model, workspace, flags) is not usable.
    Config,
    /// Persisting the thread failed.
    Storage,
    /// A bug: Cairn did something it should not have.
    Internal,
}

/// Something went wrong; `message` says what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEvent {
    pub message: String,
    pub kind: ErrorKind,
}
