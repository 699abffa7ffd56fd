//! `cairn run`: one turn of a stored thread, start to exit code.
//!
//! flags + the thread's settings → model server and model → the turn under the
//! runtime (stored as it runs), with stdin answering approvals and Ctrl-C stopping it
//! → events out → exit code from how it ended.

use std::io::IsTerminal;
use std::sync::Arc;

use cairn_protocol::{
    ApprovalDecision, Chunk, ClientMessage, Done, ErrorKind, Event, TurnStatus, Usage,
};
use cairn_runtime::{Approvals, EventSink, Limits, LiveTurn};
use cairn_runtime::{ThreadOptions, resolve_model};
use cairn_secrets::Keychain;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::args::RunArgs;
use crate::exit::{Exit, Failure};
use crate::interrupt::Interrupts;
use crate::output::{JsonLines, Transcript};

pub async fn run(args: RunArgs) -> Exit {
    let json = args.json;
    if args.prompt.join(" ").trim().is_empty() {
        return clarify(json, args.thread.as_deref());
    }
    // Before anything starts: a press during a long check-up ends the run at once,
    // and one made while the turn begins is not lost.
    let mut interrupts = match Interrupts::listen() {
        Ok(interrupts) => interrupts,
        Err(err) => {
            eprintln!("cairn: cannot listen for Ctrl-C: {err}");
            return Exit::FAILED;
        }
    };
    let started = tokio::select! {
        started = start(args) => started,
        _ = interrupts.next() => {
            eprintln!("cairn: stopped before the turn began");
            return Exit::CANCELLED;
        }
    };
    match started {
        Ok(started) => started.follow(interrupts).await,
        Err(failure) => {
            if json {
                JsonLines.emit(Event::Error(failure.event()));
            }
            failure.report()
        }
    }
}

/// A blank message: the clarifying question, printed as a turn's answer would be,
/// with no model asked and nothing stored (so `done` names no message).
fn clarify(json: bool, thread: Option<&str>) -> Exit {
    let question = cairn_runtime::CLARIFYING_QUESTION;
    if json {
        JsonLines.emit(Event::Chunk(Chunk {
            content: question.to_owned(),
            parent_id: None,
            depth: 0,
        }));
        JsonLines.emit(Event::Done(Done {
            thread_id: thread.unwrap_or_default().to_owned(),
            message_id: String::new(),
            usage: Usage::default(),
            status: TurnStatus::Completed,
            cut: None,
        }));
    } else {
        println!("{question}");
    }
    Exit::OK
}

struct Started {
    live: Arc<LiveTurn>,
    json: bool,
}

async fn start(args: RunArgs) -> Result<Started, Failure> {
    let limits = Limits::from_env().map_err(|err| Failure::Usage(err.to_string()))?;
    let runtime = args.db.open_with(limits).await?;
    // The keys of the servers agent profiles name come from the keychain too.
    runtime.use_secrets(Arc::new(Keychain::new()));
    let prompt = args.prompt.join(" ");
    let existing = runtime.thread_if(args.thread.as_deref()).await?;
    let options = ThreadOptions {
        mode: args.mode,
        workspace: args.workspace.clone(),
        agent: args.agent.clone(),
    };
    // A typo in the folder, or in the agent's name, is reported before the server is
    // asked anything.
    runtime.check_thread_options(&options, existing.as_ref())?;
    // The server and the model are settled before a new thread is stored: a run that
    // cannot start leaves no empty thread behind.
    // Flags first, then the thread's parameters (`cairn llm`), then their defaults.
    let mut request = args.model_request(&runtime.servers().await?)?;
    runtime
        .apply_llm(&mut request, existing.as_ref().map(|t| t.id.as_str()))
        .await?;
    let choice = resolve_model(request, existing.as_ref(), &Keychain::new()).await?;
    if runtime.needs_checkup(&choice).await? {
        eprintln!(
            "cairn: {} is new here: checking what it needs to answer from its tools (once; \
             `cairn models check` runs it again)…",
            choice.model
        );
        let checkup = runtime.check_model(&choice).await?;
        eprintln!("cairn: {}: {}", choice.model, checkup.verdict());
    }
    let thread = runtime.open_thread(existing, &prompt, &options).await?;
    crate::mcp::start(&runtime, &args.mcp).await?;
    let live = runtime.send(&thread.id, &prompt, choice).await?;
    Ok(Started {
        live,
        json: args.json,
    })
}

