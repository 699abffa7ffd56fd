//! A thread as the view lists it: the user's messages and the assistant's turns,
//! from the store, with a running turn replaced by its live stream.

use cairn_protocol::{ErrorEvent, ErrorKind, Handover, MessageView, Role};

use crate::turn::TurnView;

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User {
        id: String,
        text: String,
    },
    Assistant {
        id: String,
        view: Box<TurnView>,
    },
    /// A message Cairn wrote (the follow-up of a hand-over), not the user.
    Synthetic {
        id: String,
        text: String,
        handover: Option<Handover>,
    },
}

impl Entry {
    pub fn id(&self) -> &str {
        match self {
            Self::User { id, .. } | Self::Assistant { id, .. } | Self::Synthetic { id, .. } => id,
        }
    }
}

/// The stored messages as entries; a failed answer keeps its error to show.
pub fn entries(messages: &[MessageView]) -> Vec<Entry> {
    messages
        .iter()
        .map(|message| match message.role {
            Role::User if message.synthetic => Entry::Synthetic {
                id: message.id.clone(),
                text: message.content.clone(),
                handover: message.handover.clone(),
            },
            // A question Cairn wrote for the user's action shows the action.
            Role::User => Entry::User {
                id: message.id.clone(),
                text: message
                    .shown
                    .clone()
                    .unwrap_or_else(|| message.content.clone()),
            },
            Role::Assistant => {
                let mut view = TurnView::from_stored(
                    &message.content,
                    message.execution_tree.as_ref(),
                    message.status,
                );
                if let Some(reasoning) = &message.reasoning {
                    view.reasoning.clone_from(reasoning);
                }
                view.thread_id = Some(message.thread_id.clone());
                view.message_id = Some(message.id.clone());
                view.restorable.clone_from(&message.restorable);
                // A cut answer's note is said by its own notice, not as a failure.
                view.error = message
                    .error
                    .as_ref()
                    .filter(|_| view.cut.is_none())
                    .map(|error| ErrorEvent {
                        message: error.clone(),
                        kind: ErrorKind::Provider,
                    });
                Entry::Assistant {
                    id: message.id.clone(),
                    view: Box::new(view),
                }
            }
        })
        .collect()
}

/// The prompt to send again when the last answer failed.
pub fn retry_prompt(entries: &[Entry]) -> Option<String> {
    let mut last_two = entries.iter().rev();
    match (last_two.next(), last_two.next()) {
        (Some(Entry::Assistant { view, .. }), Some(Entry::User { text, .. }))
            if view.error.is_some() =>
        {
            Some(text.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::{ExecutionTree, ExecutionTreeNode, MessageStatus, TurnStatus};

    fn message(id: &str, role: Role, content: &str, status: MessageStatus) -> MessageView {
        MessageView {
            id: id.into(),
            thread_id: "t".into(),
            role,
            content: content.into(),
            reasoning: None,
            execution_tree: None,
            usage: None,
            status,
            error: None,
            synthetic: false,
            handover: None,
            created_at: 0,
            updated_at: 0,
            restorable: Vec::new(),
            shown: None,
        }
    }

    #[test]
    fn stored_turns_come_back_with_their_nested_cards() {
        let mut answer = message("a1", Role::Assistant, "Both done.", MessageStatus::Complete);
        let node = |id: &str, parent: Option<&str>, name: &str| ExecutionTreeNode {
            subject: None,
            change: None,
            result_bytes: None,
            server: None,
            id: id.into(),
            parent_id: parent.map(Into::into),
            name: name.into(),
            kind: (name == "run_subtask").then_some(cairn_protocol::CallKind::Subtask),
            title: (name == "run_subtask").then(|| format!("task {id}")),
            args_preview: Some("{}".into()),
            result_preview: Some("ok".into()),
            is_error: Some(false),
            duration_ms: 12,
            waited_ms: 0,
            denied: false,
            images: Vec::new(),
        };
        answer.execution_tree = Some(ExecutionTree::new(vec![
            node("s1", None, "run_subtask"),
            node("s2", None, "run_subtask"),
            node("r1", Some("s1"), "read_file"),
        ]));
        answer.reasoning = Some("thinking it over".into());
        let entries = entries(&[
            message("u1", Role::User, "Do two things", MessageStatus::Complete),
            answer,
        ]);
        assert_eq!(entries.len(), 2);
        let Entry::Assistant { view, .. } = &entries[1] else {
            panic!("the second entry is the answer");
        };
        assert_eq!(view.cards.len(), 3);
        assert_eq!(view.cards["s1"].label(), "task s1");
        assert!(view.cards["s1"].expanded, "root cards open");
        assert_eq!(view.cards["r1"].depth, 1);
        assert!(!view.cards["r1"].expanded, "nested cards start collapsed");
        assert_eq!(view.reasoning, "thinking it over");
        assert_eq!(view.finished, Some(TurnStatus::Completed));
        assert_eq!(view.text(), "Both done.");
        assert_eq!(retry_prompt(&entries), None);
    }

    #[test]
    fn a_failed_answer_offers_its_prompt_again() {
        let mut failed = message("a1", Role::Assistant, "", MessageStatus::Failed);
        failed.error = Some("could not connect to http://localhost:11434".into());
        let entries = entries(&[
            message("u1", Role::User, "Hello?", MessageStatus::Complete),
            failed,
        ]);
        assert_eq!(retry_prompt(&entries).as_deref(), Some("Hello?"));
        let Entry::Assistant { view, .. } = &entries[1] else {
            panic!("an answer");
        };
        assert!(
            view.error
                .as_ref()
                .is_some_and(|e| e.message.contains("could not connect"))
        );
    }

    #[test]
    fn a_hand_over_comes_back_as_cairns_message_between_two_answers() {
        let mut follow_up = message("u2", Role::User, "Review it.", MessageStatus::Complete);
        follow_up.synthetic = true;
        follow_up.handover = Some(Handover {
            from: "auto".into(),
            to: "reviewer".into(),
            reason: Some("a review".into()),
        });
        let entries = entries(&[
            message("u1", Role::User, "review", MessageStatus::Complete),
            message("a1", Role::Assistant, "", MessageStatus::Complete),
            follow_up.clone(),
            message("a2", Role::Assistant, "Fine.", MessageStatus::Complete),
        ]);
        assert_eq!(
            entries[2],
            Entry::Synthetic {
                id: "u2".into(),
                text: "Review it.".into(),
                handover: follow_up.handover,
            }
        );
        assert!(matches!(&entries[1], Entry::Assistant { .. }));
        assert!(matches!(&entries[3], Entry::Assistant { .. }));
    }
}
