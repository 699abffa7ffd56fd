//! How the MCP client copes with large results: the time a result takes to arrive and
//! the memory the process needs while it does, for a result that fits (10 MB of text,
//! about 11.6 MB of JSON) and one past the 64 MB cap (100 MB of text), over stdio and
//! over streamable HTTP. Run with `cargo bench -p cairn-tools --bench mcp_results`.
//!
//! Peak memory is the process's peak resident set (VmHWM) during the call, less what
//! was resident before it; the peak is reset before each call (`/proc/self/clear_refs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_testkit::mcp::{McpHttpFixture, stdio_fixture};
use cairn_tools::mcp::{McpConfig, McpPolicy, McpServerConfig, start_allowed};
use cairn_tools::{Tool, ToolContext};
use serde_json::json;

const RUNS: usize = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http_fixture = McpHttpFixture::start().await;
        let transports = [
            (
                "stdio",
                McpServerConfig::command(stdio_fixture().display().to_string(), &[]),
            ),
            ("http", McpServerConfig::url(http_fixture.url())),
        ];
        println!("| transport | result | outcome | median time | peak memory over the start |");
        println!("|---|---|---|---|---|");
        for (transport, config) in transports {
            let big = server_tool(config).await;
            for (label, bytes) in [("10 MB", 10_000_000u64), ("100 MB", 100_000_000)] {
                let mut times = Vec::new();
                let mut peaks = Vec::new();
                let mut outcome = String::new();
                for run in 0..RUNS {
                    reset_peak();
                    let before = rss_kib("VmRSS");
                    let started = Instant::now();
                    let result = big
                        .call(
                            json!({"bytes": bytes}),
                            &ToolContext {
                                turn: Some(format!("run{run}")),
                                ..ToolContext::default()
                            },
                        )
                        .await;
                    times.push(started.elapsed());
                    peaks.push(rss_kib("VmHWM").saturating_sub(before));
                    outcome = match result {
                        Ok(output) => format!("arrived ({} bytes)", output.content.len()),
                        Err(err) => format!("refused: {}", short(&err.to_string())),
                    };
                }
                times.sort();
                peaks.sort_unstable();
                println!(
                    "| {transport} | {label} | {outcome} | {} ms | {} MiB |",
                    times[RUNS / 2].as_millis(),
                    peaks[RUNS / 2] / 1024
                );
            }
        }
    });
}

async fn server_tool(config: McpServerConfig) -> Arc<dyn Tool> {
    let mut all = McpConfig::default();
    all.servers.insert(
        "bench".into(),
        McpServerConfig {
            timeout_ms: Some(Duration::from_secs(120).as_millis() as u64),
            ..config
        },
    );
    let policy = McpPolicy {
        allowed: vec!["bench".into()],
        ..McpPolicy::default()
    };
    let (servers, failures) = start_allowed(
        &all,
        &policy,
        cairn_providers::http::client_builder().build().unwrap(),
    )
    .await;
    assert!(failures.is_empty(), "{failures:?}");
    servers[0]
        .tools()
        .into_iter()
        .find(|tool| tool.name() == "mcp__bench__big")
        .unwrap()
}

/// Resets the peak resident set of this process to what is resident now.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("Linux's /proc/self/clear_refs");
}

/// A `/proc/self/status` figure in KiB.
fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|value| value.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

fn short(text: &str) -> String {
    text.split(';').next().unwrap_or(text).to_owned()
}
