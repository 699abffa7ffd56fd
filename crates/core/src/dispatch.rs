//! Running the tool calls of one model round.
//!
//! calls → batches (consecutive parallel-safe calls together, others alone) → per
//! call: start event → budget → arguments → the gate (run / ask / block) → named
//! lock → the tool, or an engine tool (a subtask, a plan, …) → result cut to size (the
//! whole kept) → end event.
//! Results come back in the order the model made the calls, every call with one.

use crate::tool::{ToolContext, without_copied_schema};
use cairn_protocol::ToolCategory;
use cairn_protocol::describe::CallAbout;
use cairn_protocol::{
    ApprovalPreview, ChatMessage, Event, ToolApprovalRequest, ToolCall, ToolCallStatus,
    ToolCallUpdate,
};
use futures_util::{StreamExt, stream};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::agent::AgentSwitch;
use crate::budget::millis;
use crate::callee::{Callee, NoCallee};
use crate::engine_tools::{CallFailure, EngineCall, Signal, Success, TurnServices};
use crate::events::Activity;
use crate::gate::{self, GateDecision, GateRequest};
use crate::level::Scope;
use crate::repeats::{self, Previous, Verdict};
use crate::results::{self, ReadArgs, Unreadable};
use crate::servers::ServerUnusable;
use crate::switch::NoHandOver;
use crate::turn::Turn;

/// The results of a round's calls, and how the level ends if one of them ends it.
pub(crate) struct Dispatched {
    pub results: Vec<ChatMessage>,
    /// The structured result of an accepted `finish_subtask`.
    pub finished: Option<Value>,
    /// An accepted `switch_agent`: the turn ends after this round.
    pub switched: bool,
}

const CANCELLED: &str = "cancelled: the turn was stopped before this call finished";

/// How a level starts the levels below it: a subtask, or a plan whose steps are
/// levels. Handed down from the top of the turn (`turn.rs`), so that the loop, the
/// calls it dispatches and the children they start do not call each other around a
/// circle of modules.
#[async_trait::async_trait]
pub(crate) trait Below: Sync {
    /// `run_subtask`, called as `call_id` with `args`, under `scope`.
    async fn subtask(
        &self,
        turn: &Turn,
        scope: &Scope,
        call_id: &str,
        args: Value,
    ) -> Result<Success, CallFailure>;

    /// `create_plan`, called as `call_id` with `args`, under `scope`.
    async fn plan(
        &self,
        turn: &Turn,
        scope: &Scope,
        call_id: &str,
        args: Value,
    ) -> Result<Success, CallFailure>;
}

/// Runs a round's calls as `verdicts` say (one per call): a refused or rejected call
/// gets its error without running, and waits for the calls before it. Each result is
/// cut to `room` bytes for the model.
pub(crate) async fn dispatch(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    calls: &[ToolCall],
    verdicts: &[Verdict],
    room: usize,
) -> Dispatched {
    let mut results: Vec<ChatMessage> = Vec::with_capacity(calls.len());
    let mut finished = None;
    let mut switched = false;
    let mut next = 0;
    while next < calls.len() {
        let refusal = match verdicts.get(next) {
            Some(Verdict::Refuse(previous)) => {
                // Every call before this one has its result: the one it repeats too.
                let returned = match previous {
                    Previous::Returned(line) => line.clone(),
                    Previous::InRound(index) => repeats::quote(results[*index].content()),
                };
                Some(repeats::refusal(&calls[next], &returned))
            }
            Some(Verdict::Reject(why)) => Some(why.clone()),
            Some(Verdict::Run) | None => None,
        };
        if let Some(refusal) = refusal {
            let (message, _) =
                run_call(turn, below, scope, &calls[next], room, Some(refusal)).await;
            results.push(message);
            next += 1;
            continue;
        }
        let batch = calls[next..].iter().enumerate().position(|(offset, call)| {
            verdicts.get(next + offset) != Some(&Verdict::Run) || !parallel_safe(scope, call)
        });
        let len = match batch {
            Some(0) => 1,
            Some(n) => n,
            None => calls.len() - next,
        };
        let now = &calls[next..next + len];
        next += len;
        // Collected first: a lazy `map` closure inside this boxed, Send future trips
        // the compiler's higher-ranked lifetime inference.
        let calls: Vec<_> = now
            .iter()
            .map(|call| run_call(turn, below, scope, call, room, None))
            .collect();
        // The turn's slots bound what runs at once; this only keeps the queue short.
        let mut outcomes = stream::iter(calls).buffered(turn.limits.max_parallel_per_turn);
        while let Some((message, signal)) = outcomes.next().await {
            results.push(message);
            match signal {
                Signal::Finished(result) if finished.is_none() => finished = Some(result),
                Signal::Switched => switched = true,
                Signal::Finished(_) | Signal::None => {}
            }
        }
    }
    Dispatched {
        results,
        finished,
        switched,
    }
}

