//! The MCP client against the misbehaving fixture server (`cairn_testkit::mcp`): a real
//! process over stdio, and a real HTTP server. Each fault a server can have costs at
//! most the call it hits; the next call works.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_protocol::ToolCategory;
use cairn_testkit::mcp::{McpHttpFixture, stdio_fixture};
use cairn_tools::mcp::{
    DEFAULT_CALL_TIMEOUT, McpConfig, McpPolicy, McpServer, McpServerConfig, McpTransport,
    call_timeout_from, start_allowed,
};
use cairn_tools::{Tool, ToolContext, ToolError};
use serde_json::{Value, json};

fn fixture(args: &[&str]) -> McpServerConfig {
    McpServerConfig::command(stdio_fixture().display().to_string(), args)
}

/// The fixture with every message it receives logged to a file.
fn logged_fixture(log: &std::path::Path, timeout_ms: Option<u64>) -> McpServerConfig {
    let mut config = fixture(&[]);
    if let McpTransport::Command { env, .. } = &mut config.transport {
        env.insert("MCP_FIXTURE_LOG".into(), log.display().to_string());
    }
    config.timeout_ms = timeout_ms;
    config
}

fn http() -> reqwest::Client {
    cairn_providers::http::client_builder().build().unwrap()
}

fn policy(allowed: &[&str], trusted: &[&str]) -> McpPolicy {
    let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
    McpPolicy {
        allowed: owned(allowed),
        trusted: owned(trusted),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    }
}

/// Starts one server called `name`; its tools.
async fn one(name: &str, config: McpServerConfig) -> (Arc<McpServer>, Vec<Arc<dyn Tool>>) {
    let mut all = McpConfig::default();
    all.servers.insert(name.into(), config);
    let (servers, failures) = start_allowed(&all, &policy(&[name], &[]), http()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let server = servers.into_iter().next().unwrap();
    let tools = server.tools();
    (server, tools)
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name().ends_with(&format!("__{name}")))
        .unwrap_or_else(|| panic!("no {name}"))
}

async fn call(
    tools: &[Arc<dyn Tool>],
    name: &str,
    args: Value,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    tool(tools, name)
        .call(args, ctx)
        .await
        .map(|output| output.content)
}

/// The call's error; a success is reported by its length (a big result would flood
/// the test's output).
async fn failure(tools: &[Arc<dyn Tool>], name: &str, args: Value, ctx: &ToolContext) -> String {
    match call(tools, name, args, ctx).await {
        Ok(text) => panic!("`{name}` answered {} bytes instead of failing", text.len()),
        Err(err) => err.to_string(),
    }
}

fn turn(id: &str) -> ToolContext {
    ToolContext {
        turn: Some(id.into()),
        ..ToolContext::default()
    }
}

