//! Permission modes, tool categories and the answers a user gives to an approval.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much a thread's agent may do without asking. Set only by the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Read-only: every action is blocked, the model is asked for a plan.
    Plan,
    /// Reads run; writes, commands and external calls ask first.
    #[default]
    Default,
    /// Everything runs without asking (explicit deny rules still hold).
    Auto,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 3] = [Self::Plan, Self::Default, Self::Auto];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Default => "default",
            Self::Auto => "auto",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a mode name that is not one of plan, default, auto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMode(pub String);

impl fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown permission mode `{}`: use plan, default or auto",
            self.0
        )
    }
}

impl std::error::Error for UnknownMode {}

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

/// What a tool can do to the world; the mode decides per category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    Read,
    Write,
    Execute,
    External,
}

impl ToolCategory {
    pub const ALL: [ToolCategory; 4] = [Self::Read, Self::Write, Self::Execute, Self::External];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Execute => "execute",
            Self::External => "external",
        }
    }
}

impl fmt::Display for ToolCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The user's answer to a `tool_approval_request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this one call.
    Allow,
    /// Run it, and allow the same grant for the rest of this thread.
    AllowSession,
    /// Do not run it; the model is told the user refused.
    Deny,
}

impl ApprovalDecision {
    pub fn allows(self) -> bool {
        match self {
            Self::Allow | Self::AllowSession => true,
            Self::Deny => false,
        }
    }
}

/// Which list a persistent permission rule is in: deny beats ask beats allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

impl RuleList {
    pub const ALL: [RuleList; 3] = [Self::Allow, Self::Ask, Self::Deny];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RuleList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|list| list.as_str() == s)
            .ok_or_else(|| format!("unknown rule list `{s}`: use allow, ask or deny"))
    }
}