fn parallel_safe(scope: &Scope, call: &ToolCall) -> bool {
    // A call with no callee here only returns an error: it can run beside anything.
    Callee::resolve(scope, &call.name).map_or(true, |callee| callee.parallel_safe())
}

/// One call, start to end (`refused`: with this error, without running), its
/// result cut to `room` bytes. Never fails: a failure is the call's result.
async fn run_call(
    turn: &Turn,
    below: &dyn Below,
    scope: &Scope,
    call: &ToolCall,
    room: usize,
    refused: Option<String>,
) -> (ChatMessage, Signal) {
    // Resolved once: how the call reads, how its result is sized and what runs it.
    let callee = Callee::resolve(scope, &call.name);
    let args = parse_arguments(&call.arguments).map(|args| match &callee {
        Ok(Callee::Tool(tool)) => without_copied_schema(args, &tool.parameters()),
        _ => args,
    });
    // How the call reads to the user, as its tool says (its name, when it has none
    // here or its arguments are not JSON).
    let about = match (&args, &callee) {
        (Ok(value), Ok(callee)) => callee.describe(&call.name, value),
        (Ok(value), Err(_)) => CallAbout::generic(&call.name, value),
        (Err(_), _) => CallAbout::generic(&call.name, &Value::Null),
    };
    // A page of a kept result is already sized; cutting it again would only nest
    // markers.
    let max = match &callee {
        Ok(Callee::Engine(tool)) if tool.sizes_itself() => usize::MAX,
        _ => room,
    };
    let started = Instant::now();
    // The time the call spends on the user's approval, in milliseconds.
    let waited = AtomicU64::new(0);
    let kind = callee.as_ref().ok().and_then(Callee::kind);
    let update = |status| ToolCallUpdate {
        kind,
        ..ToolCallUpdate::new(
            &call.id,
            &call.name,
            scope.parent_id.clone(),
            scope.depth,
            status,
        )
    };
    turn.emitter.emit(Event::ToolCallUpdate(ToolCallUpdate {
        args: Some(match &args {
            Ok(value) => value.clone(),
            Err(_) => Value::String(call.arguments.clone()),
        }),
        subject: about.subject.clone(),
        ..update(ToolCallStatus::Start)
    }));
    let outcome = if let Some(refusal) = refused {
        Err(CallFailure::RespondToModel(refusal))
    } else if turn.is_stopping() {
        Err(CallFailure::Stopped)
    } else {
        let here = Here { turn, below, scope };
        execute(&here, call, args, callee, room, &waited).await
    };
    let denied = matches!(outcome, Err(CallFailure::Denied(_)));
    let (content, value, is_error, signal, images, change, changed) = match outcome {
        Ok(success) => {
            let sized = turn.keeps.results.fit(&call.id, success.content, max);
            let value = match success.value {
                Value::String(_) => Value::String(sized.whole),
                structured => structured,
            };
            (
                sized.for_model,
                value,
                success.failed,
                success.signal,
                success.images,
                success.change,
                success.changed,
            )
        }
        Err(failure) => {
            let problem = match failure {
                CallFailure::RespondToModel(problem) | CallFailure::Denied(problem) => problem,
                CallFailure::Stopped => CANCELLED.to_owned(),
            };
            let content = format!("{}{problem}", results::ERROR);
            let images = Vec::new();
            (
                content.clone(),
                Value::String(content),
                true,
                Signal::None,
                images,
                None,
                Vec::new(),
            )
        }
    };
    turn.emitter.emit(Event::ToolCallUpdate(ToolCallUpdate {
        result: Some(value),
        is_error: Some(is_error),
        duration_ms: Some(millis(started.elapsed())),
        waited_ms: Some(waited.load(Ordering::Relaxed)).filter(|ms| *ms > 0),
        denied,
        images: images.clone(),
        subject: about.subject,
        change,
        changed,
        ..update(ToolCallStatus::End)
    }));
    let message = ChatMessage::Tool {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
        images,
    };
    (message, signal)
}

