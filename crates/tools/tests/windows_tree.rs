//! On Windows a command's whole process tree ends with it, on a timeout and on Stop,
//! as its Job Object promises (`process_tree/windows.rs`). Run under Wine by
//! `scripts/windows-check`.
//!
//! The tree: `cmd /C` (the tool's shell) starts a second `cmd`, which waits with
//! `ping` (Wine has no `timeout.exe`) and then writes `late.txt`. Ending only the
//! first `cmd` would leave the second to write it. How long it takes to write it is
//! measured first, on this machine as busy as it is, and the other cases wait twice
//! that before they look.

#![cfg(windows)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use cairn_tools::{RunCommand, Tool, ToolError};
use common::workspace;
use serde_json::json;

/// A grandchild that writes `late.txt` about four seconds after it starts.
const TREE: &str = r#"cmd /C "ping -n 5 127.0.0.1 >nul & echo late> late.txt""#;

/// How long the tree takes to write `late.txt` when nothing ends it.
async fn time_to_write() -> Duration {
    let (dir, ctx) = workspace();
    let started = Instant::now();
    let out = RunCommand
        .call(json!({"command": TREE}), &ctx)
        .await
        .unwrap()
        .content;
    assert!(out.contains("exit code: 0"), "{out}");
    assert!(
        dir.path().join("late.txt").exists(),
        "left alone, the tree writes its file: {out}"
    );
    started.elapsed()
}

/// Waits twice as long as the tree took to write its file, then says whether it did.
async fn wrote_after(dir: &Path, writes_in: Duration) -> bool {
    tokio::time::sleep(writes_in * 2).await;
    dir.join("late.txt").exists()
}

#[tokio::test]
async fn a_timeout_ends_the_whole_tree() {
    let writes_in = time_to_write().await;
    let (dir, ctx) = workspace();
    let out = RunCommand
        .call(json!({"command": TREE, "timeout_ms": 500}), &ctx)
        .await
        .unwrap()
        .content;
    assert!(out.contains("timed out after 500 ms"), "{out}");
    assert!(
        !wrote_after(dir.path(), writes_in).await,
        "the second cmd outlived the command it was started by"
    );
}

#[tokio::test]
async fn stop_ends_the_whole_tree() {
    let writes_in = time_to_write().await;
    let (dir, ctx) = workspace();
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move { RunCommand.call(json!({"command": TREE}), &ctx).await });
    tokio::time::sleep(writes_in / 4).await;
    cancel.cancel();
    assert_eq!(call.await.unwrap().unwrap_err(), ToolError::Cancelled);
    assert!(
        !wrote_after(dir.path(), writes_in).await,
        "the second cmd outlived the command the user stopped"
    );
}
