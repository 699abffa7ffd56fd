//! Every engine tool, in the order a level offers them (after the toolbelt's).

use super::create_plan::CreatePlan;
use super::finish_subtask::FinishSubtask;
use super::read_tool_result::ReadToolResult;
use super::run_subtask::RunSubtask;
use super::switch_agent::SwitchAgent;
use super::tool_groups::ToolGroups;
use super::{EngineTool, Place};
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

/// The engine tools a level at `place` offers, in order.
pub(crate) fn offers<'a>(place: &'a Place<'a>) -> impl Iterator<Item = Offer> + 'a {
    REGISTRY.iter().filter_map(move |tool| tool.offer(place))
}

/// Whether a level at `place` offers the engine tool `name`: what its prompt says
/// of subtasks, plans and the hand-over follows what the tools decided. Only the
/// tool that answers to `name` is asked.
pub(crate) fn offered(place: &Place<'_>, name: &str) -> bool {
    REGISTRY
        .iter()
        .filter(|tool| tool.names().contains(&name))
        .filter_map(|tool| tool.offer(place))
        .any(|offer| offer.spec.name == name)
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

    /// What a level offers of subtasks, plans and the hand-over is each tool's own
    /// rule over the level's facts.
    #[test]
    fn each_engine_tool_decides_where_it_is_offered() {
        use std::sync::Arc;

        use crate::agent::{Agent, AgentSetup, NamedTools};
        use crate::plan::CREATE_PLAN;
        use crate::subtask::RUN_SUBTASK;
        use crate::switch::SWITCH_AGENT;

        let agents = AgentSetup::default();
        let routing = AgentSetup {
            switches_left: Some(2),
            ..AgentSetup::default()
        };
        let no_plans = Agent {
            tools: Arc::new(NamedTools(vec![RUN_SUBTASK.to_owned()])),
            ..Agent::plain("worker")
        };
        let root = Place {
            depth: 0,
            max_depth: 2,
            agent: &agents.current,
            agents: &agents,
            can_call_tools: true,
            named: None,
            finish: None,
            disclosure: None,
        };
        let offered_at = |place: &Place<'_>| -> Vec<&str> {
            [RUN_SUBTASK, CREATE_PLAN, SWITCH_AGENT]
                .into_iter()
                .filter(|name| offered(place, name))
                .collect()
        };
        assert_eq!(offered_at(&root), [RUN_SUBTASK, CREATE_PLAN]);
        // The root of a thread that routes may hand it over; a child never.
        let router = Place {
            agents: &routing,
            ..root
        };
        assert_eq!(
            offered_at(&router),
            [RUN_SUBTASK, CREATE_PLAN, SWITCH_AGENT]
        );
        assert_eq!(
            offered_at(&Place { depth: 1, ..router }),
            [RUN_SUBTASK, CREATE_PLAN]
        );
        // No depth left, a model that cannot call tools: nothing.
        assert!(offered_at(&Place { depth: 2, ..root }).is_empty());
        assert!(
            offered_at(&Place {
                can_call_tools: false,
                ..router
            })
            .is_empty()
        );
        // A profile without `create_plan` still spawns; a subtask limited to tools
        // that do not name `run_subtask` does neither.
        assert_eq!(
            offered_at(&Place {
                agent: &no_plans,
                ..root
            }),
            [RUN_SUBTASK]
        );
        let named = ["read_file".to_owned()];
        assert!(
            offered_at(&Place {
                named: Some(&named),
                depth: 1,
                ..root
            })
            .is_empty()
        );
    }
}
