//! Degenerate repetition: a small model that writes the same words over and over
//! ("The code word in the file is:" two hundred times, "# \n" until the window is
//! full) is stopped as soon as it plainly does, instead of at its length limit.
//!
//! text so far → every so often, the end of it: the last few bytes looked for a
//! little earlier → each place they occur again is a candidate period → how far back
//! the text repeats with that period → long enough, often enough: degenerate.
//!
//! Tuned so that answers never trip it: lists, tables and code repeat a shape, not the
//! same characters; a run of identical text must be at least [`MIN_RUN`] bytes of one
//! unit repeated [`MIN_REPEATS`] times (see the tests, which run every recorded
//! stream through it).

/// The least repeated text that counts: well past a separator line or a short
/// array of zeros.
const MIN_RUN: usize = 600;
/// The fewest times the unit must come.
const MIN_REPEATS: usize = 8;
/// The longest unit looked for (a repeated paragraph).
const MAX_PERIOD: usize = 1024;
/// How many new bytes come between two looks: a look searches up to a kilobyte, so
/// this keeps it to about four bytes read per byte streamed (about 2% of the stream's
/// cost, measured in instructions), and a loop is caught within 256 bytes of the run
/// being long enough.
const EVERY: usize = 256;
/// The end of the text looked for earlier on.
const ANCHOR: usize = 16;
/// How many earlier places of the anchor are tried, nearest first.
const CANDIDATES: usize = 4;

/// Watches one stream of text (an answer, or its reasoning).
#[derive(Debug, Default)]
pub struct Repetition {
    /// The length of the text when it was last looked at.
    looked_at: usize,
}

impl Repetition {
    /// Whether `text` (all of it so far) now ends in degenerate repetition. Cheap:
    /// it looks only every [`EVERY`] bytes.
    pub fn degenerate(&mut self, text: &str) -> bool {
        if text.len() < MIN_RUN || text.len() < self.looked_at + EVERY {
            return false;
        }
        self.looked_at = text.len();
        repeated_tail(text.as_bytes()).is_some()
    }
}

/// The period and the length of the run of text at the end of `text` made of one
/// unit repeated, when that run is degenerate.
fn repeated_tail(text: &[u8]) -> Option<(usize, usize)> {
    let end = text.len();
    let anchor = &text[end - ANCHOR..];
    let window_start = end.saturating_sub(MAX_PERIOD + ANCHOR);
    let mut before = end - ANCHOR;
    for _ in 0..CANDIDATES {
        let at =
            memchr::memmem::rfind(&text[window_start..before + ANCHOR - 1], anchor)? + window_start;
        let period = end - ANCHOR - at;
        let run = run_length(text, period);
        if run >= MIN_RUN && run / period >= MIN_REPEATS {
            return Some((period, run));
        }
        before = at;
    }
    None
}

