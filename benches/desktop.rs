//! The desktop app's figures, printed as medians (run by `scripts/bench-desktop`, which
//! builds the release UI and the yardstick app first and gives this a virtual display
//! and a session bus):
//!
//! - the release binary's size;
//! - cold start: from the app's process starting to the first screen painted (the
//!   page's `cairn:ready` mark), with 20 chats in the list;
//! - rendering a stored thread whose answer holds 500 tool cards: from the click on it
//!   in the sidebar to the frame after all 500 cards are in the page;
//! - a long answer streamed at a fast model's pace: the CPU time the web process and
//!   the app spend drawing it;
//! - idle memory: the PSS of the app and its WebKit processes, 10 s after launch,
//!   against the same figure for an empty Tauri + Leptos window
//!   (`bench/empty-window`, path in `CAIRN_BASELINE_APP`) set up the way Cairn sets
//!   up WebKit on this machine; both on WebKit's GPU path, composited, as well, and
//!   the empty window as WebKit sets it up; and how much of Cairn's own code stays
//!   resident (the link's startup order, `src-tauri/startup-order.txt`, keeps it small).
//!
//! The app measured is the release build that ships, named in `CAIRN_E2E_APP`: the
//! build cargo makes for a bench turns on what the dev-dependencies ask of shared crates.
//!
//! `CAIRN_BENCH=memory`, `=stream` or `=timings` (cold start and the 500 cards)
//! measures that alone.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    dead_code
)]

#[path = "../tests/e2e/harness.rs"]
mod harness;
#[path = "desktop/seed.rs"]
mod seed;
#[path = "../tests/e2e/session.rs"]
mod session;

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cairn_testkit::{FakeServer, Reply, sse};
use harness::{App, Home};

const RUNS: usize = 10;
const CHAT: &str = "POST /v1/chat/completions";
/// The last words of the streamed answer: once drawn, it is all there.
const STREAM_END: &str = "That is the whole program.";

#[tokio::main]
async fn main() {
    let server = FakeServer::start().await;
    let home = Home::new();
    seed::seed(&home.db()).await;

    let size = std::fs::metadata(harness::app())
        .expect("the release binary")
        .len();
    println!("release binary: {:.1} MB ({size} bytes)", size as f64 / 1e6);

    // `CAIRN_BENCH=memory`, `=stream` or `=timings` measures that alone: a change
    // that moves one figure is checked in a fraction of the time.
    match std::env::var("CAIRN_BENCH").as_deref() {
        Ok("memory") => {}
        Ok("stream") => return streaming(&home, &server).await,
        Ok("timings") => return timings(&home, &server).await,
        _ => {
            timings(&home, &server).await;
            streaming(&home, &server).await;
        }
    }

    let env = harness::app_env(&home, &server.url());
    let Some(baseline) = std::env::var_os("CAIRN_BASELINE_APP") else {
        let env: Vec<_> = env
            .into_iter()
            .map(|(name, value)| (OsString::from(name), value))
            .collect();
        let cairn = idle_pss(Path::new(harness::app()), &env);
        println!(
            "idle PSS, app + WebKit: Cairn {:.0} MiB (set CAIRN_BASELINE_APP to compare \
             with an empty window)",
            cairn.kib / 1024.0
        );
        return;
    };
    idle_memory(Path::new(&baseline), &env);
}

/// Cold start and the 500 cards, each the median of its runs.
async fn timings(home: &Home, server: &FakeServer) {
    let url = &server.url();
    let starts: Vec<f64> = {
        let mut samples = Vec::new();
        for _ in 0..RUNS {
            samples.push(cold_start(home, url).await);
        }
        samples
    };
    println!(
        "cold start to the first screen: median {:.0} ms (runs: {})",
        median(starts.clone()),
        list(&starts)
    );

    let renders = render_big_thread(home, url).await;
    println!(
        "500 tool cards rendered: median {:.0} ms (runs: {})",
        median(renders.clone()),
        list(&renders)
    );
}

