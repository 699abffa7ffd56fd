//! Threads and their messages as front ends show them.

use serde::{Deserialize, Serialize};

use crate::event::Usage;
use crate::permission::PermissionMode;
use crate::tree::ExecutionTree;

/// A conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub id: String,
    /// Made from the first prompt; the user may rename it.
    pub title: String,
    pub mode: PermissionMode,
    /// The folder the file tools work in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent profile the thread answers as; none: the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Its first turn ran with the router, so `switch_agent` stays offered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub routes: bool,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default)]
    pub message_count: u64,
    /// How the thread's last answer ended (none yet: no answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<MessageStatus>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// How far an assistant message got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Complete,
    /// Still streaming, cut off by a crash, ended by a budget, or cut before the model
    /// finished it (its length limit, repetition).
    Partial,
    Cancelled,
    Failed,
}

impl MessageStatus {
    /// The status named as [`MessageStatus::as_str`] names it.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Complete, Self::Partial, Self::Cancelled, Self::Failed]
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Partial => "partial",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }
}

/// One message of a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageView {
    pub id: String,
    pub thread_id: String,
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// On assistant messages: the nested tool cards, restorable after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_tree: Option<ExecutionTree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    pub status: MessageStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A user message Cairn wrote, not the user (the follow-up of a hand-over).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
    /// On the synthetic message of a hand-over: who handed the thread to whom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
    pub created_at: i64,
    pub updated_at: i64,
    /// On an answer: the files it wrote that Restore can still put back as they were
    /// before it (workspace-relative, in order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restorable: Vec<String>,
    /// On a question Cairn wrote on the user's behalf (running a plan): what the
    /// window shows ("Run plan p1"); `content` is what the model read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<String>,
}

/// The router handing a thread to another profile, as a thread keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handover {
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A message that matched a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    pub thread_id: String,
    pub thread_title: String,
    pub message_id: String,
    pub role: Role,
    /// The matching words in context, marked with `[` and `]`.
    pub snippet: String,
    /// The same context as plain text (Markdown's marks left out), in pieces, the
    /// matching words marked `hit`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<SnippetPart>,
}

/// A piece of a search hit's context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnippetPart {
    pub text: String,
    /// One of the words searched for.
    #[serde(default)]
    pub hit: bool,
}
