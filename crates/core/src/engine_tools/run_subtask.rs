//! `run_subtask`: a child level, one deeper, on the turn's budgets.

use async_trait::async_trait;
use cairn_protocol::describe::{CallAbout, quote, text_arg};
use serde_json::Value;

use super::{At, CallFailure, EngineCall, EngineTool, NotHere, Site, Success, TurnServices};
use crate::disclosure::{Offer, ToolGroup};
use crate::subtask::{RUN_SUBTASK, run_subtask_spec};

pub(crate) struct RunSubtask;

#[async_trait]
impl EngineTool for RunSubtask {
    fn names(&self) -> &'static [&'static str] {
        &[RUN_SUBTASK]
    }

    fn offer(&self, site: &Site<'_>) -> Option<Offer> {
        site.can_spawn
            .then(|| Offer::grouped(run_subtask_spec(), ToolGroup::shown("subtasks")))
    }

    fn resolve(&self, at: At<'_>, name: &str, max_depth: u32) -> Option<Result<(), NotHere>> {
        if name != RUN_SUBTASK {
            return None;
        }
        if at.depth >= max_depth {
            return Some(Err(NotHere::because(format!(
                "depth limit reached: subtasks nest at most {max_depth} levels and this one \
                 is at depth {}. Do this part yourself.",
                at.depth
            ))));
        }
        // Where it is not offered, it is a tool like any other that is not there.
        at.can_spawn.then_some(Ok(()))
    }

    fn describe(&self, _name: &str, args: &Value) -> CallAbout {
        let title = text_arg(args, "title").unwrap_or_default();
        CallAbout::new(
            format!("start the subtask “{}”", quote(title)),
            Some(title.to_owned()),
        )
    }

    /// Each subtask is its own level.
    fn parallel_safe(&self) -> bool {
        true
    }

    async fn run(
        &self,
        turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        turn.run_subtask(call.id, call.args).await
    }
}
