//! Small models loop: they call the same tool with the same arguments again and
//! again, each time reading the same result. At one level, the third identical call
//! in a row (calls of one round count in their order) is not run; its result tells
//! the model it repeats the previous call and quotes what that returned. A model
//! that, told so, makes the call again in a later round is stuck: the level ends
//! there.

use cairn_protocol::{ChatMessage, ToolCall};
use serde_json::Value;

use crate::clip::clipped;

/// Identical calls in a row that still run.
const RUNS_IN_A_ROW: u32 = 2;
/// Rounds in a row with a refused repeat after which the level stops.
const REFUSED_ROUNDS: u32 = 2;
/// The longest arguments quoted when a level stops, in characters.
const MAX_ARGUMENTS_CHARS: usize = 120;
/// The longest quote of an earlier result, in characters: enough for the whole of
/// what small models loop on (a short file, a CSV, a command's output). Its first line
/// alone told a model re-reading a CSV only the header.
const MAX_QUOTE_CHARS: usize = 1500;

/// The streak of identical calls at one level.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    /// The last call's tool and arguments.
    last: Option<String>,
    in_a_row: u32,
    /// What the streak's last call that ran returned, quoted.
    returned: Option<String>,
    /// Rounds in which the streak's call was refused.
    refused_rounds: u32,
}

/// What becomes of one call of a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Run,
    /// Not run: it repeats a call that ran.
    Refuse(Previous),
    /// Not run, for this reason, which is its error (see `copied`).
    Reject(String),
}

/// The call a refused one repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Previous {
    /// In an earlier round: what it returned, quoted.
    Returned(String),
    /// Earlier in this round, at this index: its result is not known yet.
    InRound(usize),
}

impl Repeats {
    /// Judges a round's calls in order, and counts them into the streak.
    pub fn judge(&mut self, calls: &[ToolCall]) -> Vec<Verdict> {
        let mut last_run: Option<usize> = None;
        let mut refused = false;
        let verdicts = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let signature = signature(call);
                if self.last.as_ref() == Some(&signature) {
                    self.in_a_row += 1;
                } else {
                    self.last = Some(signature);
                    self.in_a_row = 1;
                    self.returned = None;
                    self.refused_rounds = 0;
                    last_run = None;
                    refused = false;
                }
                if self.in_a_row <= RUNS_IN_A_ROW {
                    last_run = Some(index);
                    return Verdict::Run;
                }
                refused = true;
                Verdict::Refuse(match last_run {
                    Some(earlier) => Previous::InRound(earlier),
                    None => Previous::Returned(self.returned.clone().unwrap_or_default()),
                })
            })
            .collect();
        if refused {
            self.refused_rounds += 1;
        }
        verdicts
    }

    /// The call the model is stuck on: refused in [`REFUSED_ROUNDS`] rounds in a
    /// row, so it was told and made it again. The level should stop rather than
    /// spend its remaining rounds on it.
    pub fn stuck(&self) -> Option<String> {
        (self.refused_rounds >= REFUSED_ROUNDS)
            .then(|| self.last.as_deref().map(shown))
            .flatten()
    }

    /// Keeps what the streak's last call that ran (or was rejected) returned, for a
    /// repeat in a later round. `results` are the round's, in call order.
    pub fn observe(&mut self, verdicts: &[Verdict], results: &[ChatMessage]) {
        let ran_last = verdicts
            .iter()
            .zip(results)
            .rev()
            .find(|(verdict, _)| matches!(verdict, Verdict::Run | Verdict::Reject(_)));
        // Only when the round ends inside the streak that call belongs to: every call
        // after the last one that ran is a refused repeat of it.
        if let Some((_, result)) = ran_last {
            self.returned = Some(quote(result.content()));
        }
    }
}

/// The error a refused call returns.
pub(crate) fn refusal(call: &ToolCall, returned: &str) -> String {
    format!(
        "this call repeats your previous call (`{}` with the same arguments) and was not \
         run. That call returned: \"{returned}\". Use that result, or call with different \
         arguments.",
        call.name
    )
}

/// A result, trimmed and cut to a quote's length.
pub(crate) fn quote(content: &str) -> String {
    clipped(content.trim(), MAX_QUOTE_CHARS)
}

/// A call as a person reads it, from its signature: its tool and its arguments,
/// compact and cut short (`read_file {"path":"a.md"}`).
fn shown(signature: &str) -> String {
    let (name, arguments) = signature.split_once('\u{0}').unwrap_or((signature, ""));
    format!("{name} {}", clipped(arguments, MAX_ARGUMENTS_CHARS))
}

