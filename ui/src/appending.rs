//! An answer drawn as it streams, by appending: the blocks of Markdown that no later
//! text can change are drawn once and kept; only the open block is drawn again as
//! text arrives. A code block being written is itself drawn by appending: its lines
//! that can no longer change colour are coloured once and kept, and only the lines
//! still open are drawn again. Drawing the whole answer at each piece parsed, coloured
//! and laid out all of it again: a long answer cost seconds of CPU.
//!
//! The pieces drawn so far, followed by the open block, read exactly as the whole text
//! drawn at once ([`crate::markdown::to_html`]); the tests hold every prefix of mixed
//! answers to that.

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

use crate::highlight;
use crate::markdown::{CodeShape, options, to_html};

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
    /// The open block, when it is a code block still being written.
    code: Option<OpenCode>,
}

/// A code block being written: the lines of its body coloured for good.
#[derive(Debug)]
struct OpenCode {
    /// Where the block starts in the text (the settled length when it opened).
    at: usize,
    language: String,
    /// How much of its body is coloured for good.
    done: usize,
    pieces: Vec<String>,
}

/// What to draw now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    pub generation: u64,
    /// How many settled pieces there are ([`Appending::piece`]).
    pub settled: usize,
    /// The open block's HTML, when it is not a code block being written.
    pub open: String,
    pub code: Option<CodeDrawn>,
}

/// A code block being written, as its parts: the pieces of its code coloured for good
/// ([`Appending::code_piece`]) and the lines still open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeDrawn {
    /// Which block this is: a new one is drawn anew.
    pub at: usize,
    pub shape: CodeShape,
    pub settled: usize,
    pub open: String,
}

impl Appending {
    /// Takes the text so far and returns what to draw. Only the text after the settled
    /// blocks is parsed, and in a code block only its open lines are coloured.
    pub fn update(&mut self, text: &str) -> Drawn {
        if !text.starts_with(self.settled.as_str()) {
            self.settled.clear();
            self.pieces.clear();
            self.code = None;
            self.generation += 1;
        }
        let rest = &text[self.settled.len()..];
        let done = settled_len(rest);
        if done > 0 {
            self.pieces.push(to_html(&rest[..done]));
            self.settled.push_str(&rest[..done]);
        }
        let open = &text[self.settled.len()..];
        let code = self.open_code(open);
        Drawn {
            generation: self.generation,
            settled: self.pieces.len(),
            open: if code.is_some() {
                String::new()
            } else {
                to_html(open)
            },
            code,
        }
    }

    /// The HTML of settled piece `index`.
    pub fn piece(&self, index: usize) -> &str {
        self.pieces.get(index).map_or("", String::as_str)
    }

    /// The HTML of piece `index` of the code block being written.
    pub fn code_piece(&self, index: usize) -> &str {
        self.code
            .as_ref()
            .and_then(|code| code.pieces.get(index))
            .map_or("", String::as_str)
    }

    /// The open block drawn by appending, if it is a code block still being written.
    fn open_code(&mut self, open: &str) -> Option<CodeDrawn> {
        let at = self.settled.len();
        let Some((language, body)) = unclosed_code(open) else {
            self.code = None;
            return None;
        };
        let code = match &mut self.code {
            Some(code) if code.at == at && code.language == language => code,
            _ => self.code.insert(OpenCode {
                at,
                language,
                done: 0,
                pieces: Vec::new(),
            }),
        };
        // Lines coloured for good stay so: the body only grows while the block is open.
        let fresh = body.get(code.done..)?;
        let more = highlight::settled_len(&code.language, fresh);
        if more > 0 {
            code.pieces
                .push(highlight::to_html(&code.language, &fresh[..more]));
            code.done += more;
        }
        Some(CodeDrawn {
            at,
            shape: CodeShape::of(&code.language),
            settled: code.pieces.len(),
            open: highlight::to_html(&code.language, &body[code.done..]),
        })
    }
}

