//! Full-text search over every message (SQLite FTS5).

use cairn_protocol::{Role, SearchHit, SnippetPart};
use sqlx::Row;

use crate::{Store, StoreError};

/// The user's words as an FTS5 query: every word must appear, the last one as a
/// prefix (search as you type). Words are quoted, so no input is a syntax error.
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let (last, rest) = words.split_last()?;
    let mut query: Vec<String> = rest.iter().map(|word| format!("\"{word}\"")).collect();
    query.push(format!("\"{last}\"*"));
    Some(query.join(" "))
}

/// Where FTS5 marks a matching word in a snippet: control characters no message text
/// is expected to hold, so Markdown's own brackets cannot be taken for them.
const HIT_START: char = '\u{1}';
const HIT_END: char = '\u{2}';

/// A marked snippet as plain text in pieces: the hits apart, Markdown's marks out.
fn plain_parts(snippet: &str) -> Vec<SnippetPart> {
    let mut parts = Vec::new();
    let mut rest = snippet;
    while !rest.is_empty() {
        let (text, hit, after) = match rest.split_once(HIT_START) {
            Some((before, _)) if !before.is_empty() => (before, false, &rest[before.len()..]),
            Some((_, marked)) => {
                let (word, after) = marked.split_once(HIT_END).unwrap_or((marked, ""));
                (word, true, after)
            }
            None => (rest, false, ""),
        };
        let mut text = plain(text);
        if parts.is_empty() {
            text = text.trim_start().to_owned();
        }
        if !text.is_empty() {
            parts.push(SnippetPart { text, hit });
        }
        rest = after;
    }
    parts
}

/// Text without Markdown's marks: `[label](url)` as its label, no emphasis, code,
/// heading, quote or list marks, whitespace as single spaces.
fn plain(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut chars = markdown.chars().peekable();
    let mut skipping_url = false;
    while let Some(c) = chars.next() {
        match c {
            _ if skipping_url => skipping_url = c != ')',
            ']' if chars.peek() == Some(&'(') => {
                chars.next();
                skipping_url = true;
            }
            '[' | ']' | '*' | '`' | '~' | '#' | '>' => {}
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    // List marks at a line's start became "- " after the whitespace fold.
    out.replace(" - ", " ").trim_start_matches("- ").to_owned()
}

impl Store {
    /// Messages matching `text`, best first.
    pub async fn search(&self, text: &str, limit: u32) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(
            "SELECT m.id, m.thread_id, m.role, t.title, \
                    snippet(messages_fts, 0, char(1), char(2), '…', 12) AS snippet \
             FROM messages_fts \
             JOIN messages m ON m.rowid = messages_fts.rowid \
             JOIN threads t ON t.id = m.thread_id \
             WHERE messages_fts MATCH ? \
             ORDER BY rank LIMIT ?",
        )
        .bind(query)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        rows.iter()
            .map(|row| {
                let role: String = row.try_get("role")?;
                let snippet: String = row.try_get("snippet")?;
                Ok(SearchHit {
                    thread_id: row.try_get("thread_id")?,
                    thread_title: row.try_get("title")?,
                    message_id: row.try_get("id")?,
                    role: if role == "user" {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    snippet: snippet.replace(HIT_START, "[").replace(HIT_END, "]"),
                    parts: plain_parts(&snippet),
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(|err| self.err(err))
    }
}

#[cfg(test)]
mod tests {
    use super::{HIT_END, HIT_START, fts_query, plain_parts};
    use cairn_protocol::SnippetPart;

    #[test]
    fn a_snippet_reads_as_plain_text_with_its_hits_apart() {
        let snippet = format!(
            "## Notes\n- see **the {HIT_START}cairn{HIT_END}** [guide](https://x.org/a) and `code`…"
        );
        let part = |text: &str, hit| SnippetPart {
            text: text.into(),
            hit,
        };
        assert_eq!(
            plain_parts(&snippet),
            [
                part("Notes see the ", false),
                part("cairn", true),
                part(" guide and code…", false),
            ]
        );
        assert_eq!(plain_parts(""), []);
        assert_eq!(
            plain_parts(&format!("{HIT_START}word{HIT_END}")),
            [part("word", true)]
        );
    }

    #[test]
    fn any_input_becomes_a_safe_query() {
        assert_eq!(
            fts_query("cargo test").as_deref(),
            Some("\"cargo\" \"test\"*")
        );
        assert_eq!(
            fts_query("\"AND\" OR (x* -y").as_deref(),
            Some("\"AND\" \"OR\" \"x\" \"y\"*")
        );
        assert_eq!(fts_query("  --  "), None);
        assert_eq!(
            fts_query("naïve café").as_deref(),
            Some("\"naïve\" \"café\"*")
        );
    }
}
