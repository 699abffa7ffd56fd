//! Who answers a tool call: one of the engine's own tools (see
//! [`crate::engine_tools`]), or a toolbelt tool.

use std::sync::Arc;

use cairn_protocol::ToolCategory;
use cairn_protocol::describe::CallAbout;
use serde_json::Value;

use crate::engine_tools::EngineTool;
use crate::engine_tools::registry::REGISTRY;
use crate::level::Scope;
use crate::tool::Tool;

/// A call's callee, resolved once.
pub(crate) enum Callee<'a> {
    Tool(&'a Arc<dyn Tool>),
    Engine(&'static dyn EngineTool),
}

impl<'a> Callee<'a> {
    /// The callee of `name` at this level, or the error the model is told when there
    /// is none here.
    pub fn resolve(scope: &'a Scope, name: &str, max_depth: u32) -> Result<Self, String> {
        for tool in REGISTRY {
            if let Some(found) = tool.resolve(scope.at(), name, max_depth) {
                return found.map(|()| Self::Engine(*tool));
            }
        }
        scope.tools.get(name).map(Self::Tool).ok_or_else(|| {
            let more = if scope.disclosure().is_some() {
                " (more with load_tools)"
            } else {
                ""
            };
            format!(
                "there is no tool `{name}`. Available tools{more}: {}",
                scope.callable_names().join(", ")
            )
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

    /// The tool, when the callee is one from the toolbelt.
    pub fn tool(&self) -> Option<&'a Arc<dyn Tool>> {
        match self {
            Self::Tool(tool) => Some(tool),
            Self::Engine(_) => None,
        }
    }
}
