//! Keeping the model's input within bounds: token estimates, and history pruned
//! oldest first to the token budget. (Tool results are cut in `results`.)

use cairn_protocol::ChatMessage;

/// A rough token count: about four bytes a token for the English and code small
/// models see, plus a few tokens of framing per message. Servers that report real
/// counts correct the usage figures; this only has to bound the prompt.
pub fn estimate_tokens(message: &ChatMessage) -> u64 {
    let bytes = message.content().len()
        + message
            .tool_calls()
            .iter()
            .map(|call| call.name.len() + call.arguments.len() + call.id.len())
            .sum::<usize>();
    bytes_to_tokens(bytes) + 4
}

/// What [`estimate_tokens`] takes a token to be.
pub const BYTES_PER_TOKEN: u64 = 4;

pub fn bytes_to_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes)
        .unwrap_or(u64::MAX)
        .div_ceil(BYTES_PER_TOKEN)
}

/// Removes the oldest prunable messages until the estimate fits `budget`.
///
/// Never removed: the system prompt (a leading system message), the last user
/// message. An assistant message that called tools goes together with its results,
/// so the history never holds one half of a call/result pair. Returns the estimate
/// that remains, or `Err` with it when even the protected messages do not fit.
pub fn prune(history: &mut Vec<ChatMessage>, budget: u64, fixed_tokens: u64) -> Result<u64, u64> {
    let mut total: u64 = fixed_tokens + history.iter().map(estimate_tokens).sum::<u64>();
    if total <= budget {
        return Ok(total);
    }
    let keep_first = usize::from(matches!(history.first(), Some(ChatMessage::System { .. })));
    let last_user = history
        .iter()
        .rposition(|message| matches!(message, ChatMessage::User { .. }));
    let mut start = keep_first;
    let mut removed = Vec::new();
    while total > budget && start < history.len() {
        if Some(start) == last_user {
            start += 1;
            continue;
        }
        let end = unit_end(history, start);
        if last_user.is_some_and(|user| (start..end).contains(&user)) {
            break;
        }
        total -= history[start..end].iter().map(estimate_tokens).sum::<u64>();
        removed.push(start..end);
        start = end;
    }
    for range in removed.into_iter().rev() {
        history.drain(range);
    }
    if total <= budget {
        Ok(total)
    } else {
        Err(total)
    }
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
        ChatMessage::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
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
        let kept = prune(&mut history, 60, 0).unwrap();
        assert!(kept <= 60);
        assert_eq!(history[0], ChatMessage::system("sys"));
        assert!(history.contains(&ChatMessage::user("last question")));
        // Every tool result still follows its call, and every call has its result.
        for (index, message) in history.iter().enumerate() {
            if let ChatMessage::Tool { tool_call_id, .. } = message {
                assert!(
                    history[..index]
                        .iter()
                        .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id))
                );
            }
            for c in message.tool_calls() {
                assert!(history[index..].iter().any(
                    |m| matches!(m, ChatMessage::Tool { tool_call_id, .. } if *tool_call_id == c.id)
                ));
            }
        }
        assert!(
            !history
                .iter()
                .any(|m| m.tool_calls().iter().any(|c| c.id == "a"))
        );
    }

    #[test]
    fn pruning_fails_when_the_protected_messages_alone_are_too_big() {
        let mut history = vec![
            ChatMessage::system("s".repeat(400)),
            ChatMessage::user("u".repeat(400)),
        ];
        let observed = prune(&mut history, 50, 0).unwrap_err();
        assert_eq!(observed, 208);
        assert_eq!(history.len(), 2);
    }
}
