//! The MCP client: tools from Model Context Protocol servers, as Cairn tools.
//!
//! config (Claude Desktop's `mcpServers` JSON) → only the servers the user allowed →
//! each started (a command over stdio, or a URL over streamable HTTP) → its tools
//! listed → one [`McpTool`] each, named `mcp__<server>__<tool>`, external unless the
//! server marks it read-only. A server that fails to start loses its tools, not the
//! app; one that dies mid-call fails that call, not the turn.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairn_protocol::ToolCategory;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// How long a server may take to start and list its tools.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The `mcpServers` file, as Claude Desktop writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct McpConfig {
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One server: a command to run, or an address.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum McpServerConfig {
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

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP servers file {path} cannot be read: {reason}")]
    Config { path: String, reason: String },
    #[error("MCP server `{server}` could not start: {reason}")]
    Start { server: String, reason: String },
}

impl McpConfig {
    /// Reads a config file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Self, McpError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(err) => {
                return Err(McpError::Config {
                    path: path.display().to_string(),
                    reason: err.to_string(),
                });
            }
        };
        let config: Self = serde_json::from_str(&text).map_err(|err| McpError::Config {
            path: path.display().to_string(),
            reason: format!("{err}; expected {{\"mcpServers\": {{\"name\": {{\"command\": …}}}}}}"),
        })?;
        for name in config.servers.keys() {
            if !valid_server_name(name) {
                return Err(McpError::Config {
                    path: path.display().to_string(),
                    reason: format!(
                        "the server name `{name}` may have only letters, digits, `-` and `_` (it becomes part of tool names)"
                    ),
                });
            }
        }
        Ok(config)
    }
}

fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

type Client = RunningService<RoleClient, ()>;

/// A started server.
#[derive(Debug)]
pub struct McpServer {
    name: String,
    client: Mutex<Option<Client>>,
}

impl McpServer {
    /// Starts a server and lists its tools.
    pub async fn start(
        name: &str,
        config: &McpServerConfig,
        http: reqwest::Client,
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let failed = |reason: String| McpError::Start {
            server: name.to_owned(),
            reason,
        };
        let started = async {
            let client: Client = match config {
                McpServerConfig::Command { command, args, env } => {
                    let mut process = tokio::process::Command::new(command);
                    process.args(args).envs(env);
                    let transport = TokioChildProcess::builder(process)
                        .stderr(std::process::Stdio::null())
                        .spawn()
                        .map(|(transport, _)| transport)
                        .map_err(|err| failed(format!("`{command}`: {err}")))?;
                    ().serve(transport)
                        .await
                        .map_err(|err| failed(err.to_string()))?
                }
                McpServerConfig::Url { url, headers } => {
                    let mut transport_config =
                        StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    transport_config.custom_headers = header_map(headers).map_err(failed)?;
                    let transport =
                        StreamableHttpClientTransport::with_client(http, transport_config);
                    ().serve(transport)
                        .await
                        .map_err(|err| failed(err.to_string()))?
                }
            };
            let listed = client
                .list_all_tools()
                .await
                .map_err(|err| failed(err.to_string()))?;
            Ok::<_, McpError>((client, listed))
        };
        let (client, listed) = tokio::time::timeout(START_TIMEOUT, started)
            .await
            .map_err(|_| {
                failed(format!(
                    "it did not answer within {} s",
                    START_TIMEOUT.as_secs()
                ))
            })??;
        let server = Arc::new(Self {
            name: name.to_owned(),
            client: Mutex::new(Some(client)),
        });
        Ok(listed
            .into_iter()
            .filter_map(|tool| {
                let full_name = format!("mcp__{name}__{}", wire_safe(&tool.name));
                // Model APIs take tool names of at most 64 characters.
                if full_name.len() > 64 {
                    tracing::warn!(tool = %full_name, "an MCP tool's name is too long to offer");
                    return None;
                }
                Some((full_name, tool))
            })
            .map(|(full_name, tool)| {
                let read_only = tool
                    .annotations
                    .as_ref()
                    .and_then(|annotations| annotations.read_only_hint)
                    .unwrap_or(false);
                Arc::new(McpTool {
                    server: Arc::clone(&server),
                    full_name,
                    remote_name: tool.name.to_string(),
                    description: tool.description.as_deref().unwrap_or("").to_owned(),
                    parameters: Value::Object((*tool.input_schema).clone()),
                    category: if read_only {
                        ToolCategory::Read
                    } else {
                        ToolCategory::External
                    },
                }) as Arc<dyn Tool>
            })
            .collect())
    }

