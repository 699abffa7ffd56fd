//! A thread out of the database and back: JSON (complete, with execution trees and
//! replay history) and Markdown (for people).

use std::fmt::Write;

use cairn_protocol::{
    ChatMessage, ExecutionTree, ExecutionTreeNode, MessageStatus, MessageView, Piece, Role,
    ThreadInfo, pieces,
};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::{Store, StoreError};

/// A whole thread, as `cairn threads export --format json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadExport {
    /// 1 for this shape.
    pub version: u32,
    pub thread: ThreadInfo,
    pub messages: Vec<ExportedMessage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedMessage {
    #[serde(flatten)]
    pub message: MessageView,
    /// What the model saw of this message, so an imported thread replays the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay: Vec<ChatMessage>,
}

impl Store {
    pub async fn export_json(&self, thread_id: &str) -> Result<ThreadExport, StoreError> {
        let thread = self.thread(thread_id).await?;
        let views = self.messages(thread_id).await?;
        let rows = sqlx::query("SELECT replay FROM messages WHERE thread_id = ? ORDER BY seq")
            .bind(thread_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        let mut messages = Vec::with_capacity(views.len());
        for (message, row) in views.into_iter().zip(rows) {
            let replay: Option<String> = row.try_get("replay").map_err(|err| self.err(err))?;
            let replay = match replay {
                Some(json) => serde_json::from_str(&json).map_err(|err| {
                    StoreError::Invalid(format!("a stored message cannot be exported: {err}"))
                })?,
                None => Vec::new(),
            };
            messages.push(ExportedMessage { message, replay });
        }
        Ok(ThreadExport {
            version: 1,
            thread,
            messages,
        })
    }

    /// Brings an exported thread in, ids and all. Refuses a thread that already exists.
    pub async fn import(&self, export: &ThreadExport) -> Result<ThreadInfo, StoreError> {
        if export.version != 1 {
            return Err(StoreError::Invalid(format!(
                "this export is version {}; this Cairn reads version 1",
                export.version
            )));
        }
        let thread = &export.thread;
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT INTO threads (id, title, mode, workspace, dialect, base_url, model, agent, routes, \
             created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&thread.id)
        .bind(&thread.title)
        .bind(thread.mode.as_str())
        .bind(&thread.workspace)
        .bind(&thread.dialect)
        .bind(&thread.base_url)
        .bind(&thread.model)
        .bind(&thread.agent)
        .bind(thread.routes)
        .bind(thread.created_at)
        .bind(thread.updated_at)
        .execute(&mut *tx)
        .await
        .map_err(|err| match self.err(err) {
            StoreError::Database { detail, .. } if detail.contains("UNIQUE") => {
                StoreError::Invalid(format!("thread `{}` is already here", thread.id))
            }
            other => other,
        })?;
        for (seq, exported) in export.messages.iter().enumerate() {
            let m = &exported.message;
            let encode = |value: Result<String, serde_json::Error>| {
                value
                    .map_err(|err| StoreError::Invalid(format!("cannot encode the message: {err}")))
            };
            let replay = (!exported.replay.is_empty())
                .then(|| encode(serde_json::to_string(&exported.replay)))
                .transpose()?;
            let tree = m
                .execution_tree
                .as_ref()
                .map(|t| encode(serde_json::to_string(t)))
                .transpose()?;
            let usage = m
                .usage
                .as_ref()
                .map(|u| encode(serde_json::to_string(u)))
                .transpose()?;
            let handover = m
                .handover
                .as_ref()
                .map(|h| encode(serde_json::to_string(h)))
                .transpose()?;
            sqlx::query(
                "INSERT INTO messages (id, thread_id, seq, role, content, reasoning, replay, execution_tree, \
                 usage, status, error, synthetic, handover, created_at, updated_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&m.id)
            .bind(&thread.id)
            .bind(i64::try_from(seq).unwrap_or(i64::MAX) + 1)
            .bind(m.role.as_str())
            .bind(&m.content)
            .bind(&m.reasoning)
            .bind(replay)
            .bind(tree)
            .bind(usage)
            .bind(m.status.as_str())
            .bind(&m.error)
            .bind(m.synthetic)
            .bind(handover)
            .bind(m.created_at)
            .bind(m.updated_at)
            .execute(&mut *tx)
            .await
            .map_err(|err| self.err(err))?;
        }
        tx.commit().await.map_err(|err| self.err(err))?;
        self.thread(&thread.id).await
    }

    pub async fn export_markdown(&self, thread_id: &str) -> Result<String, StoreError> {
        let export = self.export_json(thread_id).await?;
        Ok(markdown(&export))
    }
}

/// The thread as a Markdown document.
pub fn markdown(export: &ThreadExport) -> String {
    let thread = &export.thread;
    let mut out = format!("# {}\n\n", thread.title);
    let mut facts = vec![format!("mode: {}", thread.mode)];
    if let Some(model) = &thread.model {
        facts.push(format!("model: {model}"));
    }
    if let Some(workspace) = &thread.workspace {
        facts.push(format!("workspace: `{workspace}`"));
    }
    let _ = writeln!(out, "_{}_\n", facts.join(" · "));
    for exported in &export.messages {
        let message = &exported.message;
        match (&message.handover, message.role, message.synthetic) {
            (Some(handover), ..) => {
                let _ = write!(out, "---\n\n_{} → {}", handover.from, handover.to);
                if let Some(reason) = &handover.reason {
                    let _ = write!(out, ": {reason}");
                }
                out.push_str("_\n\n## Cairn (for the next agent)\n\n");
            }
            (None, Role::User, true) => out.push_str("## Cairn (for the agent)\n\n"),
            (None, Role::User, false) => out.push_str("## You\n\n"),
            (None, Role::Assistant, _) => out.push_str("## Cairn\n\n"),
        }
        if let Some(reasoning) = message.reasoning.as_deref().filter(|r| !r.is_empty()) {
            let _ = writeln!(
                out,
                "<details><summary>Reasoning</summary>\n\n{}\n\n</details>\n",
                reasoning.trim()
            );
        }
        // A question Cairn wrote for the user ("Run plan p1") reads as the window
        // showed it; what the model read follows, folded.
        if let Some(shown) = message.shown.as_deref() {
            let _ = writeln!(
                out,
                "{shown}\n\n<details><summary>What the agent read</summary>\n\n{}\n\n</details>\n",
                message.content.trim()
            );
            continue;
        }
        answer_level(
            &mut out,
            message.execution_tree.as_ref(),
            &message.content,
            None,
            0,
        );
        if message.status != MessageStatus::Complete {
            let mut note = format!("_({})", message.status.as_str());
            if let Some(error) = &message.error {
                let _ = write!(note, ": {error}");
            }
            let _ = writeln!(out, "{note}_\n");
        }
    }
    out
}

/// One level of an answer in the order it was shown: text as paragraphs, calls as
/// list items, a subtask's own text and calls indented under its item.
fn answer_level(
    out: &mut String,
    tree: Option<&ExecutionTree>,
    content: &str,
    parent: Option<&str>,
    depth: usize,
) {
    let indent = "  ".repeat(depth);
    let mut in_list = false;
    for piece in pieces(tree, content, parent) {
        match piece {
            Piece::Text(text) => {
                if in_list {
                    out.push('\n');
                    in_list = false;
                }
                for line in text.trim().lines() {
                    if line.is_empty() {
                        out.push('\n');
                    } else {
                        let _ = writeln!(out, "{indent}{line}");
                    }
                }
                out.push('\n');
            }
            Piece::Call(node) => {
                let _ = writeln!(out, "{indent}- {}", call_line(node));
                in_list = true;
                let before = out.len();
                answer_level(out, tree, content, Some(&node.id), depth + 1);
                if out.len() > before {
                    in_list = false;
                }
            }
        }
    }
    if in_list {
        out.push('\n');
    }
}

fn call_line(node: &ExecutionTreeNode) -> String {
    let mark = if node.is_error == Some(true) {
        "✗"
    } else {
        "✓"
    };
    let label = match &node.title {
        Some(title) => format!("{} “{title}”", node.name),
        None => match &node.args_preview {
            Some(args) => format!("{} `{}`", node.name, one_line(args)),
            None => node.name.clone(),
        },
    };
    let result = node
        .result_preview
        .as_deref()
        .map(|r| format!(" → {}", one_line(r)))
        .unwrap_or_default();
    format!("{mark} {label}{result} ({} ms)", node.duration_ms)
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 120 {
        let mut cut: String = flat.chars().take(119).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}
