//! The `mcpServers` file, as Claude Desktop writes it, and Cairn's few additions.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::McpError;

/// How long one call may take when neither the server's entry nor
/// `CAIRN_MCP_TOOL_TIMEOUT_MS` says.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The `mcpServers` file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct McpConfig {
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One server: a command to run, or an address; and how long a call may take.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct McpServerConfig {
    #[serde(flatten)]
    pub transport: McpTransport,
    /// Longest a call may take, in milliseconds (else the default for every server).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// How the server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum McpTransport {
    Command {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    Url {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    /// A server run as `command args…`.
    pub fn command(command: impl Into<String>, args: &[&str]) -> Self {
        Self {
            transport: McpTransport::Command {
                command: command.into(),
                args: args.iter().map(|arg| (*arg).to_owned()).collect(),
                env: BTreeMap::new(),
            },
            timeout_ms: None,
        }
    }

    /// A server at `url`, over streamable HTTP.
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            transport: McpTransport::Url {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            timeout_ms: None,
        }
    }

    /// What runs or where it is: the command line, or the address.
    pub fn target(&self) -> String {
        match &self.transport {
            McpTransport::Command { command, args, .. } => {
                format!("{command} {}", args.join(" ")).trim().to_owned()
            }
            McpTransport::Url { url, .. } => url.clone(),
        }
    }

    /// Longest a call may take: the entry's own, else `default`.
    pub fn call_timeout(&self, default: Duration) -> Duration {
        self.timeout_ms.map_or(default, Duration::from_millis)
    }
}

impl McpConfig {
    /// Reads a config file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Self, McpError> {
        let failed = |reason: String| McpError::Config {
            path: path.display().to_string(),
            reason,
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(err) => return Err(failed(err.to_string())),
        };
        let config: Self = serde_json::from_str(&text).map_err(|err| {
            failed(format!(
                "{err}; expected {{\"mcpServers\": {{\"name\": {{\"command\": …}}}}}}"
            ))
        })?;
        for (name, server) in &config.servers {
            if !valid_server_name(name) {
                return Err(failed(format!(
                    "the server name `{name}` may have only letters, digits, `-` and `_` (it becomes part of tool names)"
                )));
            }
            if server.timeout_ms == Some(0) {
                return Err(failed(format!(
                    "`timeout_ms` of `{name}` must be above 0 (it is the longest a call may take, in milliseconds)"
                )));
            }
        }
        Ok(config)
    }
}

/// The default call timeout from `CAIRN_MCP_TOOL_TIMEOUT_MS` (looked up through
/// `lookup`), else [`DEFAULT_CALL_TIMEOUT`].
pub fn call_timeout_from(lookup: impl Fn(&str) -> Option<String>) -> Result<Duration, McpError> {
    const NAME: &str = "CAIRN_MCP_TOOL_TIMEOUT_MS";
    match lookup(NAME) {
        None => Ok(DEFAULT_CALL_TIMEOUT),
        Some(text) => match text.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(McpError::Setting(format!(
                "{NAME} must be a number of milliseconds above 0, not `{text}`"
            ))),
        },
    }
}

fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
