//! One task run through the `cairn` binary, as a user at a terminal would run it:
//! a fresh folder (for all but a chat) and a new chat, `cairn run --json` in the default mode, every
//! approval answered "allow" as it is asked, and the outcome judged once the run has
//! exited.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cairn_protocol::{Event, TurnStatus, Usage};

use super::{Miss, Task};

/// Where a run's model is.
#[derive(Debug, Clone)]
pub struct Model {
    /// The `cairn` binary.
    pub cairn: PathBuf,
    /// An OpenAI-compatible server's address.
    pub url: String,
    /// The model's name on that server.
    pub name: String,
    /// The database every run shares, as one user's runs share theirs: what Cairn
    /// learns of the model (its check-up) is learned once.
    pub db: PathBuf,
}

impl Model {
    /// `cairn ARGS` against the model's server and database.
    pub fn cairn(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.cairn);
        command
            .args(args)
            .args(["--dialect", "openai", "--base-url", &self.url])
            .args(["--model", &self.name])
            .env("CAIRN_DB", &self.db);
        command
    }
}

/// How one run went.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub task: Task,
    pub seed: u64,
    pub prompt: String,
    /// `Ok` when the task was done.
    pub verdict: Result<(), Miss>,
    /// From starting `cairn` to its exit.
    pub wall: Duration,
    pub exit: Option<i32>,
    pub status: Option<TurnStatus>,
    pub usage: Usage,
    /// Everything the root level said, as the user saw it.
    pub answer: String,
    /// Every event line, for a reader who wants to know why.
    pub events: Vec<String>,
}

impl Outcome {
    pub fn done(&self) -> bool {
        self.verdict.is_ok()
    }

    /// Prompt tokens the server read anew, not from its cache.
    pub fn tokens_read(&self) -> u64 {
        self.usage
            .prompt_tokens
            .saturating_sub(self.usage.cached_prompt_tokens)
    }
}

/// Runs `task` with `seed` against `model` in a fresh folder under `scratch`.
///
/// # Errors
/// When the folder cannot be set up or `cairn` cannot be started: nothing a model did.
pub fn run(task: Task, seed: u64, model: &Model, scratch: &Path) -> std::io::Result<Outcome> {
    let dir = scratch.join(format!("{}-{seed}", task.name()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let workspace = dir.join("work");
    std::fs::create_dir_all(&workspace)?;
    let prepared = task.prepare(seed, &workspace)?;
    let started = Instant::now();
    let mut command = model.cairn(&["run", "--json"]);
    if task.in_folder() {
        command.arg("--workspace").arg(&workspace);
    }
    let mut child = command
        .arg(&prepared.prompt)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // Read apart so that a full stderr pipe never stalls the run.
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        }
        text
    });
    let mut events = Vec::new();
    let mut answer = String::new();
    let (mut status, mut usage) = (None, Usage::default());
    for line in stdout
        .into_iter()
        .flat_map(|out| BufReader::new(out).lines())
    {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Event>(&line) {
            Ok(Event::Chunk(chunk)) if chunk.depth == 0 => answer.push_str(&chunk.content),
            Ok(Event::ToolApprovalRequest(asked)) => {
                let reply = serde_json::json!({
                    "type": "approval_response",
                    "approval_id": asked.approval_id,
                    "decision": "allow",
                });
                if let Some(stdin) = stdin.as_mut() {
                    writeln!(stdin, "{reply}")?;
                    stdin.flush()?;
                }
            }
            Ok(Event::Done(done)) => {
                status = Some(done.status);
                usage = done.usage;
                // Nothing more to answer: the run may exit.
                stdin = None;
            }
            _ => {}
        }
        events.push(line);
    }
    drop(stdin);
    let exit = child.wait()?.code();
    let wall = started.elapsed();
    let stderr = errors.join().unwrap_or_default();
    if !stderr.trim().is_empty() {
        events.push(format!("stderr: {}", stderr.trim()));
    }
    // Done is what the user sees as done: the work, and a turn that ended well. A
    // file written by a turn that then looped until its limit ended in an error.
    let verdict = prepared
        .judge(&answer, &workspace)
        .and_then(|()| match status {
            Some(TurnStatus::Completed) => Ok(()),
            other => Err(Miss(format!(
                "the work is there, but the turn ended {}",
                other.map_or("without its done event".to_owned(), |status| format!(
                    "{status:?}"
                )
                .to_lowercase())
            ))),
        });
    Ok(Outcome {
        task,
        seed,
        prompt: prepared.prompt,
        verdict,
        wall,
        exit,
        status,
        usage,
        answer,
        events,
    })
}