/// The messages the logged fixture received, parsed.
fn received(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[tokio::test]
async fn an_allowed_server_starts_and_its_tools_work() {
    let mut config = McpConfig::default();
    config.servers.insert("fixture".into(), fixture(&[]));
    config.servers.insert("unlisted".into(), fixture(&[]));
    let (servers, failures) =
        start_allowed(&config, &policy(&["fixture"], &["fixture"]), http()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(servers.len(), 1, "only the allowed server started");
    let tools = servers[0].tools();
    let names: Vec<_> = tools.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(
        &names[..4],
        [
            "mcp__fixture__echo",
            "mcp__fixture__shout",
            "mcp__fixture__fail",
            "mcp__fixture__crash"
        ]
    );
    let echo = tool(&tools, "echo");
    assert_eq!(
        echo.category(),
        ToolCategory::Read,
        "marked read-only by a server the user trusts"
    );
    assert_eq!(tool(&tools, "shout").category(), ToolCategory::External);
    assert_eq!(echo.description(), "Echo the text back");
    assert_eq!(echo.parameters()["required"], json!(["text"]));

    let ctx = ToolContext::default();
    assert_eq!(
        call(&tools, "echo", json!({"text": "hi"}), &ctx)
            .await
            .unwrap(),
        "hi"
    );
    assert_eq!(
        call(&tools, "shout", json!({"text": "hi"}), &ctx)
            .await
            .unwrap(),
        "HI"
    );
    assert_eq!(
        call(&tools, "fail", json!({}), &ctx).await.unwrap_err(),
        ToolError::Failed("the fixture failed on purpose".into())
    );
    assert!(matches!(
        echo.call(json!("not an object"), &ctx).await,
        Err(ToolError::InvalidArguments(_))
    ));
}

#[tokio::test]
async fn an_image_a_tool_returns_comes_back_beside_the_text_naming_it() {
    let (_server, tools) = one("fixture", fixture(&[])).await;
    let output = tool(&tools, "chart")
        .call(json!({}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(
        output.content,
        "Sales by month:\n[image 1: image/png, 1 KB]"
    );
    assert_eq!(
        output.images,
        [cairn_protocol::Image {
            mime_type: "image/png".into(),
            data: cairn_testkit::mcp::CHART_PNG.into(),
        }]
    );
}

#[tokio::test]
async fn a_read_only_hint_counts_only_for_a_server_the_user_trusts() {
    let (server, tools) = one("fixture", fixture(&[])).await;
    let echo = tool(&tools, "echo");
    assert_eq!(
        echo.category(),
        ToolCategory::External,
        "the server's own claim, not believed"
    );
    server.set_trusted(true);
    assert_eq!(echo.category(), ToolCategory::Read, "believed once trusted");
    assert_eq!(
        tool(&tools, "shout").category(),
        ToolCategory::External,
        "trust does not make an unmarked tool read-only"
    );
    server.set_trusted(false);
    assert_eq!(echo.category(), ToolCategory::External);
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_and_the_others_still_start() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("broken".into(), fixture(&["--refuse"]));
    config.servers.insert(
        "missing".into(),
        McpServerConfig::command("/nonexistent/mcp-server", &[]),
    );
    config.servers.insert("fixture".into(), fixture(&[]));
    let (servers, failures) = start_allowed(
        &config,
        &policy(&["broken", "missing", "fixture"], &[]),
        http(),
    )
    .await;
    assert_eq!(servers.len(), 1);
    let reasons: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("MCP server `broken` could not start")
                && r.contains("exited (status 3)")
                && r.contains("refusing to start")),
        "the exit status and the server's last words: {reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("MCP server `missing` could not start")
                && r.contains("/nonexistent/mcp-server")),
        "{reasons:?}"
    );
}

#[tokio::test]
async fn a_command_found_nowhere_names_the_path_it_was_looked_for_in() {
    let mut config = McpConfig::default();
    config.servers.insert(
        "gone".into(),
        McpServerConfig::command("cairn-no-such-mcp-server", &[]),
    );
    let (servers, failures) = start_allowed(&config, &policy(&["gone"], &[]), http()).await;
    assert!(servers.is_empty());
    let reason = failures[0].to_string();
    // The app's own PATH is among the folders searched (after the login shell's).
    let own = std::env::var("PATH").unwrap();
    let first_own = own.split(':').next().unwrap();
    assert!(
        reason.contains("`cairn-no-such-mcp-server` was not found")
            && reason.contains("PATH searched")
            && reason.contains(first_own),
        "{reason}"
    );
}

#[test]
fn claude_desktop_config_files_are_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
        "remote": {"url": "http://localhost:3000/mcp", "headers": {"Authorization": "Bearer x"}, "timeout_ms": 5000}
    }}"#).unwrap();
    let config = McpConfig::load(&path).unwrap();
    assert_eq!(config.servers.len(), 2);
    assert!(matches!(
        &config.servers["files"].transport,
        McpTransport::Command { command, args, .. } if command == "npx" && args.len() == 3
    ));
    assert!(matches!(
        &config.servers["remote"].transport,
        McpTransport::Url { url, .. } if url == "http://localhost:3000/mcp"
    ));
    assert_eq!(
        config.servers["remote"].call_timeout(DEFAULT_CALL_TIMEOUT),
        Duration::from_secs(5)
    );
    assert_eq!(
        config.servers["files"].call_timeout(DEFAULT_CALL_TIMEOUT),
        DEFAULT_CALL_TIMEOUT
    );
    assert_eq!(
        McpConfig::load(&dir.path().join("absent.json")).unwrap(),
        McpConfig::default()
    );
    for (bad, named) in [
        (
            r#"{"mcpServers": {"bad__name": {"command": "x"}}}"#,
            "bad__name",
        ),
        (
            r#"{"mcpServers": {"slow": {"command": "x", "timeout_ms": 0}}}"#,
            "timeout_ms",
        ),
    ] {
        std::fs::write(&path, bad).unwrap();
        let err = McpConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains(named), "{err}");
    }
}

