//! The turn's names: its thread's, its answer's, and ids unique within it. Tool-call
//! ids come from the model when it gives usable ones; the tree and the approvals need
//! them unique, so empty or repeated ids (some servers count from zero every answer)
//! are replaced.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use cairn_protocol::ChatMessage;

pub(crate) struct Ids {
    pub(crate) thread_id: String,
    /// The answer's message id: the turn's name for tools that count per turn.
    pub(crate) message_id: String,
    seen: Mutex<HashSet<String>>,
    calls: AtomicU64,
    approvals: AtomicU64,
}

impl Ids {
    /// The names of the answer `message_id` in thread `thread_id`, whose `history`
    /// already used some call ids.
    pub fn new(thread_id: &str, message_id: &str, history: &[ChatMessage]) -> Self {
        let seen = history
            .iter()
            .flat_map(ChatMessage::tool_calls)
            .map(|call| call.id.clone())
            .collect();
        Self {
            thread_id: thread_id.to_owned(),
            message_id: message_id.to_owned(),
            seen: Mutex::new(seen),
            calls: AtomicU64::new(0),
            approvals: AtomicU64::new(0),
        }
    }

    /// `proposed` where it is usable, else a fresh `call_N`.
    pub fn claim_call(&self, proposed: &str) -> String {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if !proposed.is_empty() && seen.insert(proposed.to_owned()) {
            return proposed.to_owned();
        }
        loop {
            let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
            let id = format!("call_{n}");
            if seen.insert(id.clone()) {
                return id;
            }
        }
    }

    pub fn approval(&self) -> String {
        let n = self.approvals.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{}:approval:{n}", self.message_id)
    }
}

#[cfg(test)]
mod tests {
    use cairn_protocol::ToolCall;

    use super::*;

    #[test]
    fn a_call_id_is_kept_unless_empty_or_used_and_approvals_are_named_by_the_answer() {
        let mut answer = ChatMessage::assistant("");
        if let ChatMessage::Assistant { tool_calls, .. } = &mut answer {
            tool_calls.push(ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
                written: None,
            });
        }
        let history = [answer];
        let ids = Ids::new("t1", "m7", &history);
        assert_eq!(ids.claim_call("abc"), "abc");
        // Used by the thread already, used this turn, or none at all: fresh ones.
        assert_eq!(ids.claim_call("call_1"), "call_2");
        assert_eq!(ids.claim_call("abc"), "call_3");
        assert_eq!(ids.claim_call(""), "call_4");
        assert_eq!(ids.approval(), "m7:approval:1");
        assert_eq!(ids.approval(), "m7:approval:2");
    }
}
