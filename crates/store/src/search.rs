//! Full-text search over every message (SQLite FTS5).

use cairn_protocol::{Role, SearchHit};
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

impl Store {
    /// Messages matching `text`, best first.
    pub async fn search(&self, text: &str, limit: u32) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(
            "SELECT m.id, m.thread_id, m.role, t.title, \
                    snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet \
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
                Ok(SearchHit {
                    thread_id: row.try_get("thread_id")?,
                    thread_title: row.try_get("title")?,
                    message_id: row.try_get("id")?,
                    role: if role == "user" {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    snippet: row.try_get("snippet")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(|err| self.err(err))
    }
}

#[cfg(test)]
mod tests {
    use super::fts_query;

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
