//! One model answer read from its stream: text, reasoning and whole tool calls
//! gathered, usage summed, how it ended (an answer that degenerates into repetition
//! ends there, cut). It knows nothing of levels or events: what
//! it sees on the way is handed to the caller, which shows it.

use std::time::Duration;

use crate::model::{FinishReason, ModelEvent, ModelStream, PromptRead, ProviderError, TokenUsage};
use cairn_protocol::{Cut, ToolCall, Usage};
use futures_util::StreamExt;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::history;
use crate::pending::{Pending, PendingCalls};
use crate::repetition::Repetition;

/// What the model said in one round.
#[derive(Debug, Default)]
pub(crate) struct Round {
    pub text: String,
    pub reasoning: String,
    pub calls: Vec<ToolCall>,
    /// Why the answer ended before the model finished it, if it did.
    pub cut: Option<Cut>,
}

/// Something seen on the way, for the caller to show as it arrives.
pub(crate) enum Seen<'a> {
    Text(&'a str),
    Reasoning(&'a str),
    /// The server was busy; the request goes again after `delay`.
    Reconnecting {
        attempt: u32,
        delay: Duration,
        reason: &'a str,
    },
    /// A tool call being written, as far as it has come (see [`crate::pending`]).
    CallPending(&'a Pending),
    /// How far the server has read the prompt.
    PromptRead(&'a PromptRead),
    /// The model produced something (text, reasoning or a call): it is no longer
    /// reconnecting.
    Producing,
}

/// How a round's stream ended.
#[derive(Debug)]
pub(crate) enum Ending {
    Complete,
    Stopped,
    Failed(ProviderError),
}

/// A round read to its end.
#[derive(Debug)]
pub(crate) struct Collected {
    pub round: Round,
    /// The calls shown while they were written: the ids they were shown under.
    pub pending: PendingCalls,
    /// What the server reported, summed (a forced retry answers twice in one round).
    pub reported: Option<TokenUsage>,
    pub first_token: Option<Duration>,
    pub elapsed: Duration,
    pub ending: Ending,
}

/// Reads `stream` until it ends, fails or `cancel` fires; `claim` names a tool call
/// shown while it is being written.
pub(crate) async fn collect(
    mut stream: ModelStream,
    cancel: &CancellationToken,
    mut claim: impl FnMut(&str) -> String,
    mut seen: impl FnMut(Seen<'_>),
) -> Collected {
    let started = Instant::now();
    let mut round = Round::default();
    let mut pending = PendingCalls::default();
    let mut reported: Option<TokenUsage> = None;
    let mut first_token = None;
    // Dropping the stream on a loop ends the request: the server stops generating.
    let (mut text_loop, mut reasoning_loop) = (Repetition::default(), Repetition::default());
    let ending = loop {
        let due = pending.next_due();
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => break Ending::Stopped,
            () = sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                for shown in pending.take_due(Instant::now()) {
                    seen(Seen::CallPending(&shown));
                }
                continue;
            }
            next = stream.next() => next,
        };
        let event = match next {
            None => break Ending::Complete,
            Some(Err(err)) => break Ending::Failed(err),
            Some(Ok(event)) => event,
        };
        if matches!(
            event,
            ModelEvent::Text(_)
                | ModelEvent::Reasoning(_)
                | ModelEvent::ToolCall(_)
                | ModelEvent::ToolCallDraft { .. }
        ) {
            first_token.get_or_insert_with(|| started.elapsed());
            seen(Seen::Producing);
        }
        match event {
            ModelEvent::Text(delta) => {
                seen(Seen::Text(&delta));
                round.text.push_str(&delta);
                if text_loop.degenerate(&round.text) {
                    round.cut = Some(Cut::Repetition);
                    break Ending::Complete;
                }
            }
            ModelEvent::Reasoning(delta) => {
                seen(Seen::Reasoning(&delta));
                round.reasoning.push_str(&delta);
                if reasoning_loop.degenerate(&round.reasoning) {
                    round.cut = Some(Cut::Repetition);
                    break Ending::Complete;
                }
            }
            ModelEvent::ToolCallDraft {
                slot,
                id,
                name,
                arguments,
            } => {
                pending.piece(slot, &id, &name, &arguments, &mut claim);
                for shown in pending.take_due(Instant::now()) {
                    seen(Seen::CallPending(&shown));
                }
            }
            ModelEvent::ToolCall(call) => round.calls.push(call),
            ModelEvent::Usage(usage) => {
                let total = reported.get_or_insert_with(TokenUsage::default);
                total.prompt_tokens += usage.prompt_tokens;
                total.completion_tokens += usage.completion_tokens;
                total.cached_prompt_tokens += usage.cached_prompt_tokens;
            }
            ModelEvent::PromptRead(read) => seen(Seen::PromptRead(&read)),
            ModelEvent::Finished(FinishReason::Length) => round.cut = Some(Cut::Length),
            ModelEvent::Finished(_) => {}
            ModelEvent::Reconnecting {
                attempt,
                delay,
                reason,
            } => seen(Seen::Reconnecting {
                attempt,
                delay,
                reason: &reason,
            }),
        }
    };
    Collected {
        round,
        pending,
        reported,
        first_token,
        elapsed: started.elapsed(),
        ending,
    }
}

impl Collected {
    /// The round's usage: as reported, else estimated from what was sent and said.
    /// An estimate never exceeds `answer_room`, the `max_tokens` the request gave: the
    /// server stops there, and bytes per token vary by text (a word said over and
    /// over is fewer tokens than its bytes suggest).
    pub fn usage(&self, prompt_estimate: u64, answer_room: Option<u32>) -> Usage {
        let (prompt_tokens, completion_tokens, estimated) = match self.reported {
            Some(usage) => (usage.prompt_tokens, usage.completion_tokens, false),
            None => {
                let round = &self.round;
                let produced = round.text.len()
                    + round.reasoning.len()
                    + round
                        .calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>();
                let said = history::bytes_to_tokens(produced);
                let said = answer_room.map_or(said, |room| said.min(u64::from(room)));
                (prompt_estimate, said, true)
            }
        };
        Usage {
            prompt_tokens,
            completion_tokens,
            llm_calls: 1,
            tool_calls: 0,
            estimated,
            cached_prompt_tokens: self.reported.map_or(0, |usage| usage.cached_prompt_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinishReason;
    use futures_util::stream;

    fn stream_of(events: Vec<Result<ModelEvent, ProviderError>>) -> ModelStream {
        Box::pin(stream::iter(events))
    }

    #[tokio::test]
    async fn a_round_gathers_text_reasoning_calls_and_summed_usage() {
        let events = vec![
            Ok(ModelEvent::Reasoning("hm".into())),
            Ok(ModelEvent::Text("Hel".into())),
            Ok(ModelEvent::Text("lo".into())),
            Ok(ModelEvent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
                written: None,
            })),
            Ok(ModelEvent::Usage(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 2,
                cached_prompt_tokens: 8,
            })),
            Ok(ModelEvent::Usage(TokenUsage {
                prompt_tokens: 5,
                completion_tokens: 1,
                cached_prompt_tokens: 0,
            })),
            Ok(ModelEvent::Finished(FinishReason::Stop)),
        ];
        let mut shown = Vec::new();
        let collected = collect(
            stream_of(events),
            &CancellationToken::new(),
            str::to_owned,
            |seen| {
                if let Seen::Text(text) | Seen::Reasoning(text) = seen {
                    shown.push(text.to_owned());
                }
            },
        )
        .await;
        assert!(matches!(collected.ending, Ending::Complete));
        assert_eq!(shown, ["hm", "Hel", "lo"]);
        assert_eq!(collected.round.text, "Hello");
        assert_eq!(collected.round.reasoning, "hm");
        assert_eq!(collected.round.calls.len(), 1);
        let usage = collected.usage(999, Some(1));
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (15, 3));
        assert!(!usage.estimated);
        assert!(collected.first_token.is_some());
    }

    #[tokio::test]
    async fn without_a_report_usage_is_estimated_and_a_failure_ends_the_round() {
        let events = vec![
            Ok(ModelEvent::Text("abcdefgh".into())),
            Err(ProviderError::StreamCut {
                server: "s".into(),
                detail: "gone".into(),
            }),
            Ok(ModelEvent::Text("never read".into())),
        ];
        let collected = collect(
            stream_of(events),
            &CancellationToken::new(),
            str::to_owned,
            |_| {},
        )
        .await;
        assert!(matches!(
            collected.ending,
            Ending::Failed(ProviderError::StreamCut { .. })
        ));
        assert_eq!(collected.round.text, "abcdefgh");
        let usage = collected.usage(42, None);
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (42, 3));
        assert!(usage.estimated);
        // A server stops at the answer's room, whatever the bytes suggest.
        assert_eq!(collected.usage(42, Some(2)).completion_tokens, 2);
    }

    #[tokio::test]
    async fn a_stop_ends_the_round_with_what_was_said() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let collected = collect(
            stream_of(vec![Ok(ModelEvent::Text("x".into()))]),
            &cancel,
            str::to_owned,
            |_| {},
        )
        .await;
        assert!(matches!(collected.ending, Ending::Stopped));
        assert!(collected.round.text.is_empty());
    }
}
