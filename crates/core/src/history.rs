//! Keeping the model's input within bounds: token estimates, and a history fitted to
//! its budget.
//!
//! over budget → older units pruned, oldest first (never the system prompt, the last
//! user message or the round the model waits on) → still over: that round's results
//! cut further, down to a useful head and tail each → still over: the budget trips.
//! (Each result is first sized as it arrives, in `results` and the level.)

use std::ops::Range;

use cairn_protocol::{ChatMessage, ToolSpec};

/// A rough token count: three bytes a token, plus a few tokens of framing per
/// message. Measured against a real tokenizer (SmolLM2's, through llama.cpp), prompts
/// of English, JSON schemas, file text and search results came to 0.97–1.11 of this;
/// tokenizers with larger vocabularies count fewer. A turn corrects it upwards by each
/// server's own count (see `Turn::learn_count`).
pub fn estimate_tokens(message: &ChatMessage) -> u64 {
    let bytes = message.content().len()
        + message
            .tool_calls()
            .iter()
            .map(|call| call.name.len() + call.arguments.len() + call.id.len())
            .sum::<usize>();
    bytes_to_tokens(bytes) + MESSAGE_FRAMING
}

/// What both dialects wrap each tool's schema in on the wire.
const SPEC_WRAPPER: &str = r#"{"type":"function","function":}"#;

/// The estimated size of tool schemas as the model receives them (a JSON list), each
/// in the wrapper the request puts it in. Counted as written, never held.
pub fn spec_tokens<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> u64 {
    let mut written = Counted(0);
    let mut count: usize = 0;
    for spec in specs {
        // Writing to a counter cannot fail, and a spec always serializes.
        let _ = serde_json::to_writer(&mut written, spec);
        count += 1;
    }
    let list = 2 + count.saturating_sub(1);
    bytes_to_tokens(written.0 + list + count * SPEC_WRAPPER.len())
}

/// A writer that only counts what it is given.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A whole request, estimated: its messages and the tool schemas it offers.
pub fn estimate_request(messages: &[ChatMessage], tools: &[ToolSpec]) -> u64 {
    spec_tokens(tools) + messages.iter().map(estimate_tokens).sum::<u64>()
}

/// The tokens a chat template spends around each message (its role and markers).
pub const MESSAGE_FRAMING: u64 = 4;

/// What [`estimate_tokens`] takes a token to be.
pub const BYTES_PER_TOKEN: u64 = 3;

pub fn bytes_to_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes)
        .unwrap_or(u64::MAX)
        .div_ceil(BYTES_PER_TOKEN)
}

/// The bytes that `tokens` estimated tokens hold.
pub fn tokens_to_bytes(tokens: u64) -> usize {
    usize::try_from(tokens.saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX)
}

/// Cuts a tool result (its call's id, its text) to at most the given bytes, keeping
/// what is cut where the model can page back to it.
pub type Recut<'a> = dyn FnMut(&str, &str, usize) -> String + 'a;

/// Fits `history` into `budget` estimated tokens, `fixed_tokens` (the tool schemas)
/// counted in. Returns the estimate that remains, or `Err` with it when even the
/// protected messages, their results cut to `min_result_bytes` each, do not fit.
///
/// Never removed: the system prompt (a leading system message), the last user
/// message, and the round the model waits on (the last tool-calling assistant message
/// after it, with its results). An older assistant message that called tools goes
/// together with its results, so the history never holds one half of a call/result
/// pair. When pruning is not enough, the results of the round waited on are cut with
/// `recut` to equal shares of what is left, never below `min_result_bytes`.
pub fn fit(
    history: &mut Vec<ChatMessage>,
    budget: u64,
    fixed_tokens: u64,
    min_result_bytes: usize,
    recut: &mut Recut<'_>,
) -> Result<u64, u64> {
    let mut total = fixed_tokens + history.iter().map(estimate_tokens).sum::<u64>();
    if total <= budget {
        return Ok(total);
    }
    total = prune(history, budget, total);
    if total <= budget {
        return Ok(total);
    }
    if let Some(round) = waited_on(history) {
        total = shrink_results(history, round, budget, total, min_result_bytes, recut);
    }
    if total <= budget {
        Ok(total)
    } else {
        Err(total)
    }
}

