//! MCP servers: allowed, trusted, gated, and misbehaving.

use super::support::*;

#[tokio::test]
async fn mcp_servers_start_only_when_allowed_and_their_tools_are_gated() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let config = dir.path().join("mcp.json");
    let fixture = mcp_fixture();
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "fixture": {"command": fixture, "args": []},
            "ghost": {"command": "/nonexistent/server"}
        }})
        .to_string(),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let listed = output(cairn(&["mcp", "list", "--db", &db, "--mcp-config", cfg]))
        .await
        .stdout;
    assert!(
        listed.contains("fixture\tnot allowed\tnot trusted\t")
            && listed.contains("ghost\tnot allowed\tnot trusted\t/nonexistent/server"),
        "{listed}"
    );
    let out = output(cairn(&[
        "mcp",
        "allow",
        "nobody",
        "--db",
        &db,
        "--mcp-config",
        cfg,
    ]))
    .await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("the configured ones are: fixture, ghost"),
        "{}",
        out.stderr
    );

    let server = FakeServer::start().await;
    let url = server.url();
    let run = |prompt: &'static str| {
        let (db, url, cfg) = (db.clone(), url.clone(), cfg.to_owned());
        async move {
            output(cairn(&[
                "run",
                "--db",
                &db,
                "--base-url",
                &url,
                "--model",
                "m",
                "--mode",
                "default",
                "--json",
                "--mcp-config",
                &cfg,
                prompt,
            ]))
            .await
        }
    };
    // Not allowed yet: the model sees no MCP tools.
    server.push(CHAT, Reply::sse(sse::text(&["no tools"])));
    assert_eq!(run("hi").await.code, 0);
    let tools = server.requests_to(CHAT)[0].json()["tools"].clone();
    assert!(!tools.to_string().contains("mcp__"), "{tools}");

    assert_eq!(
        output(cairn(&[
            "mcp",
            "allow",
            "fixture",
            "--db",
            &db,
            "--mcp-config",
            cfg
        ]))
        .await
        .stdout,
        "fixture may start\n"
    );
    assert_eq!(
        output(cairn(&[
            "mcp",
            "allow",
            "ghost",
            "--db",
            &db,
            "--mcp-config",
            cfg
        ]))
        .await
        .code,
        0
    );
    let both_tools = || {
        Reply::sse(sse::tool_calls(&[
            (
                "c1",
                "mcp__fixture__echo",
                json!({"text": "read-only runs"}),
            ),
            (
                "c2",
                "mcp__fixture__shout",
                json!({"text": "external asks"}),
            ),
        ]))
    };
    let tool_results = |request: usize| -> Vec<String> {
        server.requests_to(CHAT)[request].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    };
    // Allowed but not trusted: the server's read-only mark is only its claim.
    server.push(CHAT, both_tools());
    server.push(CHAT, Reply::sse(sse::text(&["done"])));
    assert_eq!(run("use the tools").await.code, 0);
    let untrusted = tool_results(2);
    assert!(
        untrusted
            .iter()
            .all(|result| result.contains("stdin is closed")),
        "every MCP tool asks first: {untrusted:?}"
    );
    let trust = output(cairn(&[
        "mcp",
        "trust",
        "fixture",
        "--db",
        &db,
        "--mcp-config",
        cfg,
    ]))
    .await;
    assert_eq!(trust.code, 0, "{}", trust.stderr);
    let listed = output(cairn(&["mcp", "list", "--db", &db, "--mcp-config", cfg]))
        .await
        .stdout;
    assert!(listed.contains("fixture\tallowed\ttrusted\t"), "{listed}");

    server.push(CHAT, both_tools());
    server.push(CHAT, Reply::sse(sse::text(&["done"])));
    let out = run("use the tools").await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("MCP server `ghost` could not start")
            && out.stderr.contains("its tools are not available"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr.matches("`ghost` could not start").count(),
        1,
        "said once: {}",
        out.stderr
    );
    let offered = server.requests_to(CHAT)[3].json()["tools"].to_string();
    assert!(
        offered.contains("mcp__fixture__echo") && offered.contains("mcp__fixture__crash"),
        "{offered}"
    );
    let contents = tool_results(4);
    assert_eq!(
        contents[0], "read-only runs",
        "a trusted server marked echo read-only"
    );
    assert!(
        contents[1].contains("stdin is closed"),
        "an external MCP tool asks first: {contents:?}"
    );
}

#[tokio::test]
async fn a_misbehaving_mcp_server_costs_tool_errors_not_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let config = dir.path().join("mcp.json");
    // The same fixture twice: `slow` times out in 5 s, for the hung call; `bad` gives
    // its calls as long as a busy machine needs to pass 10 MB, so the big answer is
    // never cut by the short timeout meant for the hang.
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "bad": {"command": mcp_fixture(), "timeout_ms": 120_000},
            "slow": {"command": mcp_fixture(), "timeout_ms": 5000},
        }})
        .to_string(),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    for name in ["bad", "slow"] {
        let allowed = output(cairn(&[
            "mcp",
            "allow",
            name,
            "--db",
            &db,
            "--mcp-config",
            cfg,
        ]))
        .await;
        assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    }

    let server = FakeServer::start().await;
    // Calls run side by side: the crash gets a round of its own.
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[
            ("c1", "mcp__bad__big", json!({"bytes": 10_000_000})),
            ("c2", "mcp__slow__hang", json!({})),
        ])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("c3", "mcp__bad__crash", json!({}))])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c4",
            "mcp__bad__echo",
            json!({"text": "still here"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Coped."])));
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--mcp-config",
        cfg,
        "use the bad tools",
    ]))
    .await;
    // A hung call costs its own 5 s timeout (its result says so, below), not the
    // turn's wall-clock budget, which would have ended the run with 4. Said by what
    // the run reports, not by how long it took: a busy machine takes longer.
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results: Vec<String> = server.requests_to(CHAT)[3].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 4);
    assert!(
        results[0].len() <= 50_000
            && results[0].contains("cut here. Read them with read_tool_result"),
        "10 MB arrive and are cut like any result: {} bytes: {}",
        results[0].len(),
        &results[0][..results[0].len().min(300)]
    );
    assert!(
        results[1].contains("did not answer `hang` within 5 s"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("started again for the next call"),
        "{}",
        results[2]
    );
    assert_eq!(results[3], "still here", "the server was started again");
}
