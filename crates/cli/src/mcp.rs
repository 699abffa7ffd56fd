//! `cairn mcp list|allow|disallow`, and starting the allowed servers for a run.

use std::path::PathBuf;

use cairn_runtime::{McpConfig, Runtime};
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
    let failures = runtime.start_mcp(&config).await?;
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
    let runtime = args.db.open().await?;
    let config = args.config.load()?;
    match args.action {
        McpAction::List { json } => {
            let servers = runtime.mcp_status(&config).await?;
            if json {
                let value: Vec<_> = servers
                    .iter()
                    .map(|server| {
                        json!({"name": server.name, "allowed": server.allowed,
                               "trusted": server.trusted, "target": server.target})
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(value));
            } else if servers.is_empty() {
                let path = args
                    .config
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                println!("no MCP servers are configured in {path}");
            } else {
                for server in servers {
                    let state = if server.allowed {
                        "allowed"
                    } else {
                        "not allowed"
                    };
                    let trust = if server.trusted {
                        "trusted"
                    } else {
                        "not trusted"
                    };
                    println!("{}\t{state}\t{trust}\t{}", server.name, server.target);
                }
            }
        }
        McpAction::Allow { name } => {
            configured(&config, &name)?;
            runtime.allow_mcp_server(&name, true).await?;
            println!("{name} may start");
        }
        McpAction::Disallow { name } => {
            runtime.allow_mcp_server(&name, false).await?;
            println!("{name} will not start");
        }
        McpAction::Trust { name } => {
            configured(&config, &name)?;
            runtime.trust_mcp_server(&name, true).await?;
            println!("{name}'s read-only tools will run without asking in default mode");
        }
        McpAction::Untrust { name } => {
            runtime.trust_mcp_server(&name, false).await?;
            println!("every tool of {name} will ask before it runs in default mode");
        }
    }
    Ok(())
}

/// Refuses a server name the config does not have, listing the ones it has.
fn configured(config: &McpConfig, name: &str) -> Result<(), Failure> {
    if config.servers.contains_key(name) {
        return Ok(());
    }
    let known: Vec<_> = config.servers.keys().cloned().collect();
    Err(Failure::Usage(format!(
        "no MCP server `{name}` is configured; the configured ones are: {}",
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    )))
}
