//! What keeping a command's changes for Restore costs: `true` run by `run_command` in
//! a workspace of 10,000 small files (100 folders of 100), with the workspace's changes
//! kept (its files noted before and after) and without, alternating, the median of
//! each. Then the same workspace with one file changed by the command, to show the
//! change is found.
//!
//! `cargo bench -p cairn-tools --bench noting` (`SAMPLES=n` to change the 30).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_tools::workspace::{Before, WriteLog};
use cairn_tools::{RunCommand, Tool, ToolContext, Workspace};
use serde_json::json;

/// A log that drops what it is told: the cost measured is the noting.
struct Dropped;

impl WriteLog for Dropped {
    fn wrote(&self, _: &Path, _: &str, _: Before, _: &[u8]) {}
    fn removed(&self, _: &Path, _: &str, _: Before) {}
}

fn main() {
    let samples: usize = std::env::var("SAMPLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    for folder in 0..100 {
        let folder_path = dir.path().join(format!("part{folder:03}"));
        std::fs::create_dir(&folder_path).unwrap();
        for file in 0..100 {
            std::fs::write(
                folder_path.join(format!("note{file:03}.md")),
                format!("# Note {folder}.{file}\n\nA line or two of text, as notes have.\n"),
            )
            .unwrap();
        }
    }
    let context = |logged: bool| {
        let workspace = Workspace::open(dir.path()).unwrap();
        let workspace = if logged {
            workspace.with_log(Arc::new(Dropped))
        } else {
            workspace
        };
        ToolContext {
            workspace: Some(Arc::new(workspace)),
            ..ToolContext::default()
        }
    };
    let (kept, bare) = (context(true), context(false));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = |ctx: &ToolContext, command: &str| {
        let began = Instant::now();
        let out = runtime
            .block_on(RunCommand.call(json!({ "command": command }), ctx))
            .unwrap();
        (began.elapsed(), out.content)
    };
    run(&kept, "true");
    run(&bare, "true");
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        with.push(run(&kept, "true").0);
        without.push(run(&bare, "true").0);
    }
    let (with, without) = (median(&mut with), median(&mut without));
    println!("`true` by run_command in 10,000 files, median of {samples}:");
    println!("  changes not kept  {:>8.1} ms", ms(without));
    println!("  changes kept      {:>8.1} ms", ms(with));
    println!(
        "  noting adds       {:>8.1} ms",
        ms(with.saturating_sub(without))
    );
    let (took, out) = run(&kept, "echo changed >> part050/note050.md");
    println!(
        "one file changed: {:.1} ms, its card ends: {}",
        ms(took),
        out.lines().last().unwrap_or_default()
    );
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