/// The language and body of `open` when it is one fenced code block not yet closed,
/// its opening line whole: the body as the finished block will hold it.
fn unclosed_code(open: &str) -> Option<(String, String)> {
    // A fence at the start of its line only: an indented one has its indent taken off
    // every line, which this does not follow.
    let fence = open
        .as_bytes()
        .first()
        .filter(|c| matches!(c, b'`' | b'~'))?;
    let fence_len = open.bytes().take_while(|c| c == fence).count();
    let (first, lines) = open.split_once('\n')?;
    let closes = |line: &str| {
        let line = line.trim_end();
        let stripped = line.trim_start_matches(' ');
        line.len() - stripped.len() <= 3
            && stripped.len() >= fence_len
            && stripped.bytes().all(|c| c == *fence)
    };
    if fence_len < 3 || lines.split('\n').any(closes) {
        return None;
    }
    let mut events = Parser::new_ext(open, options());
    let Some(Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))) = events.next() else {
        return None;
    };
    debug_assert!(first.starts_with(char::from(*fence)));
    let mut body = String::new();
    for event in events {
        match event {
            Event::Text(text) => body.push_str(&text),
            // The parser ends an unclosed block where the text ends.
            Event::End(TagEnd::CodeBlock) => break,
            _ => return None,
        }
    }
    Some((info.trim().to_owned(), body))
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

    /// The page the view builds from `drawn`, as one string: the settled pieces, then
    /// the open block (a code block being written from its parts, as the view builds
    /// it, without the wrappers that take no box).
    fn assembled(appending: &Appending, drawn: &Drawn) -> String {
        let mut html: String = (0..drawn.settled).map(|i| appending.piece(i)).collect();
        match &drawn.code {
            None => html.push_str(&drawn.open),
            Some(code) => {
                html.push_str("<div class=\"code-block\">");
                html.push_str(&code.shape.head);
                html.push_str("<pre><code");
                if let Some(class) = &code.shape.class {
                    html.push_str(&format!(" class=\"{class}\""));
                }
                html.push('>');
                for index in 0..code.settled {
                    html.push_str(appending.code_piece(index));
                }
                html.push_str(&code.open);
                html.push_str("</code></pre></div>\n");
            }
        }
        html
    }

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
            assert_eq!(
                assembled(&appending, &drawn),
                to_html(shown),
                "after {shown:?}"
            );
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

    /// Code whose tokens run over lines: a block comment, a string, a lifetime, and a
    /// Python block with a triple-quoted string; a diff; a block with no language.
    const CODE: &str = "Look:\n\n```rust\n/* one\ntwo */ fn main() {\n    let s = \"a\nb\";\n    let r: &'a str = x; // note\n}\n```\n\n\
        ```python\ndef f():\n    \"\"\"doc\n    more\"\"\"\n    return 1  # one\n```\n\n\
        ```diff\n-old\n+new\n```\n\n```\nplain <b>text</b>\n```\n\nDone.\n";

    #[test]
    fn code_being_written_keeps_its_coloured_lines_and_draws_as_the_whole() {
        for size in [1, 2, 5, 11] {
            stream(CODE, size);
        }
        // A long block: its lines are coloured once, not at every piece.
        let mut long = String::from("```rust\n");
        for n in 0..50 {
            long.push_str(&format!("let n{n} = {n}; // line {n}\n"));
        }
        let mut appending = Appending::default();
        let drawn = appending.update(&long);
        let code = drawn.code.expect("an open code block");
        assert_eq!(code.settled, 1);
        assert!(
            code.open.is_empty(),
            "every whole line is kept: {:?}",
            code.open
        );
        let drawn = appending.update(&format!("{long}let last"));
        let code = drawn.code.expect("still open");
        assert_eq!(
            code.settled, 1,
            "nothing new settled: the last line is open"
        );
        assert!(code.open.contains("last"), "{:?}", code.open);
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
