//! `finish_subtask`, or the tool a level exists to call (`submit_plan`,
//! `submit_review`): accepted when it matches the level's schema, if any.

use async_trait::async_trait;
use cairn_protocol::describe::CallAbout;
use serde_json::Value;

use super::{
    At, CallFailure, EngineCall, EngineTool, NotHere, Signal, Site, Success, TurnServices,
};
use crate::disclosure::Offer;
use crate::plan::{SUBMIT_PLAN, SUBMIT_REVIEW};
use crate::subtask::FINISH_SUBTASK;

pub(crate) struct FinishSubtask;

#[async_trait]
impl EngineTool for FinishSubtask {
    fn names(&self) -> &'static [&'static str] {
        &[FINISH_SUBTASK, SUBMIT_PLAN, SUBMIT_REVIEW]
    }

    fn offer(&self, site: &Site<'_>) -> Option<Offer> {
        site.finish.map(|finish| Offer::core(finish.spec()))
    }

    fn resolve(&self, at: At<'_>, name: &str, _max_depth: u32) -> Option<Result<(), NotHere>> {
        if at.finish.is_some_and(|finish| finish.name() == name) {
            return Some(Ok(()));
        }
        (name == FINISH_SUBTASK).then(|| {
            Err(NotHere::because(format!(
                "{FINISH_SUBTASK} only ends a subtask; at the top level, just answer"
            )))
        })
    }

    fn describe(&self, _name: &str, _args: &Value) -> CallAbout {
        CallAbout::new("finish the subtask", None)
    }

    /// It ends the level: it must see every call before it finished.
    fn parallel_safe(&self) -> bool {
        false
    }

    async fn run(
        &self,
        _turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        // Resolved only where the level has a finish.
        let Some(finish) = call.at.finish else {
            return Err(format!("{FINISH_SUBTASK} only ends a subtask").into());
        };
        let result = finish.accept(call.args)?;
        Ok(Success {
            signal: Signal::Finished(result),
            ..Success::text("result accepted".into())
        })
    }
}
