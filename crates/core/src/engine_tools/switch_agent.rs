//! `switch_agent`: the router's hand-over, accepted once per turn; the session starts
//! the thread's next turn as the profile named.

use async_trait::async_trait;
use cairn_protocol::CallKind;
use cairn_protocol::describe::{CallAbout, text_arg};
use serde_json::Value;

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Signal, Success, TurnServices};
use crate::disclosure::Offer;
use crate::switch::{SWITCH_AGENT, SwitchArgs, check, switch_agent_spec};
use crate::tool::parse_args;

pub(crate) struct SwitchAgent;

/// Whether a level at `place` may hand the thread over: the root of a thread that
/// routes, on a model that calls tools.
fn hands_over_here(place: &Place<'_>) -> bool {
    place.depth == 0 && place.can_call_tools && place.agents.switches_left.is_some()
}

#[async_trait]
impl EngineTool for SwitchAgent {
    fn names(&self) -> &'static [&'static str] {
        &[SWITCH_AGENT]
    }

    /// The router is there to hand over: its tool is never folded away.
    fn offer(&self, place: &Place<'_>) -> Option<Offer> {
        hands_over_here(place).then(|| Offer::core(switch_agent_spec(place.agents)))
    }

    fn resolve(&self, place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        (name == SWITCH_AGENT).then(|| {
            if hands_over_here(place) {
                Ok(())
            } else {
                Err(NotHere::because(format!(
                    "{SWITCH_AGENT} is only available to the agent that answers the user, in a \
                     conversation started with the router; do the work yourself"
                )))
            }
        })
    }

    fn describe(&self, _name: &str, args: &Value) -> CallAbout {
        let to = text_arg(args, "agent").unwrap_or_default();
        CallAbout::new(format!("hand over to {to}"), Some(format!("to {to}")))
    }

    /// It ends the turn: it must see every call before it finished.
    fn parallel_safe(&self) -> bool {
        false
    }

    fn kind(&self) -> Option<CallKind> {
        Some(CallKind::HandOver)
    }

    async fn run(
        &self,
        turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        let args: SwitchArgs = parse_args(call.args).map_err(|err| err.to_string())?;
        let switch = check(turn.agents(), args)?;
        if let Some(agent) = turn.agents().find(&switch.to) {
            turn.server_answers(agent).await?;
        }
        let to = switch.to.clone();
        turn.hand_over(switch)?;
        let content = format!("Handing over to `{to}`: it continues after this turn.");
        Ok(Success {
            signal: Signal::Switched,
            ..Success::text(content)
        })
    }
}
