//! The task benchmark: everyday tasks (`cairn_testkit::tasks`) given to real small
//! models through `cairn run`, several runs each with fresh words, and how many were
//! done, how long they took and how many prompt tokens the server read.
//!
//! Rerun with `scripts/real-model with cargo bench -p cairn-cli --bench tasks`: it uses
//! the Qwen2.5-Coder servers that script starts (`CAIRN_REAL_MODEL_05B_URL`,
//! `CAIRN_REAL_MODEL_15B_URL`). Settings, all optional:
//! - `CAIRN_TASK_MODELS`: which, `0.5b,1.5b` by default;
//! - `CAIRN_TASK_RUNS`: runs per task (3), with seeds from `CAIRN_TASK_SEED` (0) on;
//! - `CAIRN_TASK_ONLY`: a comma-separated list of task names;
//! - `CAIRN_TASK_CAIRN`: another `cairn` binary to run (a debug build, say, while
//!   changing the harness: the model's time dwarfs the binary's).
//!
//! Every run's events are kept under the bench's scratch folder (printed at the end),
//! one `.jsonl` per run, to read why a run failed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};

use cairn_testkit::tasks::{self, Model, Outcome, Task};

/// A model the bench can use: its label, the variable holding its server's address,
/// and its name there.
const MODELS: [(&str, &str, &str); 2] = [
    ("0.5b", "CAIRN_REAL_MODEL_05B_URL", "qwen2.5-coder-0.5b"),
    ("1.5b", "CAIRN_REAL_MODEL_15B_URL", "qwen2.5-coder-1.5b"),
];

fn setting(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

fn number(name: &str, default: u64) -> u64 {
    setting(name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number"))
    })
}

fn chosen_tasks() -> Vec<Task> {
    let Some(only) = setting("CAIRN_TASK_ONLY") else {
        return Task::ALL.to_vec();
    };
    only.split(',')
        .map(|name| {
            Task::ALL
                .into_iter()
                .find(|task| task.name() == name.trim())
                .unwrap_or_else(|| panic!("no task {name:?}; the tasks: {:?}", Task::ALL))
        })
        .collect()
}

fn median<T: Copy + PartialOrd>(values: &mut [T]) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    values[values.len() / 2]
}

/// One row: a task's runs on one model.
fn row(label: &str, outcomes: &[&Outcome]) -> String {
    let done = outcomes.iter().filter(|o| o.done()).count();
    let mut wall: Vec<f64> = outcomes.iter().map(|o| o.wall.as_secs_f64()).collect();
    let mut read: Vec<u64> = outcomes.iter().map(|o| o.tokens_read()).collect();
    let mut sent: Vec<u64> = outcomes.iter().map(|o| o.usage.prompt_tokens).collect();
    format!(
        "| {label} | {done}/{} | {:.1} | {} | {} |",
        outcomes.len(),
        median(&mut wall),
        median(&mut read),
        median(&mut sent),
    )
}

fn keep(outcome: &Outcome, folder: &Path) {
    let path = folder.join(format!("{}-{}.jsonl", outcome.task.name(), outcome.seed));
    let mut text = format!(
        "# {} · {:?} · {:.1} s · exit {:?}\n# prompt: {}\n",
        outcome.task,
        outcome.verdict,
        outcome.wall.as_secs_f64(),
        outcome.exit,
        outcome.prompt
    );
    for line in &outcome.events {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn main() {
    let cairn = setting("CAIRN_TASK_CAIRN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cairn")), PathBuf::from);
    let runs = number("CAIRN_TASK_RUNS", 3);
    let first_seed = number("CAIRN_TASK_SEED", 0);
    let tasks = chosen_tasks();
    let wanted = setting("CAIRN_TASK_MODELS").unwrap_or_else(|| "0.5b,1.5b".to_owned());
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tasks");
    let mut report = Vec::new();
    for (label, variable, name) in MODELS {
        if !wanted.split(',').any(|want| want.trim() == label) {
            continue;
        }
        let Some(url) = setting(variable) else {
            panic!("{variable} is not set: run under scripts/real-model with");
        };
        let folder = scratch.join(label);
        if folder.exists() {
            std::fs::remove_dir_all(&folder).unwrap();
        }
        std::fs::create_dir_all(&folder).unwrap();
        let model = Model {
            cairn: cairn.clone(),
            url,
            name: name.to_owned(),
            db: folder.join("cairn.db"),
        };
        // What a user's first turn with the model runs first, timed on its own.
        let started = std::time::Instant::now();
        let check = model.cairn(&["models", "check"]).output().unwrap();
        let checkup = format!(
            "{label}: check-up in {:.1} s: {}",
            started.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&check.stdout).trim()
        );
        println!("{checkup}");
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        let mut outcomes = Vec::new();
        for task in &tasks {
            for seed in first_seed..first_seed + runs {
                let outcome = tasks::run(*task, seed, &model, &folder).unwrap();
                println!(
                    "{label} {task} seed {seed}: {} in {:.1} s, {} prompt tokens read ({} sent){}",
                    if outcome.done() { "done" } else { "NOT DONE" },
                    outcome.wall.as_secs_f64(),
                    outcome.tokens_read(),
                    outcome.usage.prompt_tokens,
                    match &outcome.verdict {
                        Ok(()) => String::new(),
                        Err(miss) => format!(": {miss}"),
                    }
                );
                keep(&outcome, &folder);
                outcomes.push(outcome);
            }
        }
        report.push(format!(
            "\n{label} ({name}), {runs} runs a task; {checkup}\n"
        ));
        report
            .push("| task | done | median wall, s | median prompt tokens read | sent |".to_owned());
        report.push("|---|---|---|---|---|".to_owned());
        for task in &tasks {
            let of_task: Vec<&Outcome> = outcomes.iter().filter(|o| o.task == *task).collect();
            report.push(row(task.name(), &of_task));
        }
        let all: Vec<&Outcome> = outcomes.iter().collect();
        report.push(row("all", &all));
        let done = all.iter().filter(|o| o.done()).count();
        report.push(format!(
            "\n{label}: {done} of {} done ({:.0}%)",
            all.len(),
            100.0 * done as f64 / all.len().max(1) as f64
        ));
    }
    println!("{}", report.join("\n"));
    println!(
        "\nEach run's events: {} (one .jsonl per run)",
        scratch.display()
    );
}
