//! The set of tools a level may call.

use std::sync::Arc;

use crate::tool::Tool;
use cairn_protocol::ToolSpec;

use crate::agent::ToolSelection;
use crate::disclosure::Offer;
use crate::engine_tools::registry::is_engine_tool;

/// Tools by name, with their specs computed once.
#[derive(Clone, Default)]
pub struct Toolbelt {
    tools: Vec<Arc<dyn Tool>>,
    specs: Arc<[ToolSpec]>,
}

impl std::fmt::Debug for Toolbelt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolbeltError {
    #[error("two tools are named `{0}`")]
    Duplicate(String),
    #[error("`{0}` is reserved for the engine's own tool")]
    Reserved(String),
}

impl Toolbelt {
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<Self, ToolbeltError> {
        let tools: Vec<Arc<dyn Tool>> = tools.into_iter().collect();
        for (index, tool) in tools.iter().enumerate() {
            let name = tool.name();
            if is_engine_tool(name) {
                return Err(ToolbeltError::Reserved(name.to_owned()));
            }
            if tools[..index].iter().any(|other| other.name() == name) {
                return Err(ToolbeltError::Duplicate(name.to_owned()));
            }
        }
        Ok(Self::from_checked(tools))
    }

    fn from_checked(tools: Vec<Arc<dyn Tool>>) -> Self {
        let specs = tools.iter().map(|tool| tool.spec()).collect();
        Self { tools, specs }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|tool| tool.name())
    }

    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Each tool's spec with the group it waits in when tools are shown on demand.
    pub(crate) fn offers(&self) -> impl Iterator<Item = Offer> + '_ {
        self.tools
            .iter()
            .zip(self.specs.iter())
            .map(|(tool, spec)| Offer {
                spec: spec.clone(),
                group: tool.group(),
            })
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools `selection` allows, in this belt's order.
    pub fn select(&self, selection: &dyn ToolSelection) -> Self {
        self.keep(|tool| selection.allows(tool.name()))
    }

    /// The tools a small model is offered (see [`Tool::for_small_models`]).
    pub fn for_small_model(&self) -> Self {
        self.keep(|tool| tool.for_small_models())
    }

    /// The tools `keep` says yes to, their specs reused: a spec can cost more to build
    /// than a whole model round of the loop.
    fn keep(&self, keep: impl Fn(&Arc<dyn Tool>) -> bool) -> Self {
        if self.tools.iter().all(&keep) {
            return self.clone();
        }
        let (tools, specs): (Vec<_>, Vec<_>) = self
            .tools
            .iter()
            .zip(self.specs.iter())
            .filter(|(tool, _)| keep(tool))
            .map(|(tool, spec)| (Arc::clone(tool), spec.clone()))
            .unzip();
        Self {
            tools,
            specs: specs.into(),
        }
    }

    /// The tools named, in this belt's order; the names it does not have are the error.
    pub fn subset(&self, names: &[String]) -> Result<Self, Vec<String>> {
        let unknown: Vec<String> = names
            .iter()
            .filter(|name| !self.contains(name) && !is_engine_tool(name))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
        Ok(self.keep(|tool| names.iter().any(|name| name == tool.name())))
    }
}