    /// Stops the server (its process ends with it).
    pub async fn stop(&self) {
        if let Some(client) = self.client.lock().await.take() {
            let _ = client.cancel().await;
        }
    }
}

/// A tool name as model APIs accept it: letters, digits, `_` and `-`.
fn wire_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = http::HeaderName::try_from(name.as_str())
                .map_err(|err| format!("header `{name}`: {err}"))?;
            let value = http::HeaderValue::try_from(value.as_str())
                .map_err(|err| format!("header `{name}`: {err}"))?;
            Ok((name, value))
        })
        .collect()
}

/// Starts every server of `config` that `allowed` names, at once. Returns the tools
/// of those that started and, for the others, why not.
pub async fn start_allowed(
    config: &McpConfig,
    allowed: &[String],
    http: reqwest::Client,
) -> (Vec<Arc<dyn Tool>>, Vec<McpError>) {
    let starts = config
        .servers
        .iter()
        .filter(|(name, _)| allowed.iter().any(|allowed| allowed == *name))
        .map(|(name, server)| {
            let http = http.clone();
            async move { McpServer::start(name, server, http).await }
        });
    let mut tools = Vec::new();
    let mut failures = Vec::new();
    for result in futures_util::future::join_all(starts).await {
        match result {
            Ok(server_tools) => tools.extend(server_tools),
            Err(err) => {
                tracing::warn!(%err, "an MCP server did not start");
                failures.push(err);
            }
        }
    }
    (tools, failures)
}

/// One tool of an MCP server.
#[derive(Debug)]
pub struct McpTool {
    server: Arc<McpServer>,
    full_name: String,
    remote_name: String,
    description: String,
    parameters: Value,
    category: ToolCategory,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.full_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Value::Object(arguments) = args else {
            return Err(ToolError::InvalidArguments(
                "expected a JSON object of named arguments".into(),
            ));
        };
        let server = &self.server.name;
        let client = self.server.client.lock().await;
        let Some(client) = client.as_ref() else {
            return Err(ToolError::Failed(format!(
                "MCP server `{server}` has stopped"
            )));
        };
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        params.arguments = Some(arguments);
        let result = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            result = tokio::time::timeout(CALL_TIMEOUT, client.call_tool(params)) => result,
        };
        let result = result
            .map_err(|_| {
                ToolError::Failed(format!(
                    "MCP server `{server}` did not answer within {} s",
                    CALL_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|err| ToolError::Failed(format!("MCP server `{server}` failed: {err}")))?;
        let mut text = String::new();
        for block in &result.content {
            let piece = match block {
                ContentBlock::Text(content) => content.text.clone(),
                ContentBlock::Image(_) => "[an image]".to_owned(),
                ContentBlock::Audio(_) => "[audio]".to_owned(),
                ContentBlock::Resource(resource) => {
                    serde_json::to_string(resource).unwrap_or_default()
                }
                ContentBlock::ResourceLink(link) => format!("[resource {}]", link.uri),
                _ => "[content Cairn cannot show]".to_owned(),
            };
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&piece);
        }
        if text.is_empty()
            && let Some(structured) = &result.structured_content
        {
            text = structured.to_string();
        }
        if result.is_error == Some(true) {
            return Err(ToolError::Failed(text));
        }
        Ok(ToolOutput::text(text))
    }
}
