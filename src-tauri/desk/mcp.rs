//! MCP servers start with the app, as they do for each CLI run: the ones the user
//! allowed (`cairn mcp allow NAME`) from the servers file (`mcp.json` beside the
//! database, or `CAIRN_MCP_CONFIG`). A server that fails is reported, never fatal.

use std::path::{Path, PathBuf};

use cairn_tools::mcp::McpConfig;

use super::Desk;

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
