//! An answer drawn as it streams, by appending: the blocks of Markdown that no later
//! text can change are drawn once and kept; only the open block (a paragraph, a list,
//! a code block) is drawn again as text arrives. Drawing the whole answer at each
//! piece parsed and laid out all of it again: a long answer cost seconds of CPU.
//!
//! The blocks drawn so far, followed by the open block, read exactly as the whole text
//! drawn at once ([`crate::markdown::to_html`]); the tests hold every prefix of a mixed
//! answer to that.

use pulldown_cmark::{Event, Parser};

use crate::markdown::{options, to_html};

/// The state of one answer being drawn.
#[derive(Debug, Default)]
pub struct Appending {
    /// The text whose blocks are drawn for good (a prefix of every later text).
    settled: String,
    /// Their HTML, one piece per time some settled: a piece is never drawn again.
    pieces: Vec<String>,
    /// Bumped when the text did not extend the last one and drawing started over, so
    /// that a view keyed on it draws its pieces anew.
    generation: u64,
}

/// What to draw now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    pub generation: u64,
    /// How many settled pieces there are ([`Appending::piece`]).
    pub settled: usize,
    /// The open block's HTML.
    pub open: String,
}

impl Appending {
    /// Takes the text so far and returns what to draw. Only the text after the settled
    /// blocks is parsed.
    pub fn update(&mut self, text: &str) -> Drawn {
        if !text.starts_with(self.settled.as_str()) {
            self.settled.clear();
            self.pieces.clear();
            self.generation += 1;
        }
        let rest = &text[self.settled.len()..];
        let done = settled_len(rest);
        if done > 0 {
            self.pieces.push(to_html(&rest[..done]));
            self.settled.push_str(&rest[..done]);
        }
        Drawn {
            generation: self.generation,
            settled: self.pieces.len(),
            open: to_html(&text[self.settled.len()..]),
        }
    }

    /// The HTML of settled piece `index`.
    pub fn piece(&self, index: usize) -> &str {
        self.pieces.get(index).map_or("", String::as_str)
    }
}

/// How much of `text`, from its start, is top-level blocks that later text cannot
/// change: every block before the last one whose first line is whole. (A block is
/// decided by its first line: once a line that starts a new block is complete, the one
/// before it is closed. A line still arriving may yet join it: `-` can grow into a
/// list item, a lazy line can continue a paragraph.)
fn settled_len(text: &str) -> usize {
    let mut depth = 0usize;
    let mut settled = 0;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        let starts_block = match event {
            Event::Start(_) => {
                depth += 1;
                depth == 1
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                false
            }
            // A thematic break is a block with no start or end of its own.
            Event::Rule => depth == 0,
            _ => false,
        };
        if starts_block && text[range.start..].contains('\n') {
            // From the start of its line: an indented code block's range starts after
            // the indent that makes it one.
            settled = text[..range.start].rfind('\n').map_or(0, |at| at + 1);
        }
    }
    settled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer with every kind of block a model writes, and the turns that change
    /// what came before: a setext underline, a lazy line, a list that goes on after a
    /// blank line, a table's delimiter row, a fence closing.
    const ANSWER: &str = "# Plan\n\nFirst a paragraph\nthat goes on lazily.\n\nTitle\n=====\n\n\
        - one\n- two\n\n- three, loose now\n\n1. first\n2. second\n\n> quoted\nlazy quote\n\n\
        | a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\n// greet\nfn main() {\n\n    println!(\"hi\");\n}\n```\n\n\
        ---\n\n    indented code\n\nLast words with **bold** and `code` and [a link](https://example.com).\n";

    /// Feeds `text` in pieces of `size` bytes and checks, at each step, that the
    /// settled pieces and the open block are the whole text drawn at once.
    fn stream(text: &str, size: usize) -> Appending {
        let mut appending = Appending::default();
        let mut end = 0;
        while end < text.len() {
            end = (end + size).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let shown = &text[..end];
            let drawn = appending.update(shown);
            let mut html: String = (0..drawn.settled).map(|i| appending.piece(i)).collect();
            html.push_str(&drawn.open);
            assert_eq!(html, to_html(shown), "after {shown:?}");
        }
        appending
    }

    /// Blocks inside blocks, and blocks that start inside another's reach.
    const NESTED: &str = "1. Step one:\n\n   ```sh\n   cargo test\n   ```\n\n2. Step two\n   - inner\n\n     more of inner\n\n\
        > - quoted item\n>\n> ```\n> quoted code\n> ```\n\n## Heading ##\n<div>raw html</div>\n\n\
        ~~~\nan unclosed fence\n\nwith a blank line\n";

    #[test]
    fn every_prefix_draws_as_the_whole_text_would() {
        for text in [ANSWER, NESTED] {
            for size in [1, 2, 3, 7, 16] {
                stream(text, size);
            }
        }
    }

    #[test]
    fn finished_blocks_settle_and_the_open_one_stays_small() {
        let appending = stream(ANSWER, 5);
        assert!(appending.pieces.len() > 5, "{:?}", appending.pieces.len());
        let open = &ANSWER[appending.settled.len()..];
        assert!(open.starts_with("Last words"), "{open:?}");
    }

    #[test]
    fn a_line_still_arriving_keeps_the_block_before_it_open() {
        let mut appending = Appending::default();
        // `-` may become a third item of the list: the list is not settled.
        let drawn = appending.update("- one\n- two\n-");
        assert_eq!(drawn.settled, 0);
        let drawn = appending.update("- one\n- two\n- three\n\nNext\n");
        assert_eq!(drawn.settled, 1);
        assert_eq!(appending.piece(0), to_html("- one\n- two\n- three\n\n"));
    }

    #[test]
    fn a_text_that_does_not_extend_the_last_starts_over() {
        let mut appending = Appending::default();
        let first = appending.update("One.\n\nTwo.\n\nThree");
        assert_eq!(first.settled, 1);
        let again = appending.update("Other.\n\nText");
        assert_ne!(again.generation, first.generation);
        let html: String = (0..again.settled).map(|i| appending.piece(i)).collect();
        assert_eq!(html + &again.open, to_html("Other.\n\nText"));
    }
}
