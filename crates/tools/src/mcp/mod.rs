//! The MCP client: tools from Model Context Protocol servers, as Cairn tools.
//!
//! config (Claude Desktop's `mcpServers` JSON) → only the servers the user allowed →
//! each started (a command over stdio, or a URL over streamable HTTP) → its tools
//! listed → one [`McpTool`] each, named `mcp__<server>__<tool>`, external unless the
//! server marks it read-only *and* the user trusts the server (a hint is the server's
//! own claim).
//!
//! A misbehaving server costs a tool error, never the turn: a call has a time limit
//! (then the server is told to cancel it), a message past [`MAX_MESSAGE_BYTES`] or one
//! that is not JSON-RPC resets the connection, a server that dies is started again on
//! the next call, and one that keeps dying is off for the session. Its own JSON-RPC
//! client (`wire`, `stdio`, `http`) keeps every read bounded and every wait cancellable.

mod config;
mod http;
mod link;
mod search_path;
mod server;
mod stdio;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairn_protocol::ToolCategory;
use serde_json::Value;

pub use config::{
    DEFAULT_CALL_TIMEOUT, McpConfig, McpServerConfig, McpTransport, call_timeout_from,
};
pub use server::{MAX_RESTARTS_PER_TURN, McpServer, START_TIMEOUT};
pub use wire::{MAX_MESSAGE_BYTES, NotStarted};

use cairn_core::tool::{Tool, ToolContext, ToolError, ToolOutput};

#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("the MCP servers file {path} cannot be read: {reason}")]
    Config { path: String, reason: String },
    #[error("MCP server `{server}` could not start: {reason}")]
    Start { server: String, reason: NotStarted },
    #[error("{0}")]
    Setting(String),
}

impl McpError {
    /// The server the error is about, if it is about one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::Config { .. } | Self::Setting(_) => None,
            Self::Start { server, .. } => Some(server),
        }
    }
}

/// The servers the user let start, those whose own read-only hints they trust, and
/// how long a call may take unless a server's entry says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPolicy {
    pub allowed: Vec<String>,
    pub trusted: Vec<String>,
    pub call_timeout: Duration,
}

impl Default for McpPolicy {
    fn default() -> Self {
        Self {
            allowed: Vec::new(),
            trusted: Vec::new(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }
}

impl McpServer {
    /// Its tools, as Cairn offers them.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        (0..self.listed().len())
            .map(|index| {
                Arc::new(McpTool {
                    server: Arc::clone(self),
                    index,
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}

/// Starts every server of `config` that the policy allows, at once. Returns those
/// that started and, for the others, why not.
pub async fn start_allowed(
    config: &McpConfig,
    policy: &McpPolicy,
    http: reqwest::Client,
) -> (Vec<Arc<McpServer>>, Vec<McpError>) {
    let starts = config
        .servers
        .iter()
        .filter(|(name, _)| policy.allowed.iter().any(|allowed| allowed == *name))
        .map(|(name, server)| {
            let http = http.clone();
            let trusted = policy.trusted.iter().any(|trusted| trusted == name);
            async move { McpServer::start(name, server, trusted, policy.call_timeout, http).await }
        });
    let mut servers = Vec::new();
    let mut failures = Vec::new();
    for result in futures_util::future::join_all(starts).await {
        match result {
            Ok(server) => servers.push(server),
            // The caller says it where its user looks (the CLI's stderr, the
            // window's notice); a warning here would say it twice.
            Err(err) => {
                tracing::debug!(%err, "an MCP server did not start");
                failures.push(err);
            }
        }
    }
    (servers, failures)
}

/// One tool of an MCP server.
#[derive(Debug)]
pub struct McpTool {
    server: Arc<McpServer>,
    /// Its place in the server's list.
    index: usize,
}

impl McpTool {
    fn listed(&self) -> &server::ListedTool {
        &self.server.listed()[self.index]
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.listed().full_name
    }

    fn description(&self) -> &str {
        &self.listed().description
    }

    fn parameters(&self) -> Value {
        self.listed().parameters.clone()
    }

    /// External, unless the server says the tool only reads and the user trusts it.
    fn category(&self) -> ToolCategory {
        if self.listed().read_only_hint && self.server.is_trusted() {
            ToolCategory::Read
        } else {
            ToolCategory::External
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Value::Object(arguments) = args else {
            return Err(ToolError::InvalidArguments(
                "expected a JSON object of named arguments".into(),
            ));
        };
        self.server.call(self.index, arguments, ctx).await
    }
}