/// What a long streamed answer costs, the median of its runs.
async fn streaming(home: &Home, server: &FakeServer) {
    let (streams, (live, reloaded)) = stream_long_answer(home, server).await;
    let pieces = long_answer().len() as f64;
    let webview: Vec<f64> = streams.iter().map(|cost| cost.webview_ms).collect();
    let app: Vec<f64> = streams.iter().map(|cost| cost.app_ms).collect();
    let updates: Vec<f64> = streams.iter().map(|cost| cost.updates).collect();
    println!(
        "a long answer streamed ({pieces} pieces, a {CODE_LINES}-line code block): CPU in \
         the web process median {:.0} ms ({:.0} µs a piece; runs: {}), in the app {:.0} ms \
         ({:.0} µs a piece); the page changed {:.0} times (runs: {})",
        median(webview.clone()),
        median(webview.clone()) * 1e3 / pieces,
        list(&webview),
        median(app.clone()),
        median(app) * 1e3 / pieces,
        median(updates.clone()),
        list(&updates),
    );
    // After the figures, so a page that differs still says what it cost.
    assert!(
        live == reloaded,
        "the streamed answer's page ({} bytes) differs from the same answer reloaded ({} bytes)",
        live.len(),
        reloaded.len()
    );
    println!(
        "the streamed answer's finished page: {} bytes of HTML, the same as reloaded",
        live.len()
    );
}

/// Idle memory against the yardstick. Cairn chooses how WebKit paints
/// (src-tauri/rendering.rs) and which compilers run its page (src-tauri/jit.rs), so
/// the yardstick is measured set up the same way: whatever WebKit and JSC settings
/// Cairn's web process runs with, the yardstick's gets too. Both are also measured on
/// WebKit's GPU path, its default. Shared pages are split among the processes that map
/// them, so the apps take turns, each with the same neighbours.
fn idle_memory(baseline: &Path, env: &[(&'static str, OsString)]) {
    let with = |extra: &[(String, String)]| -> Vec<(OsString, OsString)> {
        env.iter()
            .map(|(name, value)| (OsString::from(name), value.clone()))
            .chain(
                extra
                    .iter()
                    .map(|(name, value)| (name.into(), value.into())),
            )
            .collect()
    };
    // WebKit's own choice: each switch Cairn sets without a GPU, set to 0.
    let webkits_own: Vec<(String, String)> = cairn_desktop::WEBKIT_SWITCHES_WITHOUT_GPU
        .iter()
        .map(|(name, _)| ((*name).to_owned(), "0".to_owned()))
        .collect();
    let gpu_path = with(&webkits_own);
    let (mut shipped, mut empty_same, mut cairn_gpu, mut empty_gpu, mut empty_default) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut settings = Vec::new();
    let mut code = Vec::new();
    for _ in 0..5 {
        let cairn = idle_pss(Path::new(harness::app()), &with(&[]));
        settings = cairn.web_settings;
        code.push(cairn.code);
        shipped.push(cairn.kib);
        empty_same.push(idle_pss(baseline, &with(&settings)).kib);
        let cairn_on_gpu = idle_pss(Path::new(harness::app()), &gpu_path);
        cairn_gpu.push(cairn_on_gpu.kib);
        empty_gpu.push(idle_pss(baseline, &with(&cairn_on_gpu.web_settings)).kib);
        empty_default.push(idle_pss(baseline, &with(&[])).kib);
    }
    let mib = |samples: Vec<f64>| median(samples) / 1024.0;
    let (shipped, empty_same, cairn_gpu, empty_gpu, empty_default) = (
        mib(shipped),
        mib(empty_same),
        mib(cairn_gpu),
        mib(empty_gpu),
        mib(empty_default),
    );
    let set_up = settings
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(" ");
    println!(
        "idle PSS, app + WebKit, both set up as Cairn sets up WebKit here ({set_up}): Cairn \
         {shipped:.0} MiB, empty Tauri + Leptos window {empty_same:.0} MiB, ratio {:.2}×",
        shipped / empty_same
    );
    let whole = code.first().map_or(0, |(_, size)| *size);
    let resident = median(code.iter().map(|(resident, _)| *resident as f64).collect());
    println!(
        "Cairn's own code resident after idling: {:.1} of {:.1} MiB",
        resident / 1024.0,
        whole as f64 / 1024.0
    );
    println!(
        "idle PSS, both on WebKit's GPU path, composited: Cairn {cairn_gpu:.0} MiB, empty \
         window {empty_gpu:.0} MiB, ratio {:.2}×",
        cairn_gpu / empty_gpu
    );
    println!(
        "idle PSS, Cairn as it runs here against the empty window as WebKit sets it up \
         ({empty_default:.0} MiB): ratio {:.2}×",
        shipped / empty_default
    );
}

/// One launch: the process's age when the page says it is painted.
async fn cold_start(home: &Home, base_url: &str) -> f64 {
    let app = App::launch(home, base_url).await;
    app.wait_for_js("return performance.getEntriesByName('cairn:ready').length > 0;")
        .await;
    let pid = harness::processes_running(&harness::app_exe())
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
        app.wait_for_text(".thread-title", seed::SMALL_THREAD)
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
                vec![serde_json::json!(seed::BIG_THREAD)],
            )
            .await
            .expect("the big thread renders");
        samples.push(took.json().as_f64().expect("a number"));
        assert_eq!(app.count(".card").await, 500);
    }
    app.quit().await;
    samples
}

