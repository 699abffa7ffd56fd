//! The desktop app's figures, printed as medians (run by `scripts/bench-desktop`, which
//! builds the release UI and the yardstick app first and gives this a virtual display
//! and a session bus):
//!
//! - the release binary's size;
//! - cold start: from the app's process starting to the first screen painted (the
//!   page's `cairn:ready` mark), with 20 chats in the list;
//! - rendering a stored thread whose answer holds 500 tool cards: from the click on it
//!   in the sidebar to the frame after all 500 cards are in the page;
//! - idle memory: the PSS of the app and its WebKit processes, 10 s after launch,
//!   against the same figure for an empty Tauri + Leptos window
//!   (`bench/empty-window`, path in `CAIRN_BASELINE_APP`) painting the way Cairn
//!   paints on this machine; both on WebKit's GPU path as well.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    dead_code
)]

#[path = "../tests/e2e/harness.rs"]
mod harness;
#[path = "../tests/e2e/session.rs"]
mod session;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cairn_core::TurnOutcome;
use cairn_protocol::{ChatMessage, ExecutionTree, ExecutionTreeNode, TurnStatus, Usage};
use cairn_store::{NewThread, Store};
use cairn_testkit::FakeServer;
use harness::{APP, App, Home};

const BIG_THREAD: &str = "Five hundred tool cards";
const SMALL_THREAD: &str = "A short chat";
const RUNS: usize = 10;

#[tokio::main]
async fn main() {
    let server = FakeServer::start().await;
    let home = Home::new();
    seed(&home.db()).await;

    let size = std::fs::metadata(APP).expect("the release binary").len();
    println!("release binary: {:.1} MB ({size} bytes)", size as f64 / 1e6);

    let starts: Vec<f64> = {
        let mut samples = Vec::new();
        for _ in 0..RUNS {
            samples.push(cold_start(&home, &server.url()).await);
        }
        samples
    };
    println!(
        "cold start to the first screen: median {:.0} ms (runs: {})",
        median(starts.clone()),
        list(&starts)
    );

    let renders = render_big_thread(&home, &server.url()).await;
    println!(
        "500 tool cards rendered: median {:.0} ms (runs: {})",
        median(renders.clone()),
        list(&renders)
    );

    let env = harness::app_env(&home, &server.url());
    let Some(baseline) = std::env::var_os("CAIRN_BASELINE_APP") else {
        let cairn = idle_pss(Path::new(APP), &env);
        println!(
            "idle PSS, app + WebKit: Cairn {:.0} MiB (set CAIRN_BASELINE_APP to compare \
             with an empty window)",
            cairn.kib / 1024.0
        );
        return;
    };
    idle_memory(Path::new(&baseline), &env);
}

