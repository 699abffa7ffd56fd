//! `cairn run`: one turn of a stored thread, start to exit code.
//!
//! flags + the thread's settings → model server and model → the turn under the
//! runtime (stored as it runs), with stdin answering approvals and Ctrl-C stopping it
//! → events out → exit code from how it ended.

use std::io::IsTerminal;
use std::sync::Arc;

use cairn_core::{Approvals, EventSink, Limits, LiveTurn};
use cairn_protocol::{ApprovalDecision, ClientMessage, ErrorKind, Event, ThreadInfo, TurnStatus};
use cairn_providers::{Dialect, Sampling, Server};
use cairn_runtime::{ModelChoice, Runtime, RuntimeError};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::args::{RunArgs, ServerArgs};
use crate::exit::{Exit, Failure};
use crate::output::{JsonLines, Transcript};

pub async fn run(args: RunArgs) -> Exit {
    let json = args.json;
    match start(args).await {
        Ok(started) => started.follow().await,
        Err(failure) => {
            if json {
                JsonLines.emit(Event::Error(failure.event()));
            }
            failure.report()
        }
    }
}

struct Started {
    live: Arc<LiveTurn>,
    json: bool,
}

async fn start(args: RunArgs) -> Result<Started, Failure> {
    let limits = Limits::from_env().map_err(|err| Failure::Usage(err.to_string()))?;
    let runtime = Runtime::new(args.db.open().await?, limits);
    let store = runtime.store();
    let prompt = args.prompt.join(" ");
    let usage = |err: cairn_store::StoreError| Failure::Usage(err.to_string());
    // Checked before anything is stored, so a typo leaves no empty thread behind.
    if let Some(folder) = &args.workspace {
        cairn_tools::Workspace::open(folder).map_err(|err| Failure::Usage(err.to_string()))?;
    }
    let mut thread = match &args.thread {
        Some(id) => store.thread(id).await.map_err(usage)?,
        None => runtime
            .new_thread(&prompt, args.mode.unwrap_or_default())
            .await
            .map_err(runtime_failure)?,
    };
    if let Some(mode) = args.mode.filter(|mode| *mode != thread.mode) {
        thread = store.set_mode(&thread.id, mode).await.map_err(usage)?;
    }
    if let Some(folder) = &args.workspace {
        thread = store
            .set_workspace(&thread.id, Some(folder))
            .await
            .map_err(usage)?;
    }
    let server = server_for(&args.server, &thread).connect()?;
    let model = match (&args.model, &thread.model) {
        (Some(model), _) => model.clone(),
        (None, Some(model)) if !args.server.given() => model.clone(),
        (None, _) => only_model(&server).await?,
    };
    let choice = ModelChoice {
        client: server.model_client(),
        dialect: server.dialect().to_string(),
        base_url: server.server().to_owned(),
        model,
        sampling: Sampling {
            temperature: args.temperature,
            ..Sampling::default()
        },
    };
    crate::mcp::start(&runtime, &args.mcp).await?;
    let live = runtime
        .send(&thread.id, &prompt, choice)
        .await
        .map_err(runtime_failure)?;
    Ok(Started {
        live,
        json: args.json,
    })
}

/// The flags, or the server the thread used last when none are given.
fn server_for(flags: &ServerArgs, thread: &ThreadInfo) -> ServerArgs {
    match (&thread.base_url, &thread.dialect) {
        (Some(base_url), Some(dialect)) if !flags.given() => ServerArgs {
            provider: None,
            base_url: Some(base_url.clone()),
            dialect: dialect.parse::<Dialect>().ok().or(flags.dialect),
            ..flags.clone()
        },
        _ => flags.clone(),
    }
}

fn runtime_failure(err: RuntimeError) -> Failure {
    Failure::Usage(err.to_string())
}

/// The server's model when it offers exactly one; otherwise the user must choose.
async fn only_model(server: &Server) -> Result<String, Failure> {
    let models = server.list_models().await.map_err(Failure::from_provider)?;
    let name = server.server();
    match models.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Failure::Usage(format!(
            "{name} offers no models; load or pull one (`cairn pull MODEL`), then pass it with --model"
        ))),
        many => Err(Failure::Usage(format!(
            "{name} offers several models; choose one with --model: {}",
            many.join(", ")
        ))),
    }
}

