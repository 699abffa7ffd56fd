//! `create_plan`: steps, each run as a subtask; offered where `run_subtask` is and
//! the profile allows it.

use async_trait::async_trait;
use cairn_protocol::CallKind;
use cairn_protocol::describe::{CallAbout, quote, text_arg};
use serde_json::Value;

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Success, TurnServices};
use crate::disclosure::{Offer, ToolGroup};
use crate::plan::{CREATE_PLAN, PLAN_TOOLS, create_plan_spec};

pub(crate) struct CreatePlan;

/// Whether a level at `place` may make plans: its steps are subtasks, so only where
/// `run_subtask` is, and where the profile allows it.
fn plans_here(place: &Place<'_>) -> bool {
    super::run_subtask::spawns_here(place) && place.agent.tools.allows(CREATE_PLAN)
}

#[async_trait]
impl EngineTool for CreatePlan {
    fn names(&self) -> &'static [&'static str] {
        &[CREATE_PLAN]
    }

    fn offer(&self, place: &Place<'_>) -> Option<Offer> {
        plans_here(place).then(|| Offer::grouped(create_plan_spec(), ToolGroup::rare(PLAN_TOOLS)))
    }

    fn resolve(&self, place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        (name == CREATE_PLAN && plans_here(place)).then_some(Ok(()))
    }

    fn describe(&self, _name: &str, args: &Value) -> CallAbout {
        let objective = text_arg(args, "objective");
        let action = match (objective, text_arg(args, "plan_id")) {
            (_, Some(id)) => format!("run plan {}", quote(id)),
            (Some(objective), None) => format!("plan “{}”", quote(objective)),
            (None, None) => "make a plan".to_owned(),
        };
        CallAbout::new(action, objective.map(str::to_owned))
    }

    /// Its steps are subtasks, each its own level.
    fn parallel_safe(&self) -> bool {
        true
    }

    fn kind(&self) -> Option<CallKind> {
        Some(CallKind::Plan)
    }

    async fn run(
        &self,
        turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        turn.create_plan(call.id, call.args).await
    }
}