/// Idle memory against the yardstick. Cairn chooses how WebKit paints
/// (src-tauri/rendering.rs), so the yardstick is measured painting the same way; both
/// are also measured on WebKit's GPU path, its default. Shared pages are split among
/// the processes that map them, so the apps take turns, each with the same neighbours.
fn idle_memory(baseline: &Path, env: &[(&'static str, OsString)]) {
    let gpu_path: Vec<_> = env
        .iter()
        .cloned()
        .chain([(CPU_RENDERING, OsString::from("0"))])
        .collect();
    let (mut shipped, mut empty_same, mut cairn_gpu, mut empty_gpu) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut cpu_rendering = false;
    for _ in 0..5 {
        let cairn = idle_pss(Path::new(APP), env);
        cpu_rendering = cairn.cpu_rendering;
        shipped.push(cairn.kib);
        let same: Vec<_> = env
            .iter()
            .cloned()
            .chain(cpu_rendering.then(|| (CPU_RENDERING, OsString::from("1"))))
            .collect();
        empty_same.push(idle_pss(baseline, &same).kib);
        cairn_gpu.push(idle_pss(Path::new(APP), &gpu_path).kib);
        empty_gpu.push(idle_pss(baseline, &gpu_path).kib);
    }
    let mib = |samples: Vec<f64>| median(samples) / 1024.0;
    let (shipped, empty_same, cairn_gpu, empty_gpu) = (
        mib(shipped),
        mib(empty_same),
        mib(cairn_gpu),
        mib(empty_gpu),
    );
    let painting = if cpu_rendering {
        "on the CPU"
    } else {
        "on the GPU"
    };
    println!(
        "idle PSS, app + WebKit, both painting as Cairn does here ({painting}): Cairn \
         {shipped:.0} MiB, empty Tauri + Leptos window {empty_same:.0} MiB, ratio {:.2}×",
        shipped / empty_same
    );
    println!(
        "idle PSS, both on WebKit's GPU path: Cairn {cairn_gpu:.0} MiB, empty window \
         {empty_gpu:.0} MiB, ratio {:.2}×",
        cairn_gpu / empty_gpu
    );
    println!(
        "idle PSS, Cairn as it runs here against the empty window as WebKit sets it up: \
         ratio {:.2}×",
        shipped / empty_gpu
    );
}

/// One launch: the process's age when the page says it is painted.
async fn cold_start(home: &Home, base_url: &str) -> f64 {
    let app = App::launch(home, base_url).await;
    app.wait_for_js("return performance.getEntriesByName('cairn:ready').length > 0;")
        .await;
    let pid = harness::processes_running(&canonical(APP))
        .into_iter()
        .next()
        .expect("the app's process");
    let before = process_age_ms(&pid);
    let since_ready = app
        .js("return performance.now() - performance.getEntriesByName('cairn:ready')[0].startTime;")
        .await
        .as_f64()
        .expect("a number");
    let after = process_age_ms(&pid);
    app.quit().await;
    (before + after) / 2.0 - since_ready
}

/// Opens the small thread, then the big one, `RUNS` times.
async fn render_big_thread(home: &Home, base_url: &str) -> Vec<f64> {
    let app = App::launch(home, base_url).await;
    let mut samples = Vec::new();
    for _ in 0..RUNS {
        app.wait_for_text(".thread-title", SMALL_THREAD)
            .await
            .click()
            .await
            .unwrap();
        app.wait_for_text(".message.assistant", "A short answer.")
            .await;
        let took = app
            .driver
            .execute_async(
                r#"
                const done = arguments[arguments.length - 1];
                const title = [...document.querySelectorAll('.thread-title')]
                    .find(e => e.innerText.includes(arguments[0]));
                const start = performance.now();
                const check = () => {
                    if (document.querySelectorAll('.card').length >= 500) {
                        requestAnimationFrame(() => done(performance.now() - start));
                    } else {
                        requestAnimationFrame(check);
                    }
                };
                title.click();
                check();
                "#,
                vec![serde_json::json!(BIG_THREAD)],
            )
            .await
            .expect("the big thread renders");
        samples.push(took.json().as_f64().expect("a number"));
        assert_eq!(app.count(".card").await, 500);
    }
    app.quit().await;
    samples
}

/// WebKitGTK's switch to Skia's CPU rasterizer (see src-tauri/rendering.rs).
const CPU_RENDERING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// One idle launch.
struct Idle {
    /// The PSS (KiB) of the program and every process under it.
    kib: f64,
    /// Whether its web process was started with CPU rendering on.
    cpu_rendering: bool,
}

/// Launches `program` and measures it after 10 s of idling.
fn idle_pss(program: &Path, env: &[(&'static str, OsString)]) -> Idle {
    let mut child = Command::new(program)
        .env_remove(CPU_RENDERING)
        .envs(env.iter().cloned())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the app starts");
    std::thread::sleep(Duration::from_secs(10));
    let tree = tree_of(child.id());
    let kib = tree.iter().map(|pid| pss_kib(*pid)).sum::<u64>() as f64;
    let cpu_rendering = tree.iter().any(|pid| {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        comm.starts_with("WebKitWebProces")
            && environ
                .split(|byte| *byte == 0)
                .any(|var| var.starts_with(CPU_RENDERING.as_bytes()) && !var.ends_with(b"=0"))
    });
    let _ = child.kill();
    let _ = child.wait();
    // WebKit's helpers outlive a killed parent for a moment.
    std::thread::sleep(Duration::from_secs(1));
    Idle { kib, cpu_rendering }
}

/// `pid` and all its descendants.
fn tree_of(pid: u32) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut next = 0;
    while next < tree.len() {
        tree.extend(harness::children_of(tree[next]));
        next += 1;
    }
    tree
}

fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// How long ago (ms) process `pid` started, to the kernel's 10 ms clock.
fn process_age_ms(pid: &str) -> f64 {
    let ticks_per_second = 100.0; // USER_HZ on Linux
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the app's stat");
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    // Field 22 (starttime) is the 20th after the command name.
    let started: f64 = after.split(' ').nth(19).unwrap().parse().unwrap();
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (uptime - started / ticks_per_second) * 1e3
}

fn canonical(path: &str) -> PathBuf {
    Path::new(path)
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(path))
}

/// 20 chats, one of them with an answer of 500 tool cards.
async fn seed(db: &Path) {
    let store = Store::open(db).await.expect("the bench database");
    for n in 0..18 {
        let thread = store
            .create_thread(NewThread {
                title: format!("Earlier chat {n}"),
                ..NewThread::default()
            })
            .await
            .unwrap();
        answer(&store, &thread.id, "Hello", "Hi.", 0).await;
    }
    let small = store
        .create_thread(NewThread {
            title: SMALL_THREAD.into(),
            ..NewThread::default()
        })
        .await
        .unwrap();
    answer(&store, &small.id, "Hello", "A short answer.", 0).await;
    let big = store
        .create_thread(NewThread {
            title: BIG_THREAD.into(),
            ..NewThread::default()
        })
        .await
        .unwrap();
    answer(&store, &big.id, "Read every file", "Read them all.", 500).await;
}

async fn answer(store: &Store, thread: &str, prompt: &str, text: &str, cards: usize) {
    let start = store.begin_turn(thread, prompt).await.unwrap();
    let outcome = TurnOutcome {
        thread_id: thread.into(),
        message_id: start.assistant_id.clone(),
        status: TurnStatus::Completed,
        text: text.into(),
        reasoning: String::new(),
        messages: vec![ChatMessage::assistant(text)],
        tree: ExecutionTree::new(
            (0..cards)
                .map(|i| ExecutionTreeNode {
                    id: format!("call_{i}"),
                    parent_id: None,
                    name: "read_file".into(),
                    title: None,
                    args_preview: Some(format!("{{\"path\":\"src/module_{i}/lib.rs\"}}")),
                    result_preview: Some(format!("pub fn f{i}() -> u32 {{ {i} }}\n")),
                    is_error: Some(false),
                    duration_ms: 3,
                    ..ExecutionTreeNode::default()
                })
                .collect(),
        ),
        usage: Usage::default(),
        calls: Vec::new(),
        error: None,
        budget: None,
        switch: None,
    };
    cairn_runtime::commit_turn(store, thread, &start.assistant_id, &outcome)
        .await
        .unwrap();
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn list(samples: &[f64]) -> String {
    samples
        .iter()
        .map(|s| format!("{s:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}