impl Started {
    /// Prints the turn's events until `done` and turns how it ended into an exit code.
    async fn follow(self) -> Exit {
        let transcript = (!self.json).then(|| Arc::new(Transcript::new()));
        let sink: Arc<dyn EventSink> = match &transcript {
            Some(transcript) => transcript.clone(),
            None => Arc::new(JsonLines),
        };
        tokio::spawn(answer_from_stdin(
            Arc::clone(self.live.approvals()),
            self.json,
        ));
        let live = Arc::clone(&self.live);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                live.stop();
                // A second Ctrl-C means now.
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(Exit::CANCELLED.code());
                }
            }
        });
        let (so_far, mut rest) = self.live.attach();
        let mut status = None;
        let mut failures = Vec::new();
        let mut pending = so_far.into_iter();
        while status.is_none() {
            let event = match pending.next() {
                Some(event) => event,
                None => match rest.recv().await {
                    Some(event) => event,
                    None => break,
                },
            };
            match &event {
                Event::Done(done) => status = Some(done.status),
                Event::Error(error) => failures.push(error.kind),
                _ => {}
            }
            sink.emit(event);
        }
        if let Some(transcript) = transcript {
            transcript.finish();
            eprintln!(
                "(thread {id}; continue it with --thread {id})",
                id = self.live.thread_id
            );
        }
        // Whatever the turn did, an answer that could not be saved is a failure.
        if failures.contains(&ErrorKind::Storage) {
            return Exit::FAILED;
        }
        match status {
            Some(TurnStatus::Completed) => Exit::OK,
            Some(TurnStatus::BudgetExceeded) => Exit::BUDGET,
            Some(TurnStatus::Cancelled) => Exit::CANCELLED,
            Some(TurnStatus::Failed) => match failures.first() {
                Some(ErrorKind::Provider) => Exit::PROVIDER,
                Some(ErrorKind::IterationLimit) => Exit::BUDGET,
                Some(ErrorKind::Config) => Exit::USAGE,
                Some(ErrorKind::Storage | ErrorKind::Internal) | None => Exit::FAILED,
            },
            None => Exit::FAILED,
        }
    }
}

/// Answers approvals from stdin until it closes; after that every ask is denied.
async fn answer_from_stdin(approvals: Arc<Approvals>, json: bool) {
    let interactive = std::io::stdin().is_terminal();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = line.trim();
        if line.is_empty() && json {
            continue;
        }
        let answer = if json {
            parse_json_answer(line)
        } else {
            parse_typed_answer(line, &approvals)
        };
        match answer {
            Ok(Some((id, decision))) => {
                if let Err(err) = approvals.answer(&id, decision) {
                    eprintln!("cairn: {err}");
                }
            }
            Ok(None) => {}
            Err(problem) => eprintln!("cairn: ignoring input line: {problem}"),
        }
    }
    let why = if interactive {
        "the terminal closed, so no one can approve it"
    } else {
        "no one is attached to approve it (stdin is closed)"
    };
    approvals.detach_human(why);
}

fn parse_json_answer(line: &str) -> Result<Option<(String, ApprovalDecision)>, String> {
    match serde_json::from_str::<ClientMessage>(line) {
        Ok(ClientMessage::ApprovalResponse(response)) => {
            Ok(Some((response.approval_id, response.decision)))
        }
        Ok(other) => Err(format!("not an approval response: {other:?}")),
        Err(err) => Err(format!(
            "{err}; expected {{\"type\":\"approval_response\",\"approval_id\":\"…\",\"decision\":\"allow|allow_session|deny\"}}"
        )),
    }
}

/// `y`, `a` or `n` answers the oldest pending approval.
fn parse_typed_answer(
    line: &str,
    approvals: &Approvals,
) -> Result<Option<(String, ApprovalDecision)>, String> {
    let decision = match line.to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::Allow,
        "a" | "always" => ApprovalDecision::AllowSession,
        "" | "n" | "no" => ApprovalDecision::Deny,
        _ if line.starts_with('{') => return parse_json_answer(line),
        other => return Err(format!("`{other}` is not y, a or n")),
    };
    Ok(approvals
        .pending()
        .first()
        .map(|request| (request.approval_id.clone(), decision)))
}