async fn execute(
    here: &Here<'_>,
    call: &ToolCall,
    args: Result<Value, BadArguments>,
    callee: Result<Callee<'_>, NoCallee>,
    room: usize,
    waited: &AtomicU64,
) -> Result<Success, CallFailure> {
    let Here { turn, scope, .. } = *here;
    if let Err(exceeded) = turn.budget.charge_tool_call() {
        turn.trip(exceeded);
        return Err(CallFailure::Stopped);
    }
    turn.accounts.add_usage(&cairn_protocol::Usage {
        tool_calls: 1,
        ..Default::default()
    });
    let args = args.map_err(CallFailure::told)?;
    let callee = callee.map_err(CallFailure::told)?;
    if let Some(disclosure) = scope.disclosure() {
        disclosure.note_call(&call.name);
    }
    pass_gate(turn, scope, call, &callee, &args, waited).await?;
    let tool = match callee {
        Callee::Tool(tool) => tool,
        Callee::Engine(tool) => {
            let call = EngineCall {
                place: scope.place(),
                id: &call.id,
                args,
                room,
            };
            return tool.run(here, call).await;
        }
    };
    let _lock = match tool.exclusive_lock() {
        Some(lock) => Some(turn.locks.acquire(lock).await),
        None => None,
    };
    let Some(_slot) = turn.slots.take(&turn.ending).await else {
        return Err(CallFailure::Stopped);
    };
    let _executing = turn.emitter.activity(Activity::Executing);
    let ctx = tool_context(turn);
    tokio::select! {
        biased;
        () = turn.ending.stopped() => Err(CallFailure::Stopped),
        result = tool.call(args, &ctx) => result
            .map(|output| Success {
                images: output.images,
                change: output.change,
                changed: output.changed,
                failed: output.failed,
                ..Success::text(output.content)
            })
            .map_err(|err| CallFailure::RespondToModel(err.to_string())),
    }
}

fn tool_context(turn: &Turn) -> ToolContext {
    ToolContext {
        workspace: turn.workspace.clone(),
        cancel: turn.ending.token(),
        turn: Some(turn.ids.message_id.clone()),
    }
}

/// The one gate: every call at every depth comes through here.
async fn pass_gate(
    turn: &Turn,
    scope: &Scope,
    call: &ToolCall,
    callee: &Callee<'_>,
    args: &Value,
    waited: &AtomicU64,
) -> Result<(), CallFailure> {
    let tool = callee.tool();
    let category = callee.category();
    let subjects = tool
        .map(|tool| gate::subjects(turn.workspace.as_deref(), tool.as_ref(), args))
        .unwrap_or_default();
    let request = GateRequest {
        tool: &call.name,
        category,
        subjects: &subjects,
        leaves: tool.and_then(|tool| tool.leaves_sandbox(args)),
    };
    match turn.permissions.decide(&request) {
        GateDecision::Run => Ok(()),
        GateDecision::Block(reason) => Err(CallFailure::RespondToModel(reason)),
        GateDecision::Ask => {
            let grants =
                tool.map_or_else(|| vec![call.name.clone()], |tool| tool.session_grants(args));
            let preview = match tool {
                Some(tool) => tool.preview(args, &tool_context(turn)).await,
                None => None,
            };
            // The wait is the user's: reading the file for the preview is not.
            let asked = Instant::now();
            let asking = Asking {
                category,
                grants,
                preview,
                action: callee.describe(&call.name, args).action,
            };
            let answer = ask(turn, scope, call, args, asking).await;
            waited.fetch_add(millis(asked.elapsed()), Ordering::Relaxed);
            answer
        }
    }
}

