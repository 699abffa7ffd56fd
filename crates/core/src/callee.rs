//! Who answers a tool call: one of the engine's own tools (see
//! [`crate::engine_tools`]), or a toolbelt tool.

use std::sync::Arc;

use cairn_protocol::describe::CallAbout;
use cairn_protocol::{CallKind, ToolCategory};
use serde_json::Value;

use crate::disclosure::{Disclosure, LIST_TOOL_GROUPS, LOAD_TOOLS};
use crate::engine_tools::registry::REGISTRY;
use crate::engine_tools::{EngineTool, NotHere};
use crate::level::Scope;
use crate::tool::Tool;

/// Why a call has no callee at the level it was made; the model reads it as the
/// call's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoCallee {
    /// No tool of that name is offered here. Worded as what to do, not as a list:
    /// told "Available tools: …" after an invented `tick_box`, the 1.5B loaded its
    /// loaded groups again; told to call one of them instead, with the group tools
    /// left out once nothing waits, it read the file it was to change.
    #[error(
        "there is no tool `{name}`. Call one of these instead{}: {}",
        if *.grouped { " (more with load_tools)" } else { "" },
        .available.join(", ")
    )]
    Unknown {
        name: String,
        /// Some tools still wait in groups, to be loaded.
        grouped: bool,
        /// The names the model can use here: the group tools only while a group
        /// waits.
        available: Vec<String>,
    },
    /// One of the engine's own tools, which cannot be answered here.
    #[error(transparent)]
    NotHere(#[from] NotHere),
}

/// A call's callee, resolved once.
pub(crate) enum Callee<'a> {
    Tool(&'a Arc<dyn Tool>),
    Engine(&'static dyn EngineTool),
}

impl<'a> Callee<'a> {
    /// The callee of `name` at this level, or the error the model is told when there
    /// is none here.
    pub fn resolve(scope: &'a Scope, name: &str) -> Result<Self, NoCallee> {
        let place = scope.place();
        for tool in REGISTRY {
            if let Some(found) = tool.resolve(&place, name) {
                return Ok(found.map(|()| Self::Engine(*tool))?);
            }
        }
        scope.tools.get(name).map(Self::Tool).ok_or_else(|| {
            let grouped = scope.disclosure().is_some_and(Disclosure::has_waiting);
            let mut available = scope.callable_names();
            if !grouped {
                available.retain(|tool| ![LOAD_TOOLS, LIST_TOOL_GROUPS].contains(&tool.as_str()));
            }
            NoCallee::Unknown {
                name: name.to_owned(),
                grouped,
                available,
            }
        })
    }

    /// Whether the call may run at the same time as its neighbours in a round.
    pub fn parallel_safe(&self) -> bool {
        match self {
            Self::Tool(tool) => tool.parallel_safe(),
            Self::Engine(tool) => tool.parallel_safe(),
        }
    }

    /// How the gate sees the call.
    pub fn category(&self) -> ToolCategory {
        match self {
            Self::Tool(tool) => tool.category(),
            Self::Engine(tool) => tool.category(),
        }
    }

    /// How a call to `name` with `args` reads to the user, as its tool says.
    pub fn describe(&self, name: &str, args: &Value) -> CallAbout {
        match self {
            Self::Tool(tool) => tool.describe(args),
            Self::Engine(tool) => tool.describe(name, args),
        }
    }

    /// What kind of call it is, for front ends (see [`EngineTool::kind`]).
    pub fn kind(&self) -> Option<CallKind> {
        match self {
            Self::Tool(_) => None,
            Self::Engine(tool) => tool.kind(),
        }
    }

    /// The argument a call being written shows as it grows (see `Tool::streams`).
    pub fn streams(&self) -> Option<&'static str> {
        match self {
            Self::Tool(tool) => tool.streams(),
            Self::Engine(_) => None,
        }
    }

    /// The tool, when the callee is one from the toolbelt.
    pub fn tool(&self) -> Option<&'a Arc<dyn Tool>> {
        match self {
            Self::Tool(tool) => Some(tool),
            Self::Engine(_) => None,
        }
    }
}
