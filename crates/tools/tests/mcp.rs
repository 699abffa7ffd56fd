//! The MCP client against a real server process speaking the protocol over stdio.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cairn_protocol::ToolCategory;
use cairn_tools::mcp::{McpConfig, McpServerConfig, start_allowed};
use cairn_tools::{Tool, ToolContext, ToolError};
use serde_json::json;

fn fixture(args: &[&str]) -> McpServerConfig {
    McpServerConfig::Command {
        command: env!("CARGO_BIN_EXE_mcp-fixture-server").into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Default::default(),
    }
}

fn http() -> reqwest::Client {
    cairn_providers::http::client_builder().build().unwrap()
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[tokio::test]
async fn an_allowed_server_starts_and_its_tools_work() {
    let mut config = McpConfig::default();
    config.servers.insert("fixture".into(), fixture(&[]));
    config.servers.insert("unlisted".into(), fixture(&[]));
    let (tools, failures) = start_allowed(&config, &["fixture".into()], http()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let names: Vec<_> = tools.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(
        names,
        [
            "mcp__fixture__echo",
            "mcp__fixture__shout",
            "mcp__fixture__fail",
            "mcp__fixture__crash"
        ],
        "only the allowed server started"
    );
    let echo = tool(&tools, "mcp__fixture__echo");
    assert_eq!(
        echo.category(),
        ToolCategory::Read,
        "marked read-only by the server"
    );
    assert_eq!(
        tool(&tools, "mcp__fixture__shout").category(),
        ToolCategory::External
    );
    assert_eq!(echo.description(), "Echo the text back");
    assert_eq!(echo.parameters()["required"], json!(["text"]));

    let ctx = ToolContext::default();
    assert_eq!(
        echo.call(json!({"text": "hi"}), &ctx)
            .await
            .unwrap()
            .content,
        "hi"
    );
    assert_eq!(
        tool(&tools, "mcp__fixture__shout")
            .call(json!({"text": "hi"}), &ctx)
            .await
            .unwrap()
            .content,
        "HI"
    );
    let err = tool(&tools, "mcp__fixture__fail")
        .call(json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::Failed("the fixture failed on purpose".into())
    );
    assert!(matches!(
        echo.call(json!("not an object"), &ctx).await,
        Err(ToolError::InvalidArguments(_))
    ));

    // A server that dies mid-call fails that call; later calls say it is gone.
    let err = tool(&tools, "mcp__fixture__crash")
        .call(json!({}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("MCP server `fixture`"), "{err}");
    let after = echo.call(json!({"text": "again"}), &ctx).await.unwrap_err();
    assert!(after.to_string().contains("fixture"), "{after}");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_and_the_others_still_start() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("broken".into(), fixture(&["--refuse"]));
    config.servers.insert(
        "missing".into(),
        McpServerConfig::Command {
            command: "/nonexistent/mcp-server".into(),
            args: vec![],
            env: Default::default(),
        },
    );
    config.servers.insert("fixture".into(), fixture(&[]));
    let allowed = ["broken".into(), "missing".into(), "fixture".into()];
    let (tools, failures) = start_allowed(&config, &allowed, http()).await;
    assert_eq!(tools.len(), 4);
    let reasons: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("MCP server `broken` could not start")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("MCP server `missing` could not start")
                && r.contains("/nonexistent/mcp-server")),
        "{reasons:?}"
    );
}

#[test]
fn claude_desktop_config_files_are_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
        "remote": {"url": "http://localhost:3000/mcp", "headers": {"Authorization": "Bearer x"}}
    }}"#).unwrap();
    let config = McpConfig::load(&path).unwrap();
    assert_eq!(config.servers.len(), 2);
    assert!(
        matches!(&config.servers["files"], McpServerConfig::Command { command, args, .. } if command == "npx" && args.len() == 3)
    );
    assert!(
        matches!(&config.servers["remote"], McpServerConfig::Url { url, .. } if url == "http://localhost:3000/mcp")
    );
    assert_eq!(
        McpConfig::load(&dir.path().join("absent.json")).unwrap(),
        McpConfig::default()
    );
    std::fs::write(&path, r#"{"mcpServers": {"bad__name": {"command": "x"}}}"#).unwrap();
    assert!(
        McpConfig::load(&path)
            .unwrap_err()
            .to_string()
            .contains("bad__name")
    );
    std::fs::write(&path, "not json").unwrap();
    assert!(
        McpConfig::load(&path)
            .unwrap_err()
            .to_string()
            .contains("cannot be read")
    );
}

#[tokio::test]
async fn a_url_server_is_reached_over_streamable_http() {
    use cairn_testkit::{FakeServer, Piece, Reply};
    let server = FakeServer::start().await;
    let json_reply = |body: serde_json::Value| {
        Reply::new(200, "application/json").then(Piece::Bytes(body.to_string().into_bytes()))
    };
    server.push("POST /mcp", json_reply(json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "http-fixture", "version": "1"}}})));
    server.push("POST /mcp", Reply::new(202, "application/json"));
    server.push("POST /mcp", json_reply(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "lookup", "description": "Look a word up", "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}}}]}})));
    server.push("POST /mcp", json_reply(json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "a small stone"}]}})));
    server.fallback("GET /mcp", Reply::new(405, "text/plain"));
    let mut config = McpConfig::default();
    config.servers.insert(
        "dict".into(),
        McpServerConfig::Url {
            url: format!("{}/mcp", server.url()),
            headers: [("Authorization".to_owned(), "Bearer t0ken".to_owned())].into(),
        },
    );
    let (tools, failures) = start_allowed(&config, &["dict".into()], http()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let lookup = tool(&tools, "mcp__dict__lookup");
    assert_eq!(
        lookup
            .call(json!({"word": "pebble"}), &ToolContext::default())
            .await
            .unwrap()
            .content,
        "a small stone"
    );
    let posts: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts[0].json()["method"], "initialize");
    let call = posts.last().unwrap().json();
    assert_eq!(
        (call["method"].clone(), call["params"]["name"].clone()),
        (json!("tools/call"), json!("lookup"))
    );
    assert_eq!(call["params"]["arguments"], json!({"word": "pebble"}));
    assert!(
        posts
            .iter()
            .all(|p| p.header("authorization") == Some("Bearer t0ken"))
    );
}
