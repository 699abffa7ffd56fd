//! `cairn mcp list|allow|disallow`, and starting the allowed servers for a run.

use std::path::PathBuf;

use cairn_core::Limits;
use cairn_runtime::Runtime;
use cairn_tools::mcp::{McpConfig, McpServerConfig};
use serde_json::json;

use crate::args::{McpAction, McpArgs, McpConfigArgs};
use crate::exit::{Exit, Failure};

impl McpConfigArgs {
    pub fn path(&self) -> Option<PathBuf> {
        self.mcp_config
            .clone()
            .or_else(cairn_runtime::default_mcp_config_path)
    }

    pub fn load(&self) -> Result<McpConfig, Failure> {
        match self.path() {
            Some(path) => McpConfig::load(&path).map_err(|err| Failure::Usage(err.to_string())),
            None => Ok(McpConfig::default()),
        }
    }
}

/// Starts the allowed servers for a run; one that fails is reported, not fatal.
pub async fn start(runtime: &Runtime, config: &McpConfigArgs) -> Result<(), Failure> {
    let config = config.load()?;
    if config.servers.is_empty() {
        return Ok(());
    }
    let failures = runtime
        .start_mcp(&config)
        .await
        .map_err(|err| Failure::Usage(err.to_string()))?;
    for failure in failures {
        eprintln!("cairn: {failure}; its tools are not available this run");
    }
    Ok(())
}

pub async fn mcp(args: McpArgs) -> Exit {
    match act(args).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(args: McpArgs) -> Result<(), Failure> {
    let runtime = Runtime::new(args.db.open().await?, Limits::default());
    let config = args.config.load()?;
    let fail = |err: cairn_runtime::RuntimeError| Failure::Usage(err.to_string());
    match args.action {
        McpAction::List { json } => {
            let allowed = runtime.allowed_mcp_servers().await.map_err(fail)?;
            let rows: Vec<_> = config
                .servers
                .iter()
                .map(|(name, server)| {
                    let target = match server {
                        McpServerConfig::Command { command, args, .. } => {
                            format!("{command} {}", args.join(" "))
                        }
                        McpServerConfig::Url { url, .. } => url.clone(),
                    };
                    (
                        name.clone(),
                        allowed.contains(name),
                        target.trim().to_owned(),
                    )
                })
                .collect();
            if json {
                let value: Vec<_> = rows
                    .iter()
                    .map(|(name, allowed, target)| json!({"name": name, "allowed": allowed, "target": target}))
                    .collect();
                println!("{}", serde_json::Value::Array(value));
            } else if rows.is_empty() {
                let path = args
                    .config
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                println!("no MCP servers are configured in {path}");
            } else {
                for (name, allowed, target) in rows {
                    let state = if allowed { "allowed" } else { "not allowed" };
                    println!("{name}\t{state}\t{target}");
                }
            }
        }
        McpAction::Allow { name } => {
            if !config.servers.contains_key(&name) {
                let known: Vec<_> = config.servers.keys().cloned().collect();
                return Err(Failure::Usage(format!(
                    "no MCP server `{name}` is configured; the configured ones are: {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            runtime.allow_mcp_server(&name, true).await.map_err(fail)?;
            println!("{name} may start");
        }
        McpAction::Disallow { name } => {
            runtime.allow_mcp_server(&name, false).await.map_err(fail)?;
            println!("{name} will not start");
        }
    }
    Ok(())
}
