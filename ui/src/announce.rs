//! What a screen reader hears without asking, as a turn in the open chat goes on:
//! that Cairn is waiting for the user, and that the answer is finished. The window's
//! polite live region speaks it; the desktop notification says the same out of sight.

use cairn_protocol::{Event, TurnStatus};

/// The words for `event`, if it is one a listener should hear of at once.
pub fn said(event: &Event) -> Option<String> {
    match event {
        Event::ToolApprovalRequest(request) => {
            let what = request.action.as_deref().unwrap_or(&request.name);
            Some(format!(
                "Waiting for you: allow {what}? Allow, Allow for this chat, or Deny."
            ))
        }
        Event::Done(done) => Some(
            match done.status {
                TurnStatus::Completed => "The answer is finished.",
                TurnStatus::BudgetExceeded => "The answer stopped at its budget.",
                TurnStatus::Cancelled => "The answer was stopped.",
                TurnStatus::Failed => "The answer failed.",
            }
            .to_owned(),
        ),
        _ => None,
    }
}

/// The last thing worth saying among `events`: a batch that asks and finishes says
/// only where it ended.
pub fn last_said(events: &[Event]) -> Option<String> {
    events.iter().rev().find_map(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::{Chunk, Done, ToolApprovalRequest, ToolCategory, Usage};
    use serde_json::json;

    fn request(action: Option<&str>) -> Event {
        Event::ToolApprovalRequest(ToolApprovalRequest {
            approval_id: "a1".into(),
            tool_call_id: "w1".into(),
            name: "write_file".into(),
            args: json!({"path": "notes.md"}),
            category: ToolCategory::Write,
            parent_id: None,
            depth: 0,
            subtask_title: None,
            session_grant: None,
            preview: None,
            action: action.map(str::to_owned),
        })
    }

    fn done(status: TurnStatus) -> Event {
        Event::Done(Done {
            thread_id: "t1".into(),
            message_id: "m1".into(),
            usage: Usage::default(),
            status,
            cut: None,
        })
    }

    #[test]
    fn a_question_says_what_waits_and_how_to_answer() {
        assert_eq!(
            said(&request(Some("write notes.md (3 lines)"))).unwrap(),
            "Waiting for you: allow write notes.md (3 lines)? Allow, Allow for this chat, or Deny."
        );
        // A tool that does not describe its call is named.
        assert!(said(&request(None)).unwrap().contains("allow write_file?"));
    }

    #[test]
    fn the_end_of_an_answer_says_how_it_ended() {
        assert_eq!(
            said(&done(TurnStatus::Completed)).unwrap(),
            "The answer is finished."
        );
        assert_eq!(
            said(&done(TurnStatus::Failed)).unwrap(),
            "The answer failed."
        );
    }

    #[test]
    fn text_as_it_streams_is_not_announced() {
        let chunk = Event::Chunk(Chunk {
            content: "Hello".into(),
            parent_id: None,
            depth: 0,
        });
        assert_eq!(said(&chunk), None);
        assert_eq!(
            last_said(&[request(None), chunk, done(TurnStatus::Completed)]).unwrap(),
            "The answer is finished."
        );
    }
}
