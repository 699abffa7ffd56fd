//! Who answers a tool call: a toolbelt tool, or one of the engine's own tools, which
//! need the turn itself (depth, budget, gate) rather than the world. A new engine
//! tool is added here: its name, whether it runs beside other calls, and where it is
//! available.

use std::sync::Arc;

use crate::tool::Tool;

use crate::disclosure::{LIST_TOOL_GROUPS, LOAD_TOOLS};
use crate::level::Scope;
use crate::plan::{CREATE_PLAN, SUBMIT_PLAN, SUBMIT_REVIEW};
use crate::results::READ_TOOL_RESULT;
use crate::subtask::{FINISH_SUBTASK, RUN_SUBTASK};
use crate::switch::SWITCH_AGENT;

/// The names the engine answers itself; no toolbelt tool may take them.
const ENGINE_TOOLS: [&str; 9] = [
    CREATE_PLAN,
    SUBMIT_PLAN,
    SUBMIT_REVIEW,
    RUN_SUBTASK,
    FINISH_SUBTASK,
    LIST_TOOL_GROUPS,
    LOAD_TOOLS,
    READ_TOOL_RESULT,
    SWITCH_AGENT,
];

/// Whether `name` belongs to the engine.
pub fn is_engine_tool(name: &str) -> bool {
    ENGINE_TOOLS.contains(&name)
}

/// A call's callee, resolved once.
pub(crate) enum Callee<'a> {
    Tool(&'a Arc<dyn Tool>),
    RunSubtask,
    FinishSubtask,
    /// `list_tool_groups` (`load: false`) or `load_tools`.
    Disclosure {
        load: bool,
    },
    /// A page of a result this turn cut; answerable at any depth, since a subtask
    /// can be handed the id of a call its parent made.
    ReadToolResult,
    /// A hand-over to another profile; only at the root of a thread that routes.
    SwitchAgent,
    /// A plan of steps, each run as a subtask: offered where `run_subtask` is.
    CreatePlan,
}

/// Why a call did not produce a result.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The call failed in a way the model can read and act on: its result says so.
    RespondToModel(String),
    /// The user denied it: the model reads why, the user's card says they did.
    Denied(String),
    /// The turn is stopping (Stop, or a budget ran out): the call is cancelled.
    Stopped,
}

impl From<String> for CallFailure {
    fn from(message: String) -> Self {
        Self::RespondToModel(message)
    }
}

impl<'a> Callee<'a> {
    /// The callee of `name` at this level, or the error the model is told when there
    /// is none here.
    pub fn resolve(scope: &'a Scope, name: &str, max_depth: u32) -> Result<Self, String> {
        match name {
            RUN_SUBTASK if scope.depth >= max_depth => Err(format!(
                "depth limit reached: subtasks nest at most {max_depth} levels and this one \
                 is at depth {}. Do this part yourself.",
                scope.depth
            )),
            RUN_SUBTASK if scope.can_spawn => Ok(Self::RunSubtask),
            CREATE_PLAN if scope.can_plan => Ok(Self::CreatePlan),
            _ if scope.finish.as_ref().is_some_and(|f| f.name() == name) => Ok(Self::FinishSubtask),
            FINISH_SUBTASK => Err(format!(
                "{FINISH_SUBTASK} only ends a subtask; at the top level, just answer"
            )),
            LIST_TOOL_GROUPS | LOAD_TOOLS if scope.disclosure().is_some() => Ok(Self::Disclosure {
                load: name == LOAD_TOOLS,
            }),
            READ_TOOL_RESULT => Ok(Self::ReadToolResult),
            SWITCH_AGENT if scope.can_switch => Ok(Self::SwitchAgent),
            SWITCH_AGENT => Err(format!(
                "{SWITCH_AGENT} is only available to the agent that answers the user, in a \
                 conversation started with the router; do the work yourself"
            )),
            _ => scope.tools.get(name).map(Self::Tool).ok_or_else(|| {
                let more = if scope.disclosure().is_some() {
                    " (more with load_tools)"
                } else {
                    ""
                };
                format!(
                    "there is no tool `{name}`. Available tools{more}: {}",
                    scope.callable_names().join(", ")
                )
            }),
        }
    }

    /// Whether the call may run at the same time as its neighbours in a round.
    pub fn parallel_safe(&self) -> bool {
        match self {
            Self::Tool(tool) => tool.parallel_safe(),
            // Each subtask is its own level; the discovery tools and the pager only read.
            Self::RunSubtask
            | Self::CreatePlan
            | Self::Disclosure { .. }
            | Self::ReadToolResult => true,
            // Each ends the level: it must see every call before it finished.
            Self::FinishSubtask | Self::SwitchAgent => false,
        }
    }

    /// The tool, when the callee is one from the toolbelt.
    pub fn tool(&self) -> Option<&'a Arc<dyn Tool>> {
        match self {
            Self::Tool(tool) => Some(tool),
            Self::RunSubtask
            | Self::FinishSubtask
            | Self::Disclosure { .. }
            | Self::ReadToolResult
            | Self::SwitchAgent
            | Self::CreatePlan => None,
        }
    }
}
