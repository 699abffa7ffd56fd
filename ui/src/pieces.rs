//! A turn's streamed pieces, held for the next draw. A model can stream pieces of
//! text faster than the screen redraws, and each piece applied on its own redraws the
//! answer's open block (its Markdown parsed, its code coloured, its layout and paint
//! done again). Held and applied together, they cost one redraw a frame. A frame is
//! not enough of a limit on its own: where nothing paces the display (a virtual
//! display, some software compositors) WebKit runs a frame as soon as one is asked
//! for, and measured here every piece got its own. So a draw also waits until
//! [`GAP_MS`] have passed since the last. Every other event (a call, an approval, the
//! end) lets the pieces waiting go first, so the view sees the stream in order.

use cairn_protocol::Event;

/// The least time between two draws of streamed pieces: 20 a second. Text read as it
/// arrives looks as live at 20 updates a second as at 60, and every draw is paid for
/// in layout and paint. Measured on a two-core machine without a GPU (README
/// "Where the time went"), a long answer cost the web process 7.0 s of CPU drawn every
/// 14 ms and 5.6–6.1 s every 50 ms, composited; without compositing, 3.8 and 1.6 s.
pub const GAP_MS: f64 = 50.0;

/// What the view does with an event just taken in.
#[derive(Debug, PartialEq)]
pub enum Take {
    /// Held for a later draw. `wake_in_ms` when no draw is asked for yet: ask for the
    /// next frame after that many milliseconds (0: the next frame).
    Held { wake_in_ms: Option<f64> },
    /// Apply these now, in this order: the pieces that were waiting, then the event.
    Apply(Vec<Event>),
}

/// The pieces waiting to be drawn.
#[derive(Debug)]
pub struct Pieces {
    waiting: Vec<Event>,
    draw_asked: bool,
    /// When pieces were last drawn (ms), to keep draws [`GAP_MS`] apart.
    last_draw: f64,
}

impl Default for Pieces {
    fn default() -> Self {
        Self {
            waiting: Vec::new(),
            draw_asked: false,
            last_draw: f64::NEG_INFINITY,
        }
    }
}

impl Pieces {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event of the stream in, at `now` (ms).
    pub fn take(&mut self, event: Event, now: f64) -> Take {
        if matches!(event, Event::Chunk(_) | Event::Reasoning(_)) {
            self.waiting.push(event);
            if self.draw_asked {
                return Take::Held { wake_in_ms: None };
            }
            self.draw_asked = true;
            let wake_in_ms = (self.last_draw + GAP_MS - now).max(0.0);
            return Take::Held {
                wake_in_ms: Some(wake_in_ms),
            };
        }
        let mut now_events = std::mem::take(&mut self.waiting);
        now_events.push(event);
        Take::Apply(now_events)
    }

    /// The draw asked for has come, at `now` (ms): the pieces to apply before it.
    pub fn draw(&mut self, now: f64) -> Vec<Event> {
        self.draw_asked = false;
        self.last_draw = now;
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
    fn pieces_wait_for_one_draw_and_go_together() {
        let mut pieces = Pieces::new();
        assert_eq!(
            pieces.take(thought("hm"), 0.0),
            Take::Held {
                wake_in_ms: Some(0.0)
            },
            "the first piece is drawn on the next frame"
        );
        assert_eq!(
            pieces.take(piece("a"), 1.0),
            Take::Held { wake_in_ms: None }
        );
        assert_eq!(
            pieces.take(piece("b"), 2.0),
            Take::Held { wake_in_ms: None }
        );
        assert_eq!(pieces.draw(3.0), [thought("hm"), piece("a"), piece("b")]);
        assert!(pieces.draw(4.0).is_empty(), "each piece is applied once");
    }

    #[test]
    fn draws_keep_their_gap_however_fast_frames_come() {
        let mut pieces = Pieces::new();
        pieces.take(piece("a"), 0.0);
        pieces.draw(0.0);
        // 2 ms later: the next draw waits out the rest of the gap.
        assert_eq!(
            pieces.take(piece("b"), 2.0),
            Take::Held {
                wake_in_ms: Some(GAP_MS - 2.0)
            }
        );
        pieces.draw(GAP_MS);
        // Long after: the next frame will do.
        assert_eq!(
            pieces.take(piece("c"), 100.0),
            Take::Held {
                wake_in_ms: Some(0.0)
            }
        );
    }

    #[test]
    fn any_other_event_lets_the_waiting_pieces_go_first() {
        let mut pieces = Pieces::new();
        pieces.take(piece("Let me look."), 0.0);
        assert_eq!(
            pieces.take(call(), 1.0),
            Take::Apply(vec![piece("Let me look."), call()])
        );
        assert!(pieces.draw(2.0).is_empty(), "nothing is applied twice");
        assert_eq!(pieces.take(call(), 3.0), Take::Apply(vec![call()]));
    }
}
