//! A change a question did not ask for. Shown the file it was asked about, the 0.5B
//! "fixed" the code word in it (`SAFFRON` → `Saffron`) and answered that it had edited
//! the file (README "Small models"). A question asks for nothing to change, so a small
//! model's call that would change a file for one is not run, and its error says to
//! answer instead. A request for a change, and a larger model, are left to the
//! permission mode as ever: whether a sentence asks is guessed from its words
//! (`prompt::is_question`), and a large model does not need the guess.

use cairn_protocol::ToolCall;

use crate::repeats::Verdict;

/// What the model is told of a change it made for a question.
const REJECTED: &str = "nothing was changed: the user asked a question, and no change \
     answers it. Answer it in one sentence from what you have read.";

/// Rejects, among a round's `calls` that are to run, each one that `changes` a file.
pub(crate) fn reject_changes(
    verdicts: &mut [Verdict],
    calls: &[ToolCall],
    changes: impl Fn(&ToolCall) -> bool,
) {
    for (verdict, call) in verdicts.iter_mut().zip(calls) {
        if *verdict == Verdict::Run && changes(call) {
            *verdict = Verdict::Reject(REJECTED.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_changes_that_would_run_are_rejected() {
        let call = |name: &str| ToolCall {
            id: name.into(),
            name: name.into(),
            arguments: "{}".into(),
            written: None,
        };
        let calls = [call("read_file"), call("edit_file"), call("write_file")];
        let mut verdicts = vec![
            Verdict::Run,
            Verdict::Run,
            Verdict::Reject("copied".to_owned()),
        ];
        reject_changes(&mut verdicts, &calls, |call| call.name != "read_file");
        assert_eq!(
            verdicts,
            [
                Verdict::Run,
                Verdict::Reject(REJECTED.to_owned()),
                Verdict::Reject("copied".to_owned()),
            ]
        );
    }
}
