//! `cairn run`: one turn, start to exit code.
//!
//! flags → model client, workspace, limits → turn on the engine, with stdin answering
//! approvals and Ctrl-C stopping it → events out → exit code from how it ended.

use std::io::IsTerminal;
use std::sync::Arc;

use cairn_core::{Approvals, Engine, EventSink, Limits, Toolbelt, TurnControl, TurnRequest};
use cairn_protocol::{ApprovalDecision, ChatMessage, ClientMessage, ErrorKind, Event, TurnStatus};
use cairn_providers::{Sampling, Server};
use cairn_tools::Workspace;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::args::RunArgs;
use crate::exit::{Exit, Failure};
use crate::output::{JsonLines, Transcript};

pub async fn run(args: RunArgs) -> Exit {
    let json = args.json;
    match prepare(args).await {
        Ok(prepared) => prepared.run().await,
        Err(failure) => {
            if json {
                JsonLines.emit(Event::Error(failure.event()));
            }
            failure.report()
        }
    }
}

struct Prepared {
    engine: Engine,
    request: TurnRequest,
    json: bool,
}

async fn prepare(args: RunArgs) -> Result<Prepared, Failure> {
    let limits = Limits::from_env().map_err(|err| Failure::Usage(err.to_string()))?;
    let workspace = args
        .workspace
        .as_deref()
        .map(Workspace::open)
        .transpose()
        .map_err(|err| Failure::Usage(err.to_string()))?
        .map(Arc::new);
    let server = args.server.connect()?;
    let model = match args.model {
        Some(model) => model,
        None => only_model(&server).await?,
    };
    let sampling = Sampling {
        temperature: args.temperature,
        ..Sampling::default()
    };
    Ok(Prepared {
        engine: Engine::new(server.model_client(), limits),
        request: request(model, args.mode, workspace, sampling, &args.prompt),
        json: args.json,
    })
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

fn request(
    model: String,
    mode: cairn_protocol::PermissionMode,
    workspace: Option<Arc<Workspace>>,
    sampling: Sampling,
    prompt: &[String],
) -> TurnRequest {
    let tools = match &workspace {
        Some(_) => cairn_tools::file_tools(),
        None => Vec::new(),
    };
    TurnRequest {
        thread_id: uuid::Uuid::now_v7().to_string(),
        message_id: uuid::Uuid::now_v7().to_string(),
        model,
        history: vec![ChatMessage::user(prompt.join(" "))],
        mode,
        // The built-in tools have distinct names, none reserved.
        tools: Toolbelt::new(tools).unwrap_or_default(),
        workspace,
        sampling,
    }
}

impl Prepared {
    async fn run(self) -> Exit {
        let control = TurnControl::default();
        let transcript = (!self.json).then(|| Arc::new(Transcript::new()));
        let sink: Arc<dyn EventSink> = match &transcript {
            Some(transcript) => transcript.clone(),
            None => Arc::new(JsonLines),
        };
        tokio::spawn(answer_from_stdin(Arc::clone(&control.approvals), self.json));
        let cancel = control.cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
                // A second Ctrl-C means now.
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(Exit::CANCELLED.code());
                }
            }
        });
        let outcome = self
            .engine
            .run_turn(self.request, control, Arc::clone(&sink))
            .await;
        sink.emit(outcome.done_event());
        if let Some(transcript) = transcript {
            transcript.finish();
        }
        match outcome.status {
            TurnStatus::Completed => Exit::OK,
            TurnStatus::BudgetExceeded => Exit::BUDGET,
            TurnStatus::Cancelled => Exit::CANCELLED,
            TurnStatus::Failed => match outcome.error.map(|error| error.kind) {
                Some(ErrorKind::Provider) => Exit::PROVIDER,
                Some(ErrorKind::IterationLimit) => Exit::BUDGET,
                Some(ErrorKind::Config) => Exit::USAGE,
                Some(ErrorKind::Storage | ErrorKind::Internal) | None => Exit::FAILED,
            },
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
