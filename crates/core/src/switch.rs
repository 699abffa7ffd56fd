//! `switch_agent`: the router's hand-over. A valid call ends the turn after its round;
//! the session then starts the thread's next turn as the target profile.

use cairn_protocol::ToolSpec;
use serde::Deserialize;
use serde_json::json;

use crate::agent::{AgentSetup, AgentSwitch};

pub const SWITCH_AGENT: &str = "switch_agent";

/// The hand-overs one real user message allows in a row.
pub const MAX_CONSECUTIVE_SWITCHES: u32 = 3;

/// What the follow-up says when the model gave none.
pub const CONTINUE: &str = "Continue.";

pub fn switch_agent_spec(setup: &AgentSetup) -> ToolSpec {
    let targets: Vec<String> = setup
        .switch_targets()
        .map(|agent| agent.id.clone())
        .collect();
    ToolSpec {
        name: SWITCH_AGENT.into(),
        description: "Hand this conversation to another agent better suited to it: the turn \
                      ends after this call and the agent continues with its own instructions, \
                      tools and model."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": targets, "description": "The agent's id"},
                "reason": {"type": "string", "description": "Why it suits the request, in a few words"},
                "follow_up": {"type": "string", "description": "What the agent is asked to do; by default the request continues as it is"}
            },
            "required": ["agent"]
        }),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct SwitchArgs {
    pub agent: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub follow_up: Option<String>,
}

/// Why a hand-over cannot be made; the model reads it as the call's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoHandOver {
    #[error("{SWITCH_AGENT} is not available here")]
    Unavailable,
    #[error(
        "the limit of {MAX_CONSECUTIVE_SWITCHES} hand-overs in a row is reached; do the work \
         yourself"
    )]
    LimitReached,
    #[error(
        "you already are `{id}`; do the work yourself, or switch to one of: {}",
        .targets.join(", ")
    )]
    ToItself { id: String, targets: Vec<String> },
    #[error("there is no agent `{id}` to switch to. Choose one of: {}", .targets.join(", "))]
    NoSuchAgent { id: String, targets: Vec<String> },
    /// Another call of the same turn asked first.
    #[error("this turn already hands over to `{0}`; one hand-over per turn")]
    AlreadyHandingOver(String),
}

/// The hand-over `args` ask for, or the error the model is told.
pub(crate) fn check(setup: &AgentSetup, args: SwitchArgs) -> Result<AgentSwitch, NoHandOver> {
    let targets = || {
        setup
            .switch_targets()
            .map(|agent| agent.id.clone())
            .collect::<Vec<_>>()
    };
    match setup.switches_left {
        None => return Err(NoHandOver::Unavailable),
        Some(0) => return Err(NoHandOver::LimitReached),
        Some(_) => {}
    }
    let id = args.agent.trim();
    if id == setup.current.id {
        return Err(NoHandOver::ToItself {
            id: id.to_owned(),
            targets: targets(),
        });
    }
    match setup.find(id) {
        Some(agent) if !agent.hidden => Ok(AgentSwitch {
            from: setup.current.id.clone(),
            to: agent.id.clone(),
            reason: args.reason.filter(|reason| !reason.trim().is_empty()),
            follow_up: args
                .follow_up
                .filter(|text| !text.trim().is_empty())
                .unwrap_or_else(|| CONTINUE.to_owned()),
        }),
        _ => Err(NoHandOver::NoSuchAgent {
            id: id.to_owned(),
            targets: targets(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::agent::Agent;

    fn setup(left: Option<u32>) -> AgentSetup {
        let hidden = Agent {
            hidden: true,
            ..Agent::plain("explore")
        };
        let roster: Vec<Arc<Agent>> = [Agent::plain("auto"), Agent::plain("chat"), hidden]
            .into_iter()
            .map(Arc::new)
            .collect();
        AgentSetup {
            current: Arc::clone(&roster[0]),
            roster: roster.into(),
            switches_left: left,
        }
    }

    fn args(agent: &str) -> SwitchArgs {
        SwitchArgs {
            agent: agent.into(),
            reason: Some("it chats".into()),
            follow_up: None,
        }
    }

    #[test]
    fn a_visible_other_profile_is_a_hand_over_with_a_default_follow_up() {
        let switch = check(&setup(Some(3)), args("chat")).unwrap();
        assert_eq!(
            switch,
            AgentSwitch {
                from: "auto".into(),
                to: "chat".into(),
                reason: Some("it chats".into()),
                follow_up: CONTINUE.into(),
            }
        );
    }

    #[test]
    fn unknown_hidden_and_current_targets_are_refused_with_the_valid_ones() {
        for bad in ["nobody", "explore", "auto"] {
            let err = check(&setup(Some(3)), args(bad)).unwrap_err().to_string();
            assert!(err.ends_with("one of: chat"), "{bad}: {err}");
        }
    }

    #[test]
    fn no_switches_left_is_the_limit_and_none_at_all_is_unavailable() {
        let err = check(&setup(Some(0)), args("chat")).unwrap_err();
        assert_eq!(err, NoHandOver::LimitReached);
        assert!(err.to_string().contains("limit of 3"), "{err}");
        let err = check(&setup(None), args("chat")).unwrap_err();
        assert_eq!(err, NoHandOver::Unavailable);
        assert!(err.to_string().contains("not available"), "{err}");
    }

    #[test]
    fn the_spec_offers_the_targets_as_an_enum() {
        let spec = switch_agent_spec(&setup(Some(3)));
        assert_eq!(
            spec.parameters["properties"]["agent"]["enum"],
            json!(["chat"])
        );
    }
}