/// Lines in the code block of the streamed answer.
const CODE_LINES: usize = 80;

/// An answer as a model streams it, a few characters a piece: a paragraph, a Rust
/// block of [`CODE_LINES`] lines, a closing line. Each draw renders the Markdown of
/// the text so far again, the code coloured.
fn long_answer() -> Vec<String> {
    let mut text = String::from(
        "Here is a small program that counts the words in each file it is given, \
         with the totals at the end. It reads every file whole, so it suits files \
         that fit in memory.\n\n```rust\nuse std::collections::HashMap;\n\n",
    );
    for n in 0..CODE_LINES - 3 {
        text.push_str(&format!(
            "let count_{n} = words.get(\"word{n}\").copied().unwrap_or(0); // #{n}\n"
        ));
    }
    text.push_str("fn main() {}\n```\n\n");
    text.push_str(STREAM_END);
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(4)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// What a streamed answer cost: CPU time, and how often the page changed.
struct StreamCost {
    /// The web process: events in, Markdown drawn.
    webview_ms: f64,
    /// The app: the engine, the store, the events out.
    app_ms: f64,
    /// How many times the page changed while the answer streamed (mutation observer
    /// callbacks: one per task that changed the DOM).
    updates: f64,
}

/// Sends a message in a new chat whose answer streams at a fast local model's pace
/// (a piece every 2 ms), `RUNS` times, and measures the CPU time the app and its web
/// process spend from the click on Send to the whole answer drawn. The server waits
/// before answering so the window is listening from the first piece, as with a real
/// model (an answer that is over before the window listens is drawn in one go).
async fn stream_long_answer(
    home: &Home,
    server: &FakeServer,
) -> (Vec<StreamCost>, (String, String)) {
    let pieces = long_answer();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let body = sse::text(&pieces);
    let event_len = body.len() / pieces.len();
    let app = App::launch(home, &server.url()).await;
    let pid = harness::processes_running(&harness::app_exe())
        .into_iter()
        .next()
        .and_then(|pid| pid.parse::<u32>().ok())
        .expect("the app's process");
    let webview = harness::web_process_of(pid).expect("the app's web process");
    let mut samples = Vec::new();
    for _ in 0..RUNS {
        server.push(
            CHAT,
            Reply::sse(body.clone())
                .paced(event_len, Duration::from_millis(2))
                .head_delay(Duration::from_millis(300)),
        );
        app.click(".new-chat").await;
        // The last chat's answer goes before the new one is watched for.
        app.wait_for_js("return !document.querySelector('.turn');")
            .await;
        app.wait_for(".composer-input")
            .await
            .send_keys("Count the words")
            .await
            .unwrap();
        let before = (cpu_ms(webview), cpu_ms(pid));
        // Watched without forcing a layout or asking for frames (`textContent`, a
        // timer): the watching must not cost what is measured.
        let updates = app
            .driver
            .execute_async(
                r#"
                const done = arguments[arguments.length - 1];
                let updates = 0;
                const observer = new MutationObserver(() => { updates += 1; });
                observer.observe(document.body, {
                    subtree: true, childList: true, characterData: true, attributes: true,
                });
                const check = () => {
                    const turn = document.querySelector('.turn.finished');
                    if (turn && turn.textContent.includes(arguments[0])) {
                        observer.disconnect();
                        requestAnimationFrame(() => done(updates));
                    } else {
                        setTimeout(check, 50);
                    }
                };
                document.querySelector('.composer .send').click();
                check();
                "#,
                vec![serde_json::json!(STREAM_END)],
            )
            .await
            .expect("the answer streams");
        samples.push(StreamCost {
            webview_ms: cpu_ms(webview) - before.0,
            app_ms: cpu_ms(pid) - before.1,
            updates: updates.json().as_f64().expect("a count of updates"),
        });
        assert!(app.count(".md pre .hl-k").await > 0, "the code is coloured");
    }
    // The page the stream left is the page a reload draws: the answer drawn by
    // appending ends as the whole answer drawn at once.
    let live = answer_html(&app).await;
    app.click(".new-chat").await;
    app.wait_for_js("return !document.querySelector('.turn');")
        .await;
    app.click(".thread-open").await;
    app.wait_for_text(".turn.finished", STREAM_END).await;
    let reloaded = answer_html(&app).await;
    app.quit().await;
    (samples, (live, reloaded))
}

/// The HTML of the answer on the page.
async fn answer_html(app: &App) -> String {
    app.js("return [...document.querySelectorAll('.turn.finished .md')].map(md => md.innerHTML).join('');")
        .await
        .as_str()
        .expect("the answer's HTML")
        .to_owned()
}

/// The CPU time (user and system, ms) process `pid` has used, to the kernel's 10 ms
/// clock.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("a process's stat");
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    // utime and stime are fields 14 and 15: the 12th and 13th after the name.
    let ticks: f64 = after
        .split(' ')
        .skip(11)
        .take(2)
        .map(|field| field.parse::<f64>().expect("a tick count"))
        .sum();
    ticks * 10.0
}

