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
mod tests;
