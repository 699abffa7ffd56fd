//! `read_tool_result`: a page of a result this turn cut; answerable at any depth,
//! since a subtask can be handed the id of a call its parent made.

use async_trait::async_trait;

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Success, TurnServices};
use crate::disclosure::Offer;
use crate::results::{READ_TOOL_RESULT, ReadArgs};
use crate::tool::parse_args;

pub(crate) struct ReadToolResult;

#[async_trait]
impl EngineTool for ReadToolResult {
    fn names(&self) -> &'static [&'static str] {
        &[READ_TOOL_RESULT]
    }

    /// The layout shows it beside the visible tools once a result was cut.
    fn offer(&self, _place: &Place<'_>) -> Option<Offer> {
        None
    }

    fn resolve(&self, _place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        (name == READ_TOOL_RESULT).then_some(Ok(()))
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn sizes_itself(&self) -> bool {
        true
    }

    async fn run(
        &self,
        turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        let args: ReadArgs = parse_args(call.args).map_err(|err| err.to_string())?;
        Ok(Success::text(turn.read_kept(&args, call.room)?))
    }
}