/// Where the settings the apps run with come from: only what the bench passes.
fn without_inherited_settings(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("WEBKIT_") || name_text.starts_with("JSC_") {
            command.env_remove(&name);
        }
    }
    command
}

/// One idle launch.
struct Idle {
    /// The PSS (KiB) of the program and every process under it.
    kib: f64,
    /// The WebKit and JSC settings its web process was started with.
    web_settings: Vec<(String, String)>,
    /// How much of the program's own code is resident (KiB) and how much it has.
    code: (u64, u64),
}

/// Launches `program` and measures it after 10 s of idling.
fn idle_pss(program: &Path, env: &[(OsString, OsString)]) -> Idle {
    let mut child = without_inherited_settings(&mut Command::new(program))
        .envs(env.iter().cloned())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the app starts");
    std::thread::sleep(Duration::from_secs(10));
    let kib = harness::tree_of(child.id())
        .into_iter()
        .map(pss_kib)
        .sum::<u64>() as f64;
    let web_settings = harness::web_process_of(child.id())
        .map(web_settings)
        .unwrap_or_default();
    let exe = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    let code = code_kib(child.id(), &exe);
    let _ = child.kill();
    let _ = child.wait();
    // WebKit's helpers outlive a killed parent for a moment.
    std::thread::sleep(Duration::from_secs(1));
    Idle {
        kib,
        web_settings,
        code,
    }
}

/// The resident and whole size (KiB) of `program`'s executable mappings in process
/// `pid`: what the link's startup order (src-tauri/startup-order.txt) keeps small.
fn code_kib(pid: u32, program: &Path) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let program = program.to_string_lossy();
    let (mut resident, mut size, mut in_code) = (0, 0, false);
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let kib = || fields.get(1).and_then(|value| value.parse::<u64>().ok());
        match fields.first() {
            Some(&"Size:") if in_code => size += kib().unwrap_or(0),
            Some(&"Rss:") if in_code => resident += kib().unwrap_or(0),
            // A mapping's header: range, permissions, offset, device, inode, path.
            Some(range) if range.contains('-') && fields.len() >= 5 => {
                in_code = fields[1].contains('x') && fields.get(5) == Some(&&*program);
            }
            _ => {}
        }
    }
    (resident, size)
}

/// The WebKit and JSC settings in process `pid`'s environment, by name.
fn web_settings(pid: u32) -> Vec<(String, String)> {
    let mut settings: Vec<(String, String)> = harness::environ_of(pid)
        .into_iter()
        .filter_map(|var| {
            let (name, value) = var.split_once('=')?;
            (name.starts_with("WEBKIT_") || name.starts_with("JSC_"))
                .then(|| (name.to_owned(), value.to_owned()))
        })
        .collect();
    settings.sort();
    settings
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