/// A call's tool and arguments, the same however the arguments were spaced or their
/// keys ordered.
fn signature(call: &ToolCall) -> String {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .map(|value| value.to_string())
        .unwrap_or_else(|_| call.arguments.trim().to_owned());
    format!("{}\u{0}{arguments}", call.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: format!("c-{name}"),
            name: name.into(),
            arguments: arguments.into(),
            written: None,
        }
    }

    fn result(content: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: "c".into(),
            name: "read_file".into(),
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    #[test]
    fn the_third_identical_call_in_a_row_is_refused_across_rounds() {
        let mut repeats = Repeats::default();
        let read = call("read_file", r#"{"path": "a.md"}"#);
        assert_eq!(repeats.judge(std::slice::from_ref(&read)), [Verdict::Run]);
        repeats.observe(&[Verdict::Run], &[result("line one\nline two")]);
        // Spaced and ordered differently, it is the same call.
        let again = call("read_file", r#"{ "path":"a.md" }"#);
        assert_eq!(repeats.judge(std::slice::from_ref(&again)), [Verdict::Run]);
        repeats.observe(&[Verdict::Run], &[result("\nsame again\nmore\n")]);
        assert_eq!(
            repeats.judge(std::slice::from_ref(&read)),
            [Verdict::Refuse(Previous::Returned(
                "same again\nmore".into()
            ))]
        );
        // A different call ends the streak.
        let other = call("read_file", r#"{"path": "b.md"}"#);
        assert_eq!(
            repeats.judge(&[other, read.clone()]),
            [Verdict::Run, Verdict::Run]
        );
    }

    #[test]
    fn a_repeat_of_a_rejected_call_quotes_why_it_was_rejected() {
        let mut repeats = Repeats::default();
        let write = call("write_file", r#"{"path": "a.md", "content": "x"}"#);
        let rejected = [Verdict::Reject("nothing was written".into())];
        for _ in 0..2 {
            repeats.judge(std::slice::from_ref(&write));
            repeats.observe(&rejected, &[result("Error: nothing was written")]);
        }
        assert_eq!(
            repeats.judge(std::slice::from_ref(&write)),
            [Verdict::Refuse(Previous::Returned(
                "Error: nothing was written".into()
            ))]
        );
    }

    #[test]
    fn a_second_refused_repeat_means_the_model_is_stuck() {
        let mut repeats = Repeats::default();
        let read = call("read_file", r#"{"path": "a.md"}"#);
        for expected in [None, None, None] {
            repeats.judge(std::slice::from_ref(&read));
            assert_eq!(repeats.stuck(), expected);
        }
        repeats.judge(std::slice::from_ref(&read));
        assert_eq!(
            repeats.stuck().as_deref(),
            Some(r#"read_file {"path":"a.md"}"#)
        );
        // Repeats in one round were not yet told: the next round's decides.
        let mut repeats = Repeats::default();
        repeats.judge(&[read.clone(), read.clone(), read.clone(), read.clone()]);
        assert_eq!(repeats.stuck(), None);
        repeats.judge(std::slice::from_ref(&read));
        assert!(repeats.stuck().is_some());
        // A different call in between starts over.
        let mut repeats = Repeats::default();
        let other = call("list_dir", "{}");
        repeats.judge(&[read.clone(), read.clone(), read.clone()]);
        repeats.judge(&[other, read.clone()]);
        repeats.judge(std::slice::from_ref(&read));
        assert_eq!(repeats.stuck(), None);
    }

    #[test]
    fn duplicates_in_one_round_count_in_their_order() {
        let mut repeats = Repeats::default();
        let read = call("read_file", r#"{"path": "a.md"}"#);
        let list = call("list_dir", "{}");
        assert_eq!(
            repeats.judge(&[read.clone(), read.clone(), read.clone(), read.clone()]),
            [
                Verdict::Run,
                Verdict::Run,
                Verdict::Refuse(Previous::InRound(1)),
                Verdict::Refuse(Previous::InRound(1)),
            ]
        );
        assert_eq!(
            repeats.judge(&[list.clone(), list.clone(), list]),
            [
                Verdict::Run,
                Verdict::Run,
                Verdict::Refuse(Previous::InRound(1))
            ]
        );
    }

    #[test]
    fn a_quote_is_the_whole_result_cut_short() {
        let csv = "name,age\nAda,33\nBruno,60\n";
        assert_eq!(quote(&format!("  \n{csv}")), csv.trim());
        let long = "x".repeat(5000);
        assert_eq!(quote(&long).chars().count(), MAX_QUOTE_CHARS + 1);
        assert!(quote(&long).ends_with('…'));
    }
}
