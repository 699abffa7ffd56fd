//! `list_tool_groups` and `load_tools`: where the window is too small for every
//! tool, the rest wait in groups the model lists and loads. Both are the layout's
//! own: offered, and answered, only where some tools wait in groups.

use async_trait::async_trait;

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Success, TurnServices};
use crate::disclosure::{LIST_TOOL_GROUPS, LOAD_TOOLS, LoadToolsArgs, Offer};
use crate::tool::parse_args;

/// `list_tool_groups` (the groups whose tools wait), or with `load`, `load_tools`
/// (shows a group's tools from the next round on).
pub(crate) struct ToolGroups {
    load: bool,
}

impl ToolGroups {
    pub(crate) const LIST: Self = Self { load: false };
    pub(crate) const LOAD: Self = Self { load: true };

    fn name(&self) -> &'static str {
        if self.load {
            LOAD_TOOLS
        } else {
            LIST_TOOL_GROUPS
        }
    }
}

#[async_trait]
impl EngineTool for ToolGroups {
    fn names(&self) -> &'static [&'static str] {
        if self.load {
            &[LOAD_TOOLS]
        } else {
            &[LIST_TOOL_GROUPS]
        }
    }

    fn offer(&self, _place: &Place<'_>) -> Option<Offer> {
        None
    }

    fn resolve(&self, place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        (name == self.name() && place.disclosure.is_some()).then_some(Ok(()))
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    async fn run(
        &self,
        _turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        // Resolved only where the level has groups.
        let disclosure = call
            .place
            .disclosure
            .ok_or_else(|| CallFailure::RespondToModel("tool groups are not in use here".into()))?;
        if !self.load {
            return Ok(Success::text(disclosure.list()));
        }
        let args: LoadToolsArgs = parse_args(call.args).map_err(|err| err.to_string())?;
        Ok(disclosure.load(&args.groups).map(Success::text)?)
    }
}