#[test]
fn the_default_call_timeout_comes_from_the_environment() {
    assert_eq!(
        call_timeout_from(|_| None).unwrap(),
        Duration::from_secs(60)
    );
    assert_eq!(
        call_timeout_from(|_| Some("1500".into())).unwrap(),
        Duration::from_millis(1500)
    );
    for bad in ["0", "soon", "-1"] {
        let err = call_timeout_from(|_| Some(bad.into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("CAIRN_MCP_TOOL_TIMEOUT_MS"), "{err}");
    }
}

#[tokio::test]
async fn a_large_result_arrives_whole_and_one_past_the_cap_resets_the_connection() {
    let (_server, tools) = one("fixture", fixture(&[])).await;
    let ctx = turn("t1");
    // 10 MB of text: a JSON line of about 20 MB.
    let text = call(&tools, "big", json!({"bytes": 10_000_000}), &ctx)
        .await
        .unwrap();
    assert_eq!(text.len(), 10_000_000);
    // 70 MB of text is more than 64 MB of JSON: past the cap.
    let err = failure(&tools, "big", json!({"bytes": 70_000_000}), &ctx).await;
    assert!(err.contains("larger than 64 MB"), "{err}");
    assert!(err.contains("started again for the next call"), "{err}");
    assert_eq!(
        call(&tools, "echo", json!({"text": "after"}), &ctx)
            .await
            .unwrap(),
        "after"
    );
}

#[tokio::test]
async fn a_call_that_never_ends_times_out_and_the_server_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let (_server, tools) = one("slow", logged_fixture(&log, Some(300))).await;
    let ctx = turn("t1");
    let started = Instant::now();
    let err = failure(&tools, "hang", json!({}), &ctx).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(
        err.contains("did not answer `hang` within 300 ms") && err.contains("cancelled"),
        "{err}"
    );
    // The same connection goes on: no restart was needed.
    assert_eq!(
        call(&tools, "echo", json!({"text": "next"}), &ctx)
            .await
            .unwrap(),
        "next"
    );
    let messages = received(&log);
    let hang_id = messages
        .iter()
        .find(|m| m["params"]["name"] == "hang")
        .map(|m| m["id"].clone())
        .unwrap();
    let cancelled: Vec<_> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{messages:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], hang_id);
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["method"] == "initialize")
            .count(),
        1,
        "never restarted"
    );
}

#[tokio::test]
async fn stop_ends_a_call_at_once_and_the_server_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let (_server, tools) = one("slow", logged_fixture(&log, None)).await;
    let ctx = turn("t1");
    let stop = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let started = Instant::now();
    assert_eq!(
        call(&tools, "hang", json!({}), &ctx).await.unwrap_err(),
        ToolError::Cancelled
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not the 60 s timeout"
    );

    // The engine may also drop a call outright (its own Stop): the server hears too.
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        call(&tools, "hang", json!({}), &turn("t1")),
    )
    .await;
    assert!(dropped.is_err());
    let wait = Instant::now();
    let cancelled = loop {
        let cancelled: Vec<Value> = received(&log)
            .into_iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .collect();
        if cancelled.len() == 2 || wait.elapsed() > Duration::from_secs(10) {
            break cancelled;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(cancelled.len(), 2, "{cancelled:?}");
    assert_eq!(
        cancelled[0]["params"]["reason"],
        "the user stopped the turn"
    );
}

#[tokio::test]
async fn a_server_that_dies_is_started_again_and_one_that_keeps_dying_is_switched_off() {
    let (server, tools) = one("fragile", fixture(&[])).await;
    let ctx = turn("t1");
    let err = failure(&tools, "crash", json!({}), &ctx).await;
    assert!(
        err.contains("MCP server `fragile` exited (status 9) during the call to `crash`")
            && err.contains("started again for the next call"),
        "{err}"
    );
    assert_eq!(
        call(&tools, "echo", json!({"text": "back"}), &ctx)
            .await
            .unwrap(),
        "back"
    );
    // Three more deaths use the turn's three restarts; the next call finds it off.
    for _ in 0..3 {
        call(&tools, "crash", json!({}), &ctx).await.unwrap_err();
    }
    let off = failure(&tools, "echo", json!({"text": "x"}), &ctx).await;
    assert!(off.contains("is off for this session"), "{off}");
    assert!(server.problem().is_some());
    let later = call(&tools, "echo", json!({"text": "x"}), &turn("t2"))
        .await
        .unwrap_err();
    assert!(
        later.to_string().contains("is off for this session"),
        "for the session: {later}"
    );
}

#[tokio::test]
async fn restarts_are_counted_per_turn() {
    let (server, tools) = one("fragile", fixture(&[])).await;
    for turn_id in ["t1", "t2", "t3"] {
        let ctx = turn(turn_id);
        for _ in 0..2 {
            call(&tools, "crash", json!({}), &ctx).await.unwrap_err();
        }
        assert_eq!(
            call(&tools, "echo", json!({"text": "ok"}), &ctx)
                .await
                .unwrap(),
            "ok"
        );
    }
    assert_eq!(server.problem(), None);
}

#[tokio::test]
async fn garbage_on_the_wire_fails_the_call_it_hits_and_nothing_else() {
    let (_server, tools) = one("noisy", fixture(&[])).await;
    let (_other, other_tools) = one("calm", fixture(&[])).await;
    let ctx = turn("t1");
    let cases = [
        ("garbage", "wrote a line that is not JSON to its output"),
        ("malformed", "sent a message that is not JSON-RPC"),
        ("close_stdout", "closed its output without exiting"),
    ];
    for (fault, said) in cases {
        let err = call(&tools, fault, json!({}), &ctx)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(said), "{fault}: {err}");
        assert_eq!(
            call(&tools, "echo", json!({"text": fault}), &ctx)
                .await
                .unwrap(),
            fault,
            "started again after {fault}"
        );
        assert_eq!(
            call(&other_tools, "echo", json!({"text": "calm"}), &ctx)
                .await
                .unwrap(),
            "calm",
            "the other server is untouched by {fault}"
        );
    }
    // An answer to an id nobody asked for is ignored; the real answer still counts.
    assert_eq!(
        call(&tools, "stray", json!({}), &ctx).await.unwrap(),
        "answered after a stray"
    );
    // 10 MB on stderr: drained as it comes, so the server never blocks on it.
    assert_eq!(
        call(&tools, "flood_stderr", json!({"bytes": 10_000_000}), &ctx)
            .await
            .unwrap(),
        "flooded"
    );
}