/// Removes the oldest prunable units until `total` fits `budget`; returns what is left.
fn prune(history: &mut Vec<ChatMessage>, budget: u64, mut total: u64) -> u64 {
    let keep_first = usize::from(matches!(history.first(), Some(ChatMessage::System { .. })));
    let last_user = last_user(history);
    let round = waited_on(history);
    let mut start = keep_first;
    let mut removed = Vec::new();
    while total > budget && start < history.len() {
        if Some(start) == last_user {
            start += 1;
            continue;
        }
        if let Some(round) = &round
            && round.start == start
        {
            start = round.end;
            continue;
        }
        let end = unit_end(history, start);
        total -= history[start..end].iter().map(estimate_tokens).sum::<u64>();
        removed.push(start..end);
        start = end;
    }
    for range in removed.into_iter().rev() {
        history.drain(range);
    }
    total
}

/// What [`fit`] never removes, estimated: the system prompt, the last user message
/// and the round the model waits on.
pub fn protected_tokens(history: &[ChatMessage]) -> u64 {
    let system = match history.first() {
        Some(message @ ChatMessage::System { .. }) => estimate_tokens(message),
        _ => 0,
    };
    let question = last_user(history).map_or(0, |at| estimate_tokens(&history[at]));
    let round = waited_on(history).map_or(0, |round| {
        history[round].iter().map(estimate_tokens).sum::<u64>()
    });
    system + question + round
}

fn last_user(history: &[ChatMessage]) -> Option<usize> {
    history
        .iter()
        .rposition(|message| matches!(message, ChatMessage::User { .. }))
}

