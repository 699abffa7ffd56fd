//! MCP servers start with the app, as they do for each CLI run: the ones the user
//! allowed (`cairn mcp allow NAME`) from the servers file (`mcp.json` beside the
//! database, or `CAIRN_MCP_CONFIG`). A server that fails is reported, never fatal.

use std::path::{Path, PathBuf};

use cairn_protocol::desktop::McpServerInfo;
use cairn_runtime::McpConfig;

use super::{Desk, DeskError};

/// The servers file the app reads: `CAIRN_MCP_CONFIG`, else the CLI's default.
pub fn config_path() -> Option<PathBuf> {
    std::env::var_os("CAIRN_MCP_CONFIG")
        .map(PathBuf::from)
        .or_else(cairn_runtime::default_mcp_config_path)
}

impl Desk {
    /// Starts the allowed servers of the file at `path` (none if it does not exist)
    /// and offers their tools from now on. Returns what went wrong, in words for the
    /// user; the servers that did start stay started.
    pub async fn start_mcp(&self, path: &Path) -> Vec<String> {
        let config = match McpConfig::load(path) {
            Ok(config) => config,
            Err(err) => return vec![format!("MCP servers not started: {err}")],
        };
        if config.servers.is_empty() {
            return Vec::new();
        }
        match self.runtime().start_mcp(&config).await {
            Ok(failures) => failures
                .into_iter()
                .map(|failure| format!("{failure}; its tools are not available"))
                .collect(),
            Err(err) => vec![format!("MCP servers not started: {err}")],
        }
    }
}

impl Desk {
    /// The configured servers: allowed, trusted, running or why not.
    pub async fn mcp_servers(&self, path: &Path) -> Result<Vec<McpServerInfo>, DeskError> {
        let config = McpConfig::load(path).map_err(|err| DeskError::Invalid(err.to_string()))?;
        let status = self.runtime().mcp_status(&config).await?;
        Ok(status
            .into_iter()
            .map(|server| McpServerInfo {
                name: server.name,
                target: server.target,
                allowed: server.allowed,
                trusted: server.trusted,
                tools: server.tools,
                error: server.error,
            })
            .collect())
    }

    /// Allows (and starts) or disallows (and stops) a configured server, or trusts its
    /// read-only marks or not; returns every server as it stands then.
    pub async fn set_mcp_server(
        &self,
        path: &Path,
        name: &str,
        allowed: Option<bool>,
        trusted: Option<bool>,
    ) -> Result<Vec<McpServerInfo>, DeskError> {
        let config = McpConfig::load(path).map_err(|err| DeskError::Invalid(err.to_string()))?;
        if !config.servers.contains_key(name) {
            return Err(DeskError::Invalid(format!(
                "no MCP server `{name}` is configured in {}",
                path.display()
            )));
        }
        if let Some(trusted) = trusted {
            self.runtime().trust_mcp_server(name, trusted).await?;
        }
        match allowed {
            Some(true) => {
                self.runtime().allow_mcp_server(name, true).await?;
                self.runtime().start_mcp(&config).await?;
            }
            Some(false) => {
                self.runtime().allow_mcp_server(name, false).await?;
                self.runtime().stop_mcp_server(name).await;
            }
            None => {}
        }
        self.mcp_servers(path).await
    }
}