#[tokio::test]
async fn a_streamable_http_server_works_and_its_faults_cost_one_call() {
    let fixture = McpHttpFixture::start().await;
    let mut config = McpServerConfig::url(fixture.url());
    if let McpTransport::Url { headers, .. } = &mut config.transport {
        headers.insert("Authorization".into(), "Bearer t0ken".into());
    }
    let (_server, tools) = one("remote", config).await;
    let ctx = turn("t1");
    assert_eq!(
        call(&tools, "echo", json!({"text": "pebble"}), &ctx)
            .await
            .unwrap(),
        "pebble"
    );
    assert_eq!(
        call(&tools, "streamed", json!({"text": "in events"}), &ctx)
            .await
            .unwrap(),
        "in events",
        "an answer sent as server-sent events"
    );
    let text = call(&tools, "big", json!({"bytes": 10_000_000}), &ctx)
        .await
        .unwrap();
    assert_eq!(text.len(), 10_000_000);
    let err = failure(&tools, "garbage", json!({}), &ctx).await;
    assert!(err.contains("not JSON"), "{err}");
    let err = failure(&tools, "crash", json!({}), &ctx).await;
    assert!(err.contains("started again for the next call"), "{err}");
    assert_eq!(
        call(&tools, "echo", json!({"text": "again"}), &ctx)
            .await
            .unwrap(),
        "again"
    );

    let messages = fixture.messages();
    let sessions = fixture.sessions();
    for (message, session) in messages.iter().zip(&sessions) {
        if message["method"] == "initialize" {
            assert_eq!(session, &None, "initialize comes without a session");
        } else {
            assert_eq!(
                session.as_deref(),
                Some("fixture-session-1"),
                "every later message carries the session it was given: {message}"
            );
        }
    }
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["method"] == "initialize")
            .count(),
        3,
        "started, then again after the garbage and after the crash"
    );

    // A call past its server's timeout is cancelled there. On a server of its own:
    // the timeout short enough to wait out would also cut the 10 MB answer above on a
    // busy machine (it did, at 2 s).
    let impatient = McpHttpFixture::start().await;
    let mut config = McpServerConfig::url(impatient.url());
    config.timeout_ms = Some(2000);
    let (_server, tools) = one("remote", config).await;
    let err = failure(&tools, "hang", json!({}), &ctx).await;
    assert!(err.contains("within 2 s"), "{err}");
    // The notice is sent as the call fails, not waited for: wait for it to arrive.
    let cancels = |messages: &[Value]| {
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while cancels(&impatient.messages()) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let messages = impatient.messages();
    assert_eq!(
        cancels(&messages),
        1,
        "the timed-out call was cancelled: {messages:?}"
    );
}