/// How many bytes at the end of `text` repeat with `period`: the unit itself, and
/// every byte before it that equals the byte `period` further on.
fn run_length(text: &[u8], period: usize) -> usize {
    let end = text.len();
    let same = text[..end - period]
        .iter()
        .rev()
        .zip(text[period..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    same + period
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `piece` bytes, as a stream does; where it trips.
    fn trips(text: &str, piece: usize) -> Option<usize> {
        let mut watch = Repetition::default();
        let mut so_far = String::new();
        for chunk in text.as_bytes().chunks(piece) {
            so_far.push_str(std::str::from_utf8(chunk).unwrap());
            if watch.degenerate(&so_far) {
                return Some(so_far.len());
            }
        }
        None
    }

    #[test]
    fn a_sentence_said_over_and_over_is_stopped_early() {
        let loop_text = format!(
            "The file holds one line.\n{}",
            "The code word in the file is: ".repeat(200)
        );
        let at = trips(&loop_text, 7).expect("it trips");
        assert!(at < 1400, "stopped after {at} of {} bytes", loop_text.len());
    }

    #[test]
    fn a_short_unit_repeated_is_stopped_too() {
        let loop_text = format!("In small.txt:\n\n```\n#\n{}", "# \n".repeat(900));
        assert!(trips(&loop_text, 3).is_some());
        let paragraph = "A long paragraph about the garden path, which runs past the wall and \
                         ends at the old gate by the orchard, where the apples grow.\n\n";
        assert!(trips(&format!("Intro.\n\n{}", paragraph.repeat(12)), 11).is_some());
    }

    #[test]
    fn answers_that_repeat_a_shape_are_left_alone() {
        let table: String = std::iter::once("| n | square | name |\n|---|---|---|\n".to_owned())
            .chain((1..=300).map(|n| format!("| {n} | {} | item number {n} |\n", n * n)))
            .collect();
        let list: String = (1..=400)
            .map(|n| format!("- Step {n}: do the thing.\n"))
            .collect();
        let code: String = (0..300)
            .map(|n| format!("    assert_eq!(parse(\"{n}\"), Ok({n}));\n"))
            .collect();
        let zeros = format!("static TABLE: [u8; 64] = [{}];\n", "0, ".repeat(64));
        let rule = format!("{}\nTitle\n{}\n", "=".repeat(100), "=".repeat(100));
        let prose = "It was the best of times, it was the worst of times, it was the age of \
                     wisdom, it was the age of foolishness. "
            .repeat(3);
        for (name, text) in [
            ("table", table),
            ("list", list),
            ("code", code),
            ("zeros", zeros),
            ("rule", rule),
            ("prose", prose),
        ] {
            assert_eq!(trips(&text, 5), None, "{name} tripped");
        }
    }

    /// The text and the reasoning of a recorded stream, delta by delta, in either
    /// dialect (SSE `data:` lines, or one JSON object a line).
    fn recorded_deltas(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        let (mut text, mut reasoning) = (Vec::new(), Vec::new());
        for line in String::from_utf8_lossy(bytes).lines() {
            let payload = line.strip_prefix("data: ").unwrap_or(line);
            let Ok(value) = serde_json::from_str::<serde_json::Value>(payload) else {
                continue;
            };
            let deltas = [&value["choices"][0]["delta"], &value["message"], &value];
            let piece = |delta: &serde_json::Value, key: &str| {
                delta
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            for delta in deltas {
                text.extend(piece(delta, "content"));
                for key in ["reasoning_content", "reasoning", "thinking"] {
                    reasoning.extend(piece(delta, key));
                }
            }
        }
        (text, reasoning)
    }

    fn trips_on(deltas: &[String]) -> Option<usize> {
        let mut watch = Repetition::default();
        let mut so_far = String::new();
        for delta in deltas {
            so_far.push_str(delta);
            if watch.degenerate(&so_far) {
                return Some(so_far.len());
            }
        }
        None
    }

    #[test]
    fn every_recorded_stream_passes_but_the_real_runaway() {
        let root = cairn_testkit::fixture_dir();
        let mut streams = 0;
        for dialect in ["openai", "ollama"] {
            for entry in std::fs::read_dir(root.join(dialect)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if !(name.ends_with(".sse") || name.ends_with(".ndjson")) {
                    continue;
                }
                let (text, reasoning) = recorded_deltas(&std::fs::read(&path).unwrap());
                streams += 1;
                if name == "llamacpp_smollm2_runaway.sse" {
                    let total: usize = text.iter().map(String::len).sum();
                    let at = trips_on(&text).expect("the runaway trips");
                    assert!(at * 10 < total * 9, "stopped at {at} of {total} bytes");
                    continue;
                }
                assert_eq!(trips_on(&text), None, "{name}: its text tripped");
                assert_eq!(trips_on(&reasoning), None, "{name}: its reasoning tripped");
            }
        }
        assert!(streams > 20, "{streams} streams read");
    }

    #[test]
    fn a_unit_is_found_however_the_stream_is_cut() {
        let loop_text = "ab3 xy ".repeat(400);
        for piece in [1, 2, 13, 64, 500] {
            assert!(trips(&loop_text, piece).is_some(), "pieces of {piece}");
        }
        assert_eq!(repeated_tail(loop_text.as_bytes()).map(|(p, _)| p), Some(7));
    }
}
