//! `finish_subtask`, or the tool a level exists to call (`submit_plan`,
//! `submit_review`): accepted when it matches the level's schema, if any.

use async_trait::async_trait;
use cairn_protocol::CallKind;
use cairn_protocol::describe::CallAbout;
use serde_json::Value;

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Signal, Success, TurnServices};
use crate::disclosure::Offer;
use crate::plan::{SUBMIT_PLAN, SUBMIT_REVIEW};
use crate::subtask::FINISH_SUBTASK;

pub(crate) struct FinishSubtask;

#[async_trait]
impl EngineTool for FinishSubtask {
    fn names(&self) -> &'static [&'static str] {
        &[FINISH_SUBTASK, SUBMIT_PLAN, SUBMIT_REVIEW]
    }

    fn offer(&self, place: &Place<'_>) -> Option<Offer> {
        place.finish.map(|finish| Offer::core(finish.spec()))
    }

    fn resolve(&self, place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        if place.finish.is_some_and(|finish| finish.name() == name) {
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

    fn kind(&self) -> Option<CallKind> {
        Some(CallKind::Finish)
    }

    async fn run(
        &self,
        _turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        // Resolved only where the level has a finish.
        let Some(finish) = call.place.finish else {
            return Err(format!("{FINISH_SUBTASK} only ends a subtask").into());
        };
        let result = finish.accept(call.args)?;
        Ok(Success {
            signal: Signal::Finished(result),
            ..Success::text("result accepted".into())
        })
    }
}
