//! The two wire formats every model server speaks one of.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// Ollama's native API (`/api/chat`).
    #[default]
    Ollama,
    /// The OpenAI-compatible API (`/v1/chat/completions`).
    Openai,
}

impl Dialect {
    pub const ALL: [Dialect; 2] = [Self::Ollama, Self::Openai];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ollama => "ollama",
            Self::Openai => "openai",
        }
    }

    /// What a person calls it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ollama => "Ollama API",
            Self::Openai => "OpenAI-compatible API",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a dialect name that is not one of ollama, openai.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown dialect `{}`: use ollama or openai", self.0)
    }
}

impl std::error::Error for UnknownDialect {}

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|dialect| dialect.as_str() == s)
            .ok_or_else(|| UnknownDialect(s.to_owned()))
    }
}
