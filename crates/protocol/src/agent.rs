//! Agent profiles as front ends list them (`cairn agents list`, the composer's chip).

use serde::{Deserialize, Serialize};

/// Where a profile was read from; a later source replaces an earlier profile with
/// the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentSource {
    Builtin,
    /// The user's folder (`~/.config/cairn/agents/`, or `CAIRN_AGENTS_DIR`).
    User,
    /// The workspace's `.cairn/agents/`.
    Workspace,
}

impl AgentSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::User => "user",
            Self::Workspace => "workspace",
        }
    }
}

/// One profile, or one file that could not be used as one (`error` set, the rest
/// as far as it could be read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub id: String,
    pub description: String,
    pub source: AgentSource,
    pub base: Option<String>,
    pub hidden: bool,
    pub runnable: bool,
    pub model: Option<String>,
    /// The named model server it runs on, when not the thread's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub error: Option<String>,
    /// The file it came from; absent for built-ins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The part the engine gives it (`router`, `reviewer`), if it holds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}
