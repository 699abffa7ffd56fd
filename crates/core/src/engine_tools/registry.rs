//! Every engine tool, in the order a level offers them (after the toolbelt's).

use super::create_plan::CreatePlan;
use super::finish_subtask::FinishSubtask;
use super::read_tool_result::ReadToolResult;
use super::run_subtask::RunSubtask;
use super::switch_agent::SwitchAgent;
use super::tool_groups::ToolGroups;
use super::{EngineTool, Site};
use crate::disclosure::Offer;

pub(crate) static REGISTRY: &[&dyn EngineTool] = &[
    &RunSubtask,
    &CreatePlan,
    &SwitchAgent,
    &FinishSubtask,
    &ToolGroups::LIST,
    &ToolGroups::LOAD,
    &ReadToolResult,
    #[cfg(test)]
    &super::echo::Echo,
];

/// Whether `name` belongs to the engine.
pub(crate) fn is_engine_tool(name: &str) -> bool {
    REGISTRY.iter().any(|tool| tool.names().contains(&name))
}

/// The engine tools a level at `site` offers, in order.
pub(crate) fn offers<'a>(site: &'a Site<'a>) -> impl Iterator<Item = Offer> + 'a {
    REGISTRY.iter().filter_map(move |tool| tool.offer(site))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_tools_names_are_kept_from_the_toolbelt() {
        assert!(is_engine_tool(super::super::echo::ECHO));
        assert!(is_engine_tool(crate::subtask::RUN_SUBTASK));
        assert!(is_engine_tool(crate::plan::SUBMIT_REVIEW));
        assert!(!is_engine_tool("read_file"));
    }
}
