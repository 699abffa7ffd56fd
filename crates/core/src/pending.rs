//! Tool calls the model is still writing, as the wire shows them: each gets its id at
//! its first piece (the one its `start` will carry), and a `pending` update with the
//! arguments so far at most every [`PENDING_EVERY`] (the latest pieces shown when the
//! time comes, whether or not more arrive), so a slow local model writing a long file
//! shows it being written without flooding the event stream.

use std::time::Duration;

use tokio::time::Instant;

/// The least time between two `pending` updates of one call.
pub(crate) const PENDING_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug)]
struct Drafted {
    id: String,
    name: String,
    arguments: String,
    shown_at: Option<Instant>,
    /// Pieces came since it was last shown.
    unshown: bool,
}

impl Drafted {
    /// Whether its latest pieces are to be shown at `now`.
    fn due(&self, now: Instant) -> bool {
        self.unshown
            && self
                .shown_at
                .is_none_or(|shown| now.duration_since(shown) >= PENDING_EVERY)
    }

    /// When its unshown pieces fall due after it was last shown.
    fn due_at(&self) -> Option<Instant> {
        match (self.unshown, self.shown_at) {
            (true, Some(shown)) => Some(shown + PENDING_EVERY),
            // Never shown: `take_due` shows it at its first piece.
            _ => None,
        }
    }
}

/// One round's calls being written, by their place in the answer.
#[derive(Debug, Default)]
pub(crate) struct PendingCalls {
    calls: Vec<Option<Drafted>>,
}

/// A `pending` update to send: the call's id, name and arguments so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl PendingCalls {
    /// Adds a piece of the call at `slot`; `claim` names a call the first time it is
    /// seen.
    pub fn piece(
        &mut self,
        slot: usize,
        proposed_id: &str,
        name: &str,
        piece: &str,
        claim: impl FnOnce(&str) -> String,
    ) {
        if self.calls.len() <= slot {
            self.calls.resize_with(slot + 1, || None);
        }
        let call = self.calls[slot].get_or_insert_with(|| Drafted {
            id: claim(proposed_id),
            name: name.to_owned(),
            arguments: String::new(),
            shown_at: None,
            unshown: false,
        });
        call.arguments.push_str(piece);
        call.unshown = true;
    }

    /// The updates due at `now`, each marked shown.
    pub fn take_due(&mut self, now: Instant) -> Vec<Pending> {
        self.calls
            .iter_mut()
            .flatten()
            .filter(|call| call.due(now))
            .map(|call| {
                call.shown_at = Some(now);
                call.unshown = false;
                Pending {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }
            })
            .collect()
    }

    /// When the next update falls due, if any waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.calls
            .iter()
            .flatten()
            .filter_map(Drafted::due_at)
            .min()
    }

    /// The id a finished call at `slot` takes: the one its `pending` updates carried.
    pub fn id_of(&self, slot: usize) -> Option<&str> {
        self.calls.get(slot)?.as_ref().map(|call| call.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_call_is_shown_at_once_then_its_latest_at_most_every_quarter_second() {
        let mut pending = PendingCalls::default();
        let mut claimed = 0;
        let mut claim = |id: &str| {
            claimed += 1;
            format!("{id}#{claimed}")
        };
        let args = |due: Vec<Pending>| -> Vec<String> {
            due.into_iter()
                .map(|p| format!("{} {}", p.id, p.arguments))
                .collect()
        };
        let start = Instant::now();
        pending.piece(0, "c", "write_file", "{\"pa", &mut claim);
        assert_eq!(args(pending.take_due(start)), ["c#1 {\"pa"]);
        assert_eq!(pending.next_due(), None, "nothing new to show");
        pending.piece(0, "", "", "th\":", &mut claim);
        let later = start + Duration::from_millis(100);
        assert!(pending.take_due(later).is_empty(), "too soon");
        // No more pieces come, yet the latest is shown when its time comes.
        assert_eq!(pending.next_due(), Some(start + PENDING_EVERY));
        assert_eq!(
            args(pending.take_due(start + PENDING_EVERY)),
            ["c#1 {\"path\":"]
        );
        // A second call in the same answer gets its own id, claimed once.
        pending.piece(1, "d", "run_command", "{", &mut claim);
        pending.piece(1, "", "", "}", &mut claim);
        assert_eq!(args(pending.take_due(start + PENDING_EVERY)), ["d#2 {}"]);
        assert_eq!(
            (pending.id_of(0), pending.id_of(1), pending.id_of(2)),
            (Some("c#1"), Some("d#2"), None)
        );
    }
}