/// The round the model waits on: the last assistant message that called tools, with
/// its results, when it comes after the last user message.
fn waited_on(history: &[ChatMessage]) -> Option<Range<usize>> {
    let start = history.iter().rposition(
        |message| matches!(message, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
    )?;
    if last_user(history).is_some_and(|user| user > start) {
        return None;
    }
    Some(start..unit_end(history, start))
}

/// Cuts the results of `round` to what is left of `budget` once everything else is
/// counted, shared equally (a result smaller than its share keeps all of it, and
/// none is cut below `min_result_bytes`). Returns the new total.
fn shrink_results(
    history: &mut [ChatMessage],
    round: Range<usize>,
    budget: u64,
    total: u64,
    min_result_bytes: usize,
    recut: &mut Recut<'_>,
) -> u64 {
    let results = round.start + 1..round.end;
    let before: u64 = history[results.clone()].iter().map(estimate_tokens).sum();
    let others = total - before;
    // Each result may round its estimate up by a token, besides its framing.
    let framing = u64::try_from(results.len()).unwrap_or(u64::MAX) * (MESSAGE_FRAMING + 1);
    let room = tokens_to_bytes(budget.saturating_sub(others).saturating_sub(framing));
    let sizes: Vec<usize> = history[results.clone()]
        .iter()
        .map(|message| message.content().len())
        .collect();
    let cap = equal_share(&sizes, room).max(min_result_bytes);
    for message in &mut history[results.clone()] {
        if let ChatMessage::Tool {
            tool_call_id,
            content,
            ..
        } = message
            && content.len() > cap
        {
            *content = recut(tool_call_id, content, cap);
        }
    }
    others + history[results].iter().map(estimate_tokens).sum::<u64>()
}

/// The most each of `sizes` may keep so that together they take at most `room`:
/// those under an equal share keep all they have, and what they leave is shared by
/// the rest.
fn equal_share(sizes: &[usize], room: usize) -> usize {
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable();
    let mut left = room;
    for (taken, size) in sorted.iter().enumerate() {
        let share = left / (sorted.len() - taken);
        if *size > share {
            return share;
        }
        left -= size;
    }
    usize::MAX
}

/// The end of the pruning unit starting at `start`: a tool-calling assistant
/// message and the tool results that follow it, or a single message.
fn unit_end(history: &[ChatMessage], start: usize) -> usize {
    match &history[start] {
        ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
            let results = history[start + 1..]
                .iter()
                .take_while(|message| matches!(message, ChatMessage::Tool { .. }))
                .count();
            start + 1 + results
        }
        // Orphaned results (their call already pruned) go one by one.
        _ => start + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::ToolCall;

    fn call(id: &str) -> ChatMessage {
        calls(&[id])
    }

    fn calls(ids: &[&str]) -> ChatMessage {
        ChatMessage::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                    written: None,
                })
                .collect(),
        }
    }

    fn result(id: &str, size: usize) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            name: "read_file".into(),
            content: "x".repeat(size),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A cut that keeps the head: enough to count bytes by.
    fn head(_id: &str, content: &str, max: usize) -> String {
        content[..max.min(content.len())].to_owned()
    }

    fn total(history: &[ChatMessage], fixed: u64) -> u64 {
        fixed + history.iter().map(estimate_tokens).sum::<u64>()
    }

    /// Every tool result follows its call, and every call has its result.
    fn assert_paired(history: &[ChatMessage]) {
        for (index, message) in history.iter().enumerate() {
            if let ChatMessage::Tool { tool_call_id, .. } = message {
                assert!(
                    history[..index]
                        .iter()
                        .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id)),
                    "{tool_call_id} has no call"
                );
            }
            for c in message.tool_calls() {
                assert!(
                    history[index..].iter().any(
                        |m| matches!(m, ChatMessage::Tool { tool_call_id, .. } if *tool_call_id == c.id)
                    ),
                    "{} has no result",
                    c.id
                );
            }
        }
    }

    #[test]
    fn pruning_keeps_system_last_user_and_whole_pairs() {
        let mut history = vec![
            ChatMessage::system("sys"),
            ChatMessage::user("u".repeat(400)),
            call("a"),
            result("a", 400),
            ChatMessage::assistant("x".repeat(400)),
            ChatMessage::user("last question"),
            call("b"),
            result("b", 40),
        ];
        let kept = fit(&mut history, 60, 0, 16, &mut head).unwrap();
        assert!(kept <= 60);
        assert_eq!(kept, total(&history, 0));
        assert_eq!(history[0], ChatMessage::system("sys"));
        assert!(history.contains(&ChatMessage::user("last question")));
        assert_paired(&history);
        assert!(
            !history
                .iter()
                .any(|m| m.tool_calls().iter().any(|c| c.id == "a"))
        );
    }

    #[test]
    fn the_round_waited_on_is_kept_and_older_rounds_go_first() {
        let mut history = vec![
            ChatMessage::system("sys"),
            ChatMessage::user("question"),
            call("old"),
            result("old", 2000),
            call("new"),
            result("new", 2000),
        ];
        let kept = fit(&mut history, 700, 0, 16, &mut head).unwrap();
        assert!(kept <= 700);
        assert_eq!(
            history,
            [
                ChatMessage::system("sys"),
                ChatMessage::user("question"),
                call("new"),
                result("new", 2000),
            ]
        );
    }

    #[test]
    fn a_round_too_big_for_the_budget_has_its_results_cut_not_dropped() {
        let mut history = vec![
            ChatMessage::system("sys"),
            ChatMessage::user("question"),
            calls(&["a", "b", "c"]),
            result("a", 100),
            result("b", 6000),
            result("c", 9000),
        ];
        let budget = 1000;
        let kept = fit(&mut history, budget, 100, 16, &mut head).unwrap();
        assert!(kept <= budget, "{kept}");
        assert_eq!(kept, total(&history, 100));
        let sizes: Vec<usize> = history[3..].iter().map(|m| m.content().len()).collect();
        assert_eq!(sizes[0], 100, "a result under its share is not cut");
        assert_eq!(
            sizes[1], sizes[2],
            "the others share what is left: {sizes:?}"
        );
        assert!(
            kept > budget - 10,
            "and use nearly all of it: {kept} of {budget}"
        );
    }

    #[test]
    fn results_are_never_cut_below_the_least_useful_size() {
        let mut history = vec![
            ChatMessage::system("s".repeat(400)),
            ChatMessage::user("question"),
            call("a"),
            result("a", 5000),
        ];
        let observed = fit(&mut history, 150, 0, 640, &mut head).unwrap_err();
        assert_eq!(history[3].content().len(), 640);
        assert_eq!(observed, total(&history, 0));
    }

    #[test]
    fn fitting_fails_when_the_protected_messages_alone_are_too_big() {
        let mut history = vec![
            ChatMessage::system("s".repeat(400)),
            ChatMessage::user("u".repeat(400)),
        ];
        let observed = fit(&mut history, 50, 0, 16, &mut head).unwrap_err();
        assert_eq!(
            observed,
            2 * (400_u64.div_ceil(BYTES_PER_TOKEN) + MESSAGE_FRAMING)
        );
        assert_eq!(history.len(), 2);
    }

    #[test]
    fn schemas_are_counted_as_a_json_list_of_wrapped_specs() {
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: "does it".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let specs = [spec("a"), spec("bb")];
        let written = serde_json::to_string(&specs).unwrap().len() + 2 * SPEC_WRAPPER.len();
        assert_eq!(spec_tokens(&specs), bytes_to_tokens(written));
        assert_eq!(spec_tokens(&[]), bytes_to_tokens(2));
    }

    #[test]
    fn shares_leave_small_results_whole() {
        assert_eq!(equal_share(&[10, 20, 1000], 1030), usize::MAX);
        assert_eq!(equal_share(&[10, 20, 1000], 1029), 999);
        assert_eq!(equal_share(&[10, 20, 1000], 500), 470);
        assert_eq!(equal_share(&[400, 400], 500), 250);
        assert_eq!(equal_share(&[1, 2], 500), usize::MAX);
    }

    /// A history as a turn could have it: a system prompt, earlier turns (text and
    /// rounds of calls), the last question, and this turn's rounds so far.
    fn random_history(rng: &mut fastrand::Rng) -> Vec<ChatMessage> {
        let mut history = vec![ChatMessage::system("s".repeat(rng.usize(50..6000)))];
        let mut next_id = 0;
        let mut round = |history: &mut Vec<ChatMessage>, rng: &mut fastrand::Rng| {
            let ids: Vec<String> = (0..rng.usize(1..=4))
                .map(|_| {
                    next_id += 1;
                    format!("call_{next_id}")
                })
                .collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            history.push(calls(&refs));
            for id in &ids {
                // Mostly small, sometimes a whole file or a long log.
                let size = if rng.bool() {
                    rng.usize(0..500)
                } else {
                    rng.usize(0..120_000)
                };
                history.push(result(id, size));
            }
        };
        for _ in 0..rng.usize(0..5) {
            history.push(ChatMessage::user("u".repeat(rng.usize(1..3000))));
            for _ in 0..rng.usize(0..3) {
                round(&mut history, rng);
            }
            history.push(ChatMessage::assistant("a".repeat(rng.usize(0..3000))));
        }
        history.push(ChatMessage::user("q".repeat(rng.usize(1..2000))));
        for _ in 0..rng.usize(0..4) {
            round(&mut history, rng);
        }
        history
    }

    #[test]
    fn every_fitted_history_fits_and_keeps_what_the_model_needs() {
        const MIN: usize = 640;
        let mut rng = fastrand::Rng::with_seed(29);
        let (mut fitted, mut refused) = (0, 0);
        for case in 0..3000 {
            let seed = rng.u64(..);
            let mut rng = fastrand::Rng::with_seed(seed);
            let window = rng.u64(1024..=131_072);
            let budget = window - (window / 4).min(8192);
            let fixed = rng.u64(0..=window / 2);
            let original = random_history(&mut rng);
            let mut history = original.clone();
            let context = format!("case {case}, seed {seed}, window {window}, fixed {fixed}");

            let outcome = fit(&mut history, budget, fixed, MIN, &mut head);

            assert_eq!(history[0], original[0], "system kept: {context}");
            let question = last_user(&original).unwrap();
            let kept_question = last_user(&history).unwrap();
            assert_eq!(history[kept_question], original[question], "{context}");
            assert_paired(&history);
            // The round waited on: the same calls, each with its result, at the end.
            if let Some(round) = waited_on(&original) {
                let tail = &history[history.len() - round.len()..];
                assert_eq!(tail[0], original[round.start], "{context}");
                for (kept, was) in tail[1..].iter().zip(&original[round.start + 1..]) {
                    let (
                        ChatMessage::Tool {
                            tool_call_id: a, ..
                        },
                        ChatMessage::Tool {
                            tool_call_id: b, ..
                        },
                    ) = (kept, was)
                    else {
                        panic!("not a result: {context}");
                    };
                    assert_eq!(a, b, "{context}");
                    assert!(
                        kept.content().len() >= was.content().len().min(MIN),
                        "a result cut below the least useful size: {context}"
                    );
                }
            }
            match outcome {
                Ok(kept) => {
                    fitted += 1;
                    assert_eq!(kept, total(&history, fixed), "{context}");
                    assert!(kept <= budget, "{kept} over {budget}: {context}");
                }
                Err(observed) => {
                    refused += 1;
                    assert_eq!(observed, total(&history, fixed), "{context}");
                    // Only when nothing more could go: the protected messages alone,
                    // their results at the least useful size, are over.
                    let protected = 2 + waited_on(&original).map_or(0, |round| round.len());
                    assert_eq!(history.len(), protected, "{context}");
                    assert!(observed > budget, "{context}");
                }
            }
        }
        assert!(
            fitted > 2000 && refused > 0,
            "{fitted} fitted, {refused} refused"
        );
    }
}
