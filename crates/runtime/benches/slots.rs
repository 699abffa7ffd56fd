//! How close a plan spread over two machines comes to the schedule their slots allow
//! (rerun with `cargo bench -p cairn-runtime --bench slots`).
//!
//! Two scripted llama.cpp-like servers on their own ports: `slow`, with one slot, whose
//! every answer takes 200 ms, and `fast`, with four, whose answers take 100 ms. A plan
//! of six independent steps, three on a profile of each, runs to its end; the servers
//! count the requests they answered at once. The ideal schedule is the slow box's
//! three steps one after another (600 ms) with the fast box's three side by side
//! within it; the figure is the median of the measured time over the ideal, and the
//! most requests either server ever had at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use cairn_core::Limits;
use cairn_protocol::desktop::SavedEndpoint;
use cairn_protocol::{Dialect, PermissionMode, TurnStatus};
use cairn_providers::Sampling;
use cairn_runtime::{ModelChoice, Runtime};
use cairn_store::Store;
use cairn_testkit::machines::{self, CHAT};
use cairn_testkit::{ScriptedModel, ScriptedTurn};

const RUNS: usize = 7;
const SLOW: Duration = Duration::from_millis(200);
const FAST: Duration = Duration::from_millis(100);

/// One run: the plan's wall time, and the peaks on the slow and the fast machine.
async fn run_once() -> (Duration, usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    for name in ["slow", "fast"] {
        machines::profile_on(&agents, name, name);
    }
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    let runtime = Runtime::with_agents_dir(store, Limits::default(), Some(agents));
    let slow = machines::llama_box(1, SLOW, "step done").await;
    let fast = machines::llama_box(4, FAST, "step done").await;
    for (name, server) in [("slow", &slow), ("fast", &fast)] {
        runtime
            .add_server(SavedEndpoint {
                name: name.into(),
                dialect: Dialect::Openai,
                base_url: server.url(),
                slots: None,
            })
            .await
            .unwrap();
    }
    let home = ScriptedModel::new();
    home.root([
        ScriptedTurn::call("create_plan", machines::spread_plan(6, &["fast", "slow"])),
        ScriptedTurn::text("Done."),
    ]);
    let thread = runtime
        .new_thread("six", PermissionMode::Auto)
        .await
        .unwrap();
    let choice = ModelChoice {
        client: std::sync::Arc::new(home),
        dialect: "openai".into(),
        base_url: "http://127.0.0.1:9".into(),
        model: "home".into(),
        sampling: Sampling::default(),
    };
    let started = Instant::now();
    let live = runtime.send(&thread.id, "six", choice).await.unwrap();
    let outcome = live.finished().await.unwrap();
    let took = started.elapsed();
    assert_eq!(outcome.status, TurnStatus::Completed);
    (took, slow.peak_in_flight(CHAT), fast.peak_in_flight(CHAT))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ideal = (SLOW * 3).max(FAST);
    let mut ratios = Vec::new();
    let (mut slow_peak, mut fast_peak) = (0, 0);
    for _ in 0..RUNS {
        let (took, slow, fast) = runtime.block_on(run_once());
        ratios.push(took.as_secs_f64() / ideal.as_secs_f64());
        slow_peak = slow_peak.max(slow);
        fast_peak = fast_peak.max(fast);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "six steps on two machines, {RUNS} runs: median {:.2}× the ideal {} ms \
         (best {:.2}×, worst {:.2}×); most at once: slow {slow_peak} of 1 slot, fast \
         {fast_peak} of 4",
        ratios[RUNS / 2],
        ideal.as_millis(),
        ratios[0],
        ratios[RUNS - 1],
    );
    assert_eq!(
        slow_peak, 1,
        "the slow machine was sent more than its one slot"
    );
    assert!(
        fast_peak <= 4,
        "the fast machine was sent more than its four slots"
    );
}