async fn ask(
    turn: &Turn,
    scope: &Scope,
    call: &ToolCall,
    args: &Value,
    asking: Asking,
) -> Result<(), CallFailure> {
    let Asking {
        category,
        grants,
        preview,
        action,
    } = asking;
    let request = ToolApprovalRequest {
        approval_id: turn.ids.approval(),
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        args: args.clone(),
        category,
        parent_id: scope.parent_id.clone(),
        depth: scope.depth,
        subtask_title: scope.title.clone(),
        session_grant: Some(grants.join(", ")),
        preview,
        action: Some(action),
    };
    let ticket = turn
        .permissions
        .ask(request.clone())
        .map_err(|err| format!("the approval could not be asked: {err}"))?;
    turn.emitter.emit(Event::ToolApprovalRequest(request));
    let resolution = {
        let _waiting = turn.emitter.activity(Activity::WaitingOnUser);
        // Nor is the time the user takes to answer.
        let _asking = turn.budget.pause();
        tokio::select! {
            biased;
            () = turn.ending.stopped() => return Err(CallFailure::Stopped),
            resolution = ticket.resolution() => resolution,
        }
    };
    turn.permissions.settle(resolution, &call.name, &grants)
}

/// Arguments the model wrote that are not JSON; it reads why.
#[derive(Debug, thiserror::Error)]
#[error("the arguments are not valid JSON ({0}); send them as one JSON object")]
struct BadArguments(#[from] serde_json::Error);

/// The model's argument text as JSON. An empty string means no arguments (several
/// servers send that for argument-less tools).
fn parse_arguments(raw: &str) -> Result<Value, BadArguments> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    Ok(serde_json::from_str(raw)?)
}

/// What the user is asked about a call.
struct Asking {
    category: ToolCategory,
    /// What "allow for this chat" grants.
    grants: Vec<String>,
    preview: Option<ApprovalPreview>,
    /// What the call will do, in one line.
    action: String,
}

/// A level's place in its turn: the turn, the way down and the level's scope; the
/// turn as the engine tools called there may use it.
#[derive(Clone, Copy)]
struct Here<'a> {
    turn: &'a Turn,
    below: &'a dyn Below,
    scope: &'a Scope,
}

#[async_trait::async_trait]
impl TurnServices for Here<'_> {
    async fn run_subtask(&self, id: &str, args: Value) -> Result<Success, CallFailure> {
        self.below.subtask(self.turn, self.scope, id, args).await
    }

    async fn create_plan(&self, id: &str, args: Value) -> Result<Success, CallFailure> {
        self.below.plan(self.turn, self.scope, id, args).await
    }

    fn agents(&self) -> &crate::agent::AgentSetup {
        &self.turn.agents
    }

    fn hand_over(&self, switch: AgentSwitch) -> Result<(), NoHandOver> {
        self.turn.keeps.hand_over(switch)
    }

    fn read_kept(&self, args: &ReadArgs, room: usize) -> Result<String, Unreadable> {
        self.turn.keeps.results.read(args, room)
    }

    async fn server_answers(&self, agent: &crate::agent::Agent) -> Result<(), ServerUnusable> {
        if agent.server.is_none() {
            return Ok(());
        }
        let turn = self.turn;
        let server = turn.placement.server_for(agent).await?;
        if turn.placement.is_home(&server) {
            return Ok(());
        }
        turn.placement
            .servers
            .probe(&server)
            .await
            .map_err(|why| ServerUnusable::Unreachable {
                agent: agent.id.clone(),
                server: server.name.clone(),
                why,
            })
    }
}
