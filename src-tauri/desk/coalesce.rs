//! Streamed text joined into fewer, larger pieces on its way to the window. Each
//! message over a channel costs the webview a script to evaluate, and at a fast local
//! model's pace (a piece every few milliseconds) that, not drawing, was most of what a
//! long answer cost it: seconds of CPU. Pieces wait at most [`WINDOW`], so text still
//! arrives in step with the screen; any other event sends the waiting text first, so
//! the window sees the stream in its order.

use std::time::Duration;

use cairn_protocol::Event;

/// The longest a piece of text waits for the next to join it: under two frames.
pub const WINDOW: Duration = Duration::from_millis(25);

/// The text waiting to be sent, as one event.
#[derive(Debug, Default)]
pub struct Coalesce {
    waiting: Option<Event>,
}

impl Coalesce {
    /// Whether text is waiting (then it is sent within [`WINDOW`] of its arrival).
    pub fn holding(&self) -> bool {
        self.waiting.is_some()
    }

    /// Takes the next event of the stream; what to send now, in order.
    pub fn push(&mut self, event: Event) -> Vec<Event> {
        if let Some(waiting) = &mut self.waiting
            && join(waiting, &event)
        {
            return Vec::new();
        }
        let mut now: Vec<Event> = self.waiting.take().into_iter().collect();
        if matches!(event, Event::Chunk(_) | Event::Reasoning(_)) {
            self.waiting = Some(event);
        } else {
            now.push(event);
        }
        now
    }

    /// The text waiting, to send now.
    pub fn flush(&mut self) -> Option<Event> {
        self.waiting.take()
    }
}

/// Appends `next` to `waiting` when both are text of the same kind at the same place.
fn join(waiting: &mut Event, next: &Event) -> bool {
    match (waiting, next) {
        (Event::Chunk(held), Event::Chunk(more))
            if held.parent_id == more.parent_id && held.depth == more.depth =>
        {
            held.content.push_str(&more.content);
            true
        }
        (Event::Reasoning(held), Event::Reasoning(more))
            if held.parent_id == more.parent_id && held.depth == more.depth =>
        {
            held.content.push_str(&more.content);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::{AgentState, AgentStateKind, Chunk, Reasoning};

    fn chunk(text: &str, parent: Option<&str>) -> Event {
        Event::Chunk(Chunk {
            content: text.into(),
            parent_id: parent.map(str::to_owned),
            depth: u32::from(parent.is_some()),
        })
    }

    fn thinking() -> Event {
        Event::AgentState(AgentState {
            state: AgentStateKind::Thinking,
        })
    }

    #[test]
    fn pieces_of_text_at_one_place_are_sent_as_one() {
        let mut coalesce = Coalesce::default();
        for piece in ["Hel", "lo", ", world"] {
            assert_eq!(coalesce.push(chunk(piece, None)), Vec::new());
        }
        assert!(coalesce.holding());
        assert_eq!(coalesce.flush(), Some(chunk("Hello, world", None)));
        assert!(!coalesce.holding());
    }

    #[test]
    fn any_other_event_sends_the_waiting_text_first() {
        let mut coalesce = Coalesce::default();
        coalesce.push(chunk("a", None));
        coalesce.push(chunk("b", None));
        assert_eq!(
            coalesce.push(thinking()),
            vec![chunk("ab", None), thinking()]
        );
        assert!(!coalesce.holding());
        // Text in a subtask is not joined to the root's, nor reasoning to text.
        coalesce.push(chunk("root", None));
        assert_eq!(
            coalesce.push(chunk("sub", Some("s1"))),
            vec![chunk("root", None)]
        );
        let thought = Event::Reasoning(Reasoning {
            content: "hm".into(),
            parent_id: Some("s1".into()),
            depth: 1,
        });
        assert_eq!(
            coalesce.push(thought.clone()),
            vec![chunk("sub", Some("s1"))]
        );
        assert_eq!(coalesce.flush(), Some(thought));
    }
}
