//! `run_subtask`: a child level, one deeper, on the turn's budgets.

use async_trait::async_trait;
use cairn_protocol::CallKind;
use cairn_protocol::describe::{CallAbout, quote, text_arg};
use serde_json::Value;

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Success, TurnServices};
use crate::disclosure::{Offer, ToolGroup};
use crate::subtask::{RUN_SUBTASK, run_subtask_spec};

pub(crate) struct RunSubtask;

/// Whether a level at `place` may start subtasks: its model calls tools, there is
/// depth left, its profile allows it, and a subtask limited to named tools was given
/// this one. (A child exists only where its parent could start one: a subtask, or a
/// plan's step, which needs the same.)
pub(crate) fn spawns_here(place: &Place<'_>) -> bool {
    place.can_call_tools
        && place.depth < place.max_depth
        && place.agent.tools.allows(RUN_SUBTASK)
        && place
            .named
            .is_none_or(|names| names.iter().any(|name| name == RUN_SUBTASK))
}

#[async_trait]
impl EngineTool for RunSubtask {
    fn names(&self) -> &'static [&'static str] {
        &[RUN_SUBTASK]
    }

    fn offer(&self, place: &Place<'_>) -> Option<Offer> {
        spawns_here(place).then(|| Offer::grouped(run_subtask_spec(), ToolGroup::shown("subtasks")))
    }

    fn resolve(&self, place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        if name != RUN_SUBTASK {
            return None;
        }
        if place.max_depth == 0 {
            // A small model's turn (see `turn::RootView`), or a user's limit of 0.
            return Some(Err(NotHere::because(
                "this model is not given subtasks. Do this part yourself.",
            )));
        }
        if place.depth >= place.max_depth {
            return Some(Err(NotHere::because(format!(
                "depth limit reached: subtasks nest at most {} levels and this one is at \
                 depth {}. Do this part yourself.",
                place.max_depth, place.depth
            ))));
        }
        // Where it is not offered, it is a tool like any other that is not there.
        spawns_here(place).then_some(Ok(()))
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

    fn kind(&self) -> Option<CallKind> {
        Some(CallKind::Subtask)
    }

    async fn run(
        &self,
        turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        turn.run_subtask(call.id, call.args).await
    }
}
