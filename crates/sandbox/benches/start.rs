//! What the sandbox adds to a command's start: `sh -c true`, spawned and waited for,
//! unconfined and confined (a workspace, the temp folder and a scratch folder
//! writable; no network), alternating, the median of each.
//!
//! `cargo bench -p cairn-sandbox --bench start` (`SAMPLES=n` to change the 200).

#![allow(clippy::expect_used, clippy::print_stdout)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use cairn_sandbox::{Policy, confine, support};

fn main() {
    let samples: usize = std::env::var("SAMPLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    println!("{}", support().said());
    let workspace = tempfile::tempdir().expect("a temp folder");
    let scratch = tempfile::tempdir().expect("a temp folder");
    let policy = Policy {
        writable: vec![
            workspace.path().to_owned(),
            std::env::temp_dir(),
            scratch.path().to_owned(),
        ],
        network: false,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (mut bare, mut confined) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        // One of each first: the page cache and the dynamic loader warm up.
        start(&policy, false).await;
        start(&policy, true).await;
        for _ in 0..samples {
            bare.push(start(&policy, false).await);
            confined.push(start(&policy, true).await);
        }
    });
    let (bare, confined) = (median(&mut bare), median(&mut confined));
    println!("`sh -c true`, median of {samples}:");
    println!("  unconfined  {:>7.2} ms", ms(bare));
    println!("  sandboxed   {:>7.2} ms", ms(confined));
    println!(
        "  the sandbox adds {:.2} ms ({:.2}×)",
        ms(confined.saturating_sub(bare)),
        confined.as_secs_f64() / bare.as_secs_f64()
    );
}

/// Spawns `sh -c true` and waits for it, the sandbox made for it counted in.
async fn start(policy: &Policy, sandboxed: bool) -> Duration {
    let began = Instant::now();
    let mut command = tokio::process::Command::new("sh");
    command
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if sandboxed {
        confine(&mut command, policy).expect("the sandbox");
    }
    let status = command.status().await.expect("sh runs");
    assert!(status.success());
    began.elapsed()
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
