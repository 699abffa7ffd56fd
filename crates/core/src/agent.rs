//! Agent profiles as the engine sees them: instructions for the system prompt, which
//! tools the profile may call, and the model it asks for. Where profiles come from
//! (files, built-ins, inheritance) is the agents crate's business; the engine only
//! applies them.

use std::fmt;
use std::sync::Arc;

/// Which tool names a profile may call.
pub trait ToolSelection: Send + Sync {
    fn allows(&self, tool: &str) -> bool;
}

/// Every tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllTools;

impl ToolSelection for AllTools {
    fn allows(&self, _tool: &str) -> bool {
        true
    }
}

/// Exactly the tools named.
#[derive(Debug, Clone, Default)]
pub struct NamedTools(pub Vec<String>);

impl ToolSelection for NamedTools {
    fn allows(&self, tool: &str) -> bool {
        self.0.iter().any(|name| name == tool)
    }
}

/// One profile, resolved: its base's instructions and tool rules already folded in.
#[derive(Clone)]
pub struct Agent {
    pub id: String,
    pub description: String,
    /// Markdown that goes into the system prompt of every model call the profile makes.
    pub instructions: String,
    /// The model its calls use, instead of the thread's.
    pub model: Option<String>,
    /// The named model server its calls go to, instead of the thread's (see
    /// [`crate::servers`]).
    pub server: Option<String>,
    pub temperature: Option<f64>,
    pub tools: Arc<dyn ToolSelection>,
    /// Whether `run_subtask` may start it.
    pub runnable: bool,
    /// Left out of what the user picks from and of `switch_agent`'s targets.
    pub hidden: bool,
    /// The part the engine gives it, if any (its profile says so).
    pub role: Option<AgentRole>,
}

/// A part the engine gives a profile, declared in the profile's front matter
/// (`role: router`) rather than known by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRole {
    /// Hands the conversation to the profile best suited to it: a thread whose first
    /// turn ran as the router may hand itself over (`switch_agent`) from then on.
    Router,
    /// Reviews a plan before it runs, when the plan asks for a review.
    Reviewer,
}

impl AgentRole {
    /// As a profile's front matter names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Router => "router",
            Self::Reviewer => "reviewer",
        }
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("id", &self.id)
            .field("model", &self.model)
            .field("server", &self.server)
            .field("runnable", &self.runnable)
            .field("hidden", &self.hidden)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

/// The id of the profile a thread uses unless told otherwise.
pub const DEFAULT_AGENT: &str = "chat";

/// What a model that cannot call tools is offered.
static NO_TOOLS: NamedTools = NamedTools(Vec::new());

impl Agent {
    /// A profile with every tool, no instructions of its own and the thread's model:
    /// the engine as it behaves without profiles.
    pub fn plain(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            description: String::new(),
            instructions: String::new(),
            model: None,
            server: None,
            temperature: None,
            tools: Arc::new(AllTools),
            runnable: true,
            hidden: false,
            role: None,
        }
    }

    /// Whether it routes: a thread that ran as it may hand itself over from then on.
    pub fn routes(&self) -> bool {
        self.role == Some(AgentRole::Router)
    }

    /// The tools this profile may be offered on a model that can (`can_call_tools`)
    /// or cannot call them.
    pub(crate) fn offered(&self, can_call_tools: bool) -> &dyn ToolSelection {
        if can_call_tools {
            self.tools.as_ref()
        } else {
            &NO_TOOLS
        }
    }
}

impl Default for Agent {
    fn default() -> Self {
        Self::plain(DEFAULT_AGENT)
    }
}

/// The profile a turn runs as, the others it can reach, and whether it may hand the
/// thread to another.
#[derive(Debug, Clone, Default)]
pub struct AgentSetup {
    pub current: Arc<Agent>,
    /// Every usable profile, hidden ones included (subtasks may run those).
    pub roster: Arc<[Arc<Agent>]>,
    /// `Some` in a thread that routes (its first turn ran with the router): how many
    /// more times `switch_agent` may hand over before a real user message.
    pub switches_left: Option<u32>,
}

impl AgentSetup {
    pub fn find(&self, id: &str) -> Option<&Arc<Agent>> {
        self.roster.iter().find(|agent| agent.id == id)
    }

    /// The profile that plays `role`, if one does.
    pub fn with_role(&self, role: AgentRole) -> Option<&Arc<Agent>> {
        self.roster.iter().find(|agent| agent.role == Some(role))
    }

    /// The profiles `run_subtask` may start.
    pub fn runnable(&self) -> impl Iterator<Item = &Arc<Agent>> {
        self.roster.iter().filter(|agent| agent.runnable)
    }

    /// The profiles `switch_agent` may hand over to: visible, and not the current one.
    pub fn switch_targets(&self) -> impl Iterator<Item = &Arc<Agent>> {
        self.roster
            .iter()
            .filter(|agent| !agent.hidden && agent.id != self.current.id)
    }
}

/// A hand-over `switch_agent` asked for: what the next turn of the thread runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSwitch {
    pub from: String,
    pub to: String,
    pub reason: Option<String>,
    /// The message the next turn answers; "Continue." when the model gave none.
    pub follow_up: String,
}
