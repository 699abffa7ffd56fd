//! A turn's streamed pieces, held for the next frame. A model can stream pieces of
//! text faster than the screen redraws, and each piece applied on its own redraws the
//! whole answer so far (its Markdown parsed, its code coloured, its layout done
//! again). Held until the next animation frame and applied together, they cost one
//! redraw a frame, however fast they come. Every other event (a call, an approval,
//! the end) lets the pieces waiting go first, so the view sees the stream in order.

use cairn_protocol::Event;

/// What the view does with an event just taken in.
#[derive(Debug, PartialEq)]
pub enum Take {
    /// Held for the next frame; `ask_frame` when no frame is asked for yet.
    Held { ask_frame: bool },
    /// Apply these now, in this order: the pieces that were waiting, then the event.
    Apply(Vec<Event>),
}

/// The pieces waiting for a frame.
#[derive(Debug, Default)]
pub struct Pieces {
    waiting: Vec<Event>,
    frame_asked: bool,
}

impl Pieces {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event of the stream in.
    pub fn take(&mut self, event: Event) -> Take {
        if matches!(event, Event::Chunk(_) | Event::Reasoning(_)) {
            self.waiting.push(event);
            let ask_frame = !self.frame_asked;
            self.frame_asked = true;
            return Take::Held { ask_frame };
        }
        let mut now = std::mem::take(&mut self.waiting);
        now.push(event);
        Take::Apply(now)
    }

    /// The frame asked for has come: the pieces to apply before it is drawn.
    pub fn frame(&mut self) -> Vec<Event> {
        self.frame_asked = false;
        std::mem::take(&mut self.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::{Chunk, Reasoning, ToolCallStatus, ToolCallUpdate};

    fn piece(text: &str) -> Event {
        Event::Chunk(Chunk {
            content: text.into(),
            parent_id: None,
            depth: 0,
        })
    }

    fn thought(text: &str) -> Event {
        Event::Reasoning(Reasoning {
            content: text.into(),
            parent_id: None,
            depth: 0,
        })
    }

    fn call() -> Event {
        Event::ToolCallUpdate(ToolCallUpdate::new(
            "c1",
            "read_file",
            None,
            0,
            ToolCallStatus::Start,
        ))
    }

    #[test]
    fn pieces_wait_for_one_frame_and_go_together() {
        let mut pieces = Pieces::new();
        assert_eq!(pieces.take(thought("hm")), Take::Held { ask_frame: true });
        assert_eq!(pieces.take(piece("a")), Take::Held { ask_frame: false });
        assert_eq!(pieces.take(piece("b")), Take::Held { ask_frame: false });
        assert_eq!(pieces.frame(), [thought("hm"), piece("a"), piece("b")]);
        assert!(pieces.frame().is_empty(), "each piece is applied once");
        assert_eq!(
            pieces.take(piece("c")),
            Take::Held { ask_frame: true },
            "the next piece asks for the next frame"
        );
    }

    #[test]
    fn any_other_event_lets_the_waiting_pieces_go_first() {
        let mut pieces = Pieces::new();
        pieces.take(piece("Let me look."));
        assert_eq!(
            pieces.take(call()),
            Take::Apply(vec![piece("Let me look."), call()])
        );
        assert!(pieces.frame().is_empty(), "nothing is applied twice");
        assert_eq!(pieces.take(call()), Take::Apply(vec![call()]));
    }
}