impl Started {
    /// Prints the turn's events until `done` and turns how it ended into an exit code.
    async fn follow(self, mut interrupts: Interrupts) -> Exit {
        let transcript = (!self.json).then(|| Arc::new(Transcript::new()));
        let sink: Arc<dyn EventSink> = match &transcript {
            Some(transcript) => transcript.clone(),
            None => Arc::new(JsonLines),
        };
        let mut answers = Answers::new(Arc::clone(self.live.approvals()), self.json);
        let mut stdin = read_stdin();
        let live = Arc::clone(&self.live);
        tokio::spawn(async move {
            if interrupts.next().await.is_some() {
                live.stop();
                // A second Ctrl-C means now.
                if interrupts.next().await.is_some() {
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
                None => tokio::select! {
                    event = rest.recv() => match event {
                        Some(event) => event,
                        None => break,
                    },
                    line = stdin.recv(), if !answers.stdin_closed => {
                        answers.line(line);
                        continue;
                    }
                },
            };
            match &event {
                Event::Done(done) => status = Some(done.status),
                Event::Error(error) => failures.push(error.kind),
                _ => {}
            }
            let asked = matches!(event, Event::ToolApprovalRequest(_));
            sink.emit(event);
            if asked {
                // After the question is shown: an answer piped in ahead takes it now.
                answers.answer_waiting();
            }
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
                Some(ErrorKind::IterationLimit | ErrorKind::Loop) => Exit::BUDGET,
                Some(ErrorKind::Config) => Exit::USAGE,
                Some(ErrorKind::Storage | ErrorKind::Internal) | None => Exit::FAILED,
            },
            None => Exit::FAILED,
        }
    }
}

/// Lines of stdin as they come, then `None` once it closes.
fn read_stdin() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (lines, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = stdin.next_line().await {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Approvals answered from stdin. Typed answers (`y`, `a`, `n`) answer the questions
/// in the order they are asked, so `echo y | cairn run …` answers the first question
/// even though the line arrives before it; once stdin has closed and the typed answers
/// are used up, every later question is denied.
struct Answers {
    approvals: Arc<Approvals>,
    json: bool,
    interactive: bool,
    typed: std::collections::VecDeque<ApprovalDecision>,
    stdin_closed: bool,
}

impl Answers {
    fn new(approvals: Arc<Approvals>, json: bool) -> Self {
        Self {
            approvals,
            json,
            interactive: std::io::stdin().is_terminal(),
            typed: std::collections::VecDeque::new(),
            stdin_closed: false,
        }
    }

    /// Takes a line of stdin, or its end (`None`).
    fn line(&mut self, line: Option<String>) {
        let Some(line) = line else {
            self.stdin_closed = true;
            return self.detach_when_spent();
        };
        let line = line.trim();
        if line.is_empty() && self.json {
            return;
        }
        let parsed = if self.json || line.starts_with('{') {
            parse_json_answer(line).map(|(id, decision)| Answer::ById(id, decision))
        } else {
            parse_typed_answer(line).map(Answer::Next)
        };
        match parsed {
            Ok(Answer::ById(id, decision)) => {
                if let Err(err) = self.approvals.answer(&id, decision) {
                    eprintln!("cairn: {err}");
                }
            }
            Ok(Answer::Next(decision)) => {
                self.typed.push_back(decision);
                self.answer_waiting();
            }
            Err(problem) => eprintln!("cairn: ignoring input line: {problem}"),
        }
    }

    /// Gives typed answers to the questions waiting, oldest first.
    fn answer_waiting(&mut self) {
        while !self.typed.is_empty() {
            let Some(request) = self.approvals.pending().into_iter().next() else {
                break;
            };
            if let Some(decision) = self.typed.pop_front()
                && let Err(err) = self.approvals.answer(&request.approval_id, decision)
            {
                eprintln!("cairn: {err}");
            }
        }
        self.detach_when_spent();
    }

    /// With stdin closed and no typed answer left, no one can answer any more.
    fn detach_when_spent(&self) {
        if self.stdin_closed && self.typed.is_empty() {
            let why = if self.interactive {
                "the terminal closed, so no one can approve it"
            } else {
                "no one is attached to approve it (stdin is closed)"
            };
            self.approvals.detach_human(why);
        }
    }
}

/// An answer read from stdin.
enum Answer {
    /// A JSON line names the approval it answers.
    ById(String, ApprovalDecision),
    /// A typed letter answers the next question.
    Next(ApprovalDecision),
}

/// A line of stdin that answers no approval; it is said and skipped.
#[derive(Debug, thiserror::Error)]
enum NotAnAnswer {
    #[error("not an approval response: {0:?}")]
    OtherMessage(Box<ClientMessage>),
    #[error(
        "{0}; expected {{\"type\":\"approval_response\",\"approval_id\":\"…\",\"decision\":\"allow|allow_session|deny\"}}"
    )]
    NotJson(serde_json::Error),
    #[error("`{0}` is not y, a or n")]
    NotALetter(String),
}

fn parse_json_answer(line: &str) -> Result<(String, ApprovalDecision), NotAnAnswer> {
    match serde_json::from_str::<ClientMessage>(line) {
        Ok(ClientMessage::ApprovalResponse(response)) => {
            Ok((response.approval_id, response.decision))
        }
        Ok(other) => Err(NotAnAnswer::OtherMessage(Box::new(other))),
        Err(err) => Err(NotAnAnswer::NotJson(err)),
    }
}

/// `y`, `a` or `n` (an empty line is `n`).
fn parse_typed_answer(line: &str) -> Result<ApprovalDecision, NotAnAnswer> {
    match line.to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(ApprovalDecision::Allow),
        "a" | "always" => Ok(ApprovalDecision::AllowSession),
        "" | "n" | "no" => Ok(ApprovalDecision::Deny),
        other => Err(NotAnAnswer::NotALetter(other.to_owned())),
    }
}
