//! `list_tool_groups` and `load_tools`: where the window is too small for every
//! tool, the rest wait in groups the model lists and loads.

use async_trait::async_trait;

use super::{At, CallFailure, EngineCall, EngineTool, Site, Success, TurnServices};
use crate::disclosure::{Disclosure, LIST_TOOL_GROUPS, LOAD_TOOLS, LoadToolsArgs, Offer};
use crate::tool::parse_args;

/// `list_tool_groups`: the groups whose tools wait to be loaded.
pub(crate) struct ListToolGroups;

/// `load_tools`: shows a group's tools from the next round on.
pub(crate) struct LoadTools;

/// Both are the layout's own: offered where some tools wait in groups.
fn where_folded(at: At<'_>, name: &str, own: &str) -> Option<Result<(), String>> {
    (name == own && at.disclosure.is_some()).then_some(Ok(()))
}

/// The level's tool groups (a call resolves only where there are some).
fn folded<'a>(at: At<'a>) -> Result<&'a Disclosure, CallFailure> {
    at.disclosure
        .ok_or_else(|| CallFailure::RespondToModel("tool groups are not in use here".into()))
}

#[async_trait]
impl EngineTool for ListToolGroups {
    fn names(&self) -> &'static [&'static str] {
        &[LIST_TOOL_GROUPS]
    }

    fn offer(&self, _site: &Site<'_>) -> Option<Offer> {
        None
    }

    fn resolve(&self, at: At<'_>, name: &str, _max_depth: u32) -> Option<Result<(), String>> {
        where_folded(at, name, LIST_TOOL_GROUPS)
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    async fn run(
        &self,
        _turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        Ok(Success::text(folded(call.at)?.list()))
    }
}

#[async_trait]
impl EngineTool for LoadTools {
    fn names(&self) -> &'static [&'static str] {
        &[LOAD_TOOLS]
    }

    fn offer(&self, _site: &Site<'_>) -> Option<Offer> {
        None
    }

    fn resolve(&self, at: At<'_>, name: &str, _max_depth: u32) -> Option<Result<(), String>> {
        where_folded(at, name, LOAD_TOOLS)
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    async fn run(
        &self,
        _turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        let disclosure = folded(call.at)?;
        let args: LoadToolsArgs = parse_args(call.args).map_err(|err| err.to_string())?;
        Ok(disclosure.load(&args.groups).map(Success::text)?)
    }
}
