//! The agent loop, one implementation for every depth.
//!
//! iteration: budgets → prune history → stream a model round (deltas out as events)
//! → no calls: the level's answer → calls: dispatch them, append every result → again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::model::{ChatRequest, ContextWindow, Overflow};
use cairn_protocol::{
    ChatMessage, Chunk, ErrorEvent, ErrorKind, Event, ModelCall, PromptCut, PromptProgress,
    Reasoning, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCategory, ToolSpec, Usage,
};
use serde_json::Value;

use crate::budget::millis;
use crate::callee::Callee;
use crate::copied;
use crate::dispatch::{Below, dispatch};
use crate::events::Activity;
use crate::gate::{GateDecision, GateRequest};
use crate::history;
use crate::named_files;
use crate::results;
use crate::round::{self, Collected, Ending, Round, Seen};
use crate::turn::Turn;
use crate::unasked;
use crate::whole_file::WholeFile;

use super::{Level, LevelEnd, LevelFailure, Scope};

type LevelFuture<'a> = Pin<Box<dyn Future<Output = Result<LevelEnd, LevelFailure>> + Send + 'a>>;

/// Runs a level to its end. Boxed: subtasks recurse through it.
pub(crate) fn run_level<'a>(
    turn: &'a Turn,
    below: &'a dyn Below,
    level: &'a mut Level,
) -> LevelFuture<'a> {
    Box::pin(async move {
        let mut iteration = 0;
        loop {
            if turn.is_stopping() {
                return Err(LevelFailure::Stopped);
            }
            if iteration == turn.limits.max_iterations_per_level {
                return Err(LevelFailure::IterationLimit(iteration));
            }
            iteration += 1;
            guard(turn, turn.budget.check_wall_clock())?;
            let (visible, visible_tokens) = fit_request(turn, level)?;
            guard(turn, turn.budget.charge_llm_call())?;

            let Some(round) = model_round(turn, level, visible, visible_tokens).await? else {
                // Refused as too long, and fitted again: the same round, smaller.
                continue;
            };
            // Stuck after the last round, and not stopped for it: this was its last word.
            if let Some(stuck) = level.repeats.stuck() {
                return last_word(turn, level, round, stuck);
            }
            let round = invented_again(turn, level, round);
            if let Some(done) = change_made_again(turn, level, &round) {
                return Ok(done);
            }
            let round = saved_whole(turn, level, round);
            if round.calls.is_empty() {
                level.cut = round.cut;
                level.push(assistant(round.text.clone(), round.reasoning, Vec::new()));
                match settle(level, round.text) {
                    Some(end) => return Ok(end),
                    None => continue,
                }
            }
            level.push(assistant(round.text, round.reasoning, round.calls.clone()));
            level.made_calls = true;
            let mut verdicts = level.repeats.judge(&round.calls);
            let changes = |call: &ToolCall| {
                Callee::resolve(&level.scope, &call.name)
                    .is_ok_and(|callee| callee.category() == ToolCategory::Write)
            };
            copied::reject_copies(
                &mut verdicts,
                &round.calls,
                level.context.as_deref(),
                changes,
            );
            if level.scope.fit.small_model && level.asked_a_question() {
                unasked::reject_changes(&mut verdicts, &round.calls, changes);
            }
            let room = result_room(turn, level, visible_tokens, round.calls.len());
            let dispatched =
                dispatch(turn, below, &level.scope, &round.calls, &verdicts, room).await;
            level.repeats.observe(&verdicts, &dispatched.results);
            let said = whole_file_said(level, &dispatched.results);
            for result in dispatched.results {
                level.push(result);
            }
            if let Some(answer) = said {
                show_text(turn, level, &answer);
                level.push(assistant(answer.clone(), String::new(), Vec::new()));
                return Ok(LevelEnd::Answer(answer));
            }
            if turn.is_stopping() {
                return Err(LevelFailure::Stopped);
            }
            if let Some(result) = dispatched.finished {
                return Ok(LevelEnd::Structured(result));
            }
            if dispatched.switched {
                return Ok(LevelEnd::Switched);
            }
            if let Some(call) = level.repeats.stuck()
                && !gets_a_last_word(level)
            {
                return Err(LevelFailure::Loop(call));
            }
        }
    })
}

/// Fits the level's history to the window beside the tools it is offered, and
/// returns those tools. A cut that makes the pager appear is fitted again with it.
fn fit_request(turn: &Turn, level: &mut Level) -> Result<(Arc<[ToolSpec]>, u64), LevelFailure> {
    let mut recut =
        |id: &str, content: &str, max: usize| turn.keeps.results.refit(id, content, max);
    let budget = turn.accounts.request_budget(&level.scope);
    loop {
        let had_pager = turn.keeps.results.any();
        let (visible, tokens) = if level.whole_file.is_some() {
            (Arc::from([]), 0)
        } else {
            offered(turn, &level.scope)
        };
        let fixed = tokens + level.context_tokens();
        if let Err(observed) = history::fit(
            &mut level.history,
            budget,
            fixed,
            results::MIN_RESULT_BYTES,
            &mut recut,
        ) {
            turn.trip(turn.budget.tokens_exceeded(budget, observed));
            return Err(LevelFailure::Stopped);
        }
        if had_pager || !turn.keeps.results.any() {
            return Ok((visible, tokens));
        }
    }
}

/// The most one result of a round of `calls` calls, offered tools of `tools`
/// tokens, may take, in bytes: an equal
/// share of the room the history leaves, and at least half of what it could
/// leave once older rounds are pruned (the next request prunes them), within the
/// configured limit and never below a useful head and tail.
fn result_room(turn: &Turn, level: &Level, tools: u64, calls: usize) -> usize {
    let pager = if turn.keeps.results.any() {
        0
    } else {
        results::read_tool_result_tokens()
    };
    let budget = turn.accounts.request_budget(&level.scope);
    let fixed = tools + pager + level.context_tokens();
    let used = fixed
        + level
            .history
            .iter()
            .map(history::estimate_tokens)
            .sum::<u64>();
    let kept = fixed + history::protected_tokens(&level.history);
    let room = budget
        .saturating_sub(used)
        .max(budget.saturating_sub(kept) / 2);
    let calls = u64::try_from(calls.max(1)).unwrap_or(u64::MAX);
    let share = (room / calls).saturating_sub(history::MESSAGE_FRAMING + 1);
    history::tokens_to_bytes(share)
        .min(turn.limits.max_tool_result_bytes)
        .max(results::MIN_RESULT_BYTES)
}

/// The tools the model sees this round: the level's, and the pager once a
/// result of this turn has been cut.
fn offered(turn: &Turn, scope: &Scope) -> (Arc<[ToolSpec]>, u64) {
    let (visible, tokens) = scope.visible();
    if !turn.keeps.results.any() {
        return (visible, tokens);
    }
    let mut specs = visible.to_vec();
    specs.push(results::read_tool_result_spec());
    (specs.into(), tokens + results::read_tool_result_tokens())
}

fn guard<T>(
    turn: &Turn,
    check: Result<T, cairn_protocol::BudgetExceeded>,
) -> Result<T, LevelFailure> {
    check.map_err(|exceeded| {
        turn.trip(exceeded);
        LevelFailure::Stopped
    })
}

/// A round whose every call was written out as text and names no tool here: the
/// first time, the calls run and fail, which tells the model what it can call; the
/// next time, what it wrote is its answer. Small models asked only to talk write
/// JSON "calls" (`{"name": "say_hello", "arguments": {"message": "Hello!"}}`) and
/// go on inventing names after being told: their words end the turn, not a loop.
fn invented_again(turn: &Turn, level: &mut Level, mut round: Round) -> Round {
    let invented = !round.calls.is_empty()
        && round.calls.iter().all(|call| {
            call.written.is_some() && Callee::resolve(&level.scope, &call.name).is_err()
        });
    if !invented {
        return round;
    }
    if !level.told_no_such_tool {
        level.told_no_such_tool = true;
        return round;
    }
    // The written calls never streamed as text: they are shown now, after what did.
    let mut shown = String::new();
    for call in round.calls.drain(..) {
        if !round.text.trim().is_empty() || !shown.is_empty() {
            shown.push_str("\n\n");
        }
        shown.push_str(call.written.as_deref().unwrap_or_default());
    }
    show_text(turn, level, &shown);
    round.text = format!("{}{shown}", round.text.trim_end());
    round
}

/// A round of a level asked for a file's whole text (see `whole_file`): its one
/// fenced block becomes the writer's call.
fn saved_whole(turn: &Turn, level: &Level, mut round: Round) -> Round {
    if let Some(whole) = &level.whole_file
        && round.calls.is_empty()
        && round.cut.is_none()
        && let Some(call) = whole.call(&round.text, turn.ids.claim_call(""))
    {
        round.calls.push(call);
    }
    round
}

/// The level's answer once the file it was asked for was written, or not (see
/// `WholeFile::answer`). Whatever the writer said ends the level: asked again after
/// a refusal or a failed check, the 0.5B wrote the same text again (README "Small
/// models").
fn whole_file_said(level: &Level, results: &[ChatMessage]) -> Option<String> {
    let whole = level.whole_file.as_ref()?;
    results.iter().find_map(|result| match result {
        ChatMessage::Tool {
            content, is_error, ..
        } => Some(whole.answer(content, *is_error)),
        _ => None,
    })
}

/// What follows a stuck level's last word: the user is told why it came so.
const STUCK: &str = "(The model kept making the same call, so this answer was asked of it \
                     with no tools offered.)";

/// Whether a stuck level is asked for its last word: only for a question. Asked
/// for a change it never made, the 0.5B said the change was made ("The lamp is
/// painted purple."); a level that owes a structured result is never asked either:
/// words are not its result.
fn gets_a_last_word(level: &Level) -> bool {
    let owes_structure = level
        .scope
        .finish
        .as_ref()
        .is_some_and(|finish| finish.schema().is_some());
    !owes_structure && level.asked_a_question()
}

/// The round a stuck model was asked for with no tools offered: what it says is the
/// level's answer. The 0.5B, having read the right file, read it again until the
/// loop guard failed the turn; shown its results as the user's words and asked
/// only to answer, it answered. A call written even then, or nothing said, means
/// it is stuck for good.
fn last_word(
    turn: &Turn,
    level: &mut Level,
    round: Round,
    stuck: String,
) -> Result<LevelEnd, LevelFailure> {
    if !round.calls.is_empty() || round.text.trim().is_empty() {
        // What streamed is kept, as every answer cut short is; its calls never run.
        if !round.text.trim().is_empty() {
            level.push(assistant(round.text, round.reasoning, Vec::new()));
        }
        return Err(LevelFailure::Loop(stuck));
    }
    level.cut = round.cut;
    let note = format!("\n\n{STUCK}");
    show_text(turn, level, &note);
    let answer = format!("{}{note}", round.text);
    level.push(assistant(answer.clone(), round.reasoning, Vec::new()));
    Ok(LevelEnd::Answer(answer))
}

/// A round that only makes again changes made since the user asked, each with the
/// same arguments as one made well with only reading (or file changes that failed,
/// so changed nothing) since: nothing is left to do, so nothing runs and the level
/// ends, its answer saying so with what the changes did. Small models asked what
/// they did wrote the same file again instead (or read their source and wrote it
/// again, round after round; or, the 0.5B, tried an edit the tool refused and then
/// made its first edit again), until the loop guard failed a turn whose work was done.
fn change_made_again(turn: &Turn, level: &mut Level, round: &Round) -> Option<LevelEnd> {
    if round.calls.is_empty() || level.scope.finish.is_some() {
        return None;
    }
    let category = |name: &str| {
        Callee::resolve(&level.scope, name)
            .ok()
            .map(|callee| callee.category())
    };
    let earlier = level.calls_since_asked();
    let mut done = Vec::new();
    for call in &round.calls {
        // The newest earlier call it repeats, past reads, refused file changes and
        // the round's own changes made before: anything else may have changed what
        // it wrote (a command that failed may have written before it did).
        let (_, result) = earlier
            .iter()
            .take_while(|(earlier, result)| {
                let refused = matches!(result, ChatMessage::Tool { is_error: true, .. });
                match category(&earlier.name) {
                    Some(ToolCategory::Read) => true,
                    Some(ToolCategory::Write) if refused => true,
                    _ => round.calls.iter().any(|call| same_call(call, earlier)),
                }
            })
            .find(|(earlier, _)| same_call(earlier, call))?;
        let ChatMessage::Tool {
            content,
            is_error: false,
            ..
        } = result
        else {
            return None;
        };
        let callee = Callee::resolve(&level.scope, &call.name).ok()?;
        if callee.category() != ToolCategory::Write {
            return None;
        }
        done.push(content.trim().to_owned());
    }
    let answer = format!(
        "(The model made the same change again; it was done already, so it was not \
         run twice.) {}",
        done.join("; ")
    );
    show_text(turn, level, &answer);
    level.push(assistant(
        answer.clone(),
        round.reasoning.clone(),
        Vec::new(),
    ));
    Some(LevelEnd::Answer(answer))
}

/// Text the level's answer holds that never streamed from the model, shown as if
/// it had.
fn show_text(turn: &Turn, level: &Level, text: &str) {
    turn.emitter.emit(Event::Chunk(Chunk {
        content: text.to_owned(),
        parent_id: level.scope.parent_id.clone(),
        depth: level.scope.depth,
    }));
}

/// A level that answered without calling anything is done, unless it owes a
/// structured result: then prose that already is a valid result counts, and
/// anything else earns a reminder and another round. A level that acted and then
/// said nothing is asked once to say what it did: the user (or the level above)
/// would otherwise get no word that it was done.
fn settle(level: &mut Level, text: String) -> Option<LevelEnd> {
    if text.trim().is_empty() && level.made_calls && !level.asked_to_say && level.cut.is_none() {
        level.asked_to_say = true;
        level.push(ChatMessage::user(SAY_WHAT_YOU_DID));
        return None;
    }
    let Some(finish) = &level.scope.finish else {
        return Some(LevelEnd::Answer(text));
    };
    let Some(schema) = finish.schema() else {
        return Some(LevelEnd::Answer(text));
    };
    let problem = match serde_json::from_str::<Value>(strip_fence(&text)) {
        Ok(value) => match schema.check(&value) {
            Ok(()) => return Some(LevelEnd::Structured(value)),
            Err(mismatch) => mismatch.to_string(),
        },
        Err(_) => "the answer is not JSON".to_owned(),
    };
    level.push(ChatMessage::user(format!(
        "This subtask must end by calling {} with what its schema asks for ({problem}). \
         Call it now.",
        finish.name()
    )));
    None
}

/// The request for the level's next round, as its history and `tools` stand.
fn chat_request(level: &Level, tools: Arc<[ToolSpec]>) -> ChatRequest {
    let mut sampling = level.scope.sampling;
    sampling.max_tokens = sampling.max_tokens.or(level.scope.fit.answer_tokens);
    // A level still going while stuck is asking for its last word (see `run_level`).
    let answer_only = level.repeats.stuck().is_some();
    let tools = if answer_only { Arc::from([]) } else { tools };
    if sampling.temperature.is_none() && (!tools.is_empty() || answer_only) {
        // Small local models narrate calls instead of making them when they
        // sample; tool rounds decode greedily unless the user set a temperature,
        // and so does the last word of a level that made them.
        sampling.temperature = Some(0.0);
    }
    ChatRequest {
        model: level.scope.model.clone(),
        messages: level.sent_history(),
        tools,
        sampling,
        origin: level.origin(),
        answer_only,
    }
}

/// Fits the request `level` answers to a tiny model: opened with the files it
/// names (see `named_files`), and a change to one file asked as its whole text, with
/// no tools and a system message of its own (see `whole_file`).
pub(crate) fn fit_tiny_model(turn: &Turn, level: &mut Level) {
    let Some(workspace) = turn.workspace.as_deref() else {
        return;
    };
    let runs = |request: &GateRequest<'_>| turn.permissions.decide(request) == GateDecision::Run;
    let read = named_files::open_request(&mut level.history, workspace, &level.scope.tools, &runs);
    let blocked = |request: &GateRequest<'_>| {
        matches!(turn.permissions.decide(request), GateDecision::Block(_))
    };
    let Some(whole) = WholeFile::for_request(
        workspace,
        &level.scope.tools,
        &level.history,
        &read,
        &blocked,
    ) else {
        return;
    };
    tracing::info!(path = %whole.path, "a tiny model's change asked as the file's whole text");
    if let Some(system @ ChatMessage::System { .. }) = level.history.first_mut() {
        *system = ChatMessage::system(whole.system_prompt());
    }
    // The thread's lines (mode, folder) went into the 0.5B's file as its first lines.
    level.context = None;
    level.whole_file = Some(whole);
}

/// The level's first request, fitted as its first round would fit it, to be read
/// ahead of the question; `None` when it cannot fit at all. A new chat has no user
/// message yet to open with the thread's context block, so the block comes as one
/// of its own: the question then adds only itself to what the server read.
pub(crate) fn first_request(turn: &Turn, level: &mut Level) -> Option<ChatRequest> {
    let (tools, _) = fit_request(turn, level).ok()?;
    let mut request = chat_request(level, tools);
    let asked = request
        .messages
        .iter()
        .any(|message| matches!(message, ChatMessage::User { .. }));
    if let (false, Some(context)) = (asked, &level.context) {
        request.messages.push(ChatMessage::user(context.clone()));
    }
    Some(request)
}

/// Streams one model answer, forwarding deltas as they arrive, then records it.
/// On a stop the partial text is kept in the level's history before returning.
/// `None` when the server refused the request as too long and the level was
/// fitted again: the round is to be sent again.
async fn model_round(
    turn: &Turn,
    level: &mut Level,
    tools: Arc<[ToolSpec]>,
    tool_tokens: u64,
) -> Result<Option<Round>, LevelFailure> {
    let request = chat_request(level, tools);
    let answer_room = request.sampling.max_tokens;
    let prompt_estimate = tool_tokens
        + level.context_tokens()
        + level
            .history
            .iter()
            .map(history::estimate_tokens)
            .sum::<u64>();
    let (parent_id, depth) = (level.scope.parent_id.clone(), level.scope.depth);
    let collected = {
        let _thinking = turn.emitter.activity(Activity::Thinking);
        // The server's time is not the turn's: a slow machine is not a runaway.
        let _answering = turn.budget.pause();
        // Held while the server answers. Without one the turn is stopping, and the
        // round ends at once as stopped.
        let _slots = turn
            .slots
            .for_model(&level.scope, &turn.ending, &turn.emitter)
            .await;
        let mut reconnecting = None;
        round::collect(
            level.scope.server.client.stream_chat(request),
            &turn.ending.token(),
            |proposed| turn.ids.claim_call(proposed),
            |seen| match seen {
                Seen::Text(delta) => turn.emitter.emit(Event::Chunk(Chunk {
                    content: delta.to_owned(),
                    parent_id: parent_id.clone(),
                    depth,
                })),
                Seen::Reasoning(delta) => turn.emitter.emit(Event::Reasoning(Reasoning {
                    content: delta.to_owned(),
                    parent_id: parent_id.clone(),
                    depth,
                })),
                Seen::Reconnecting {
                    attempt,
                    delay,
                    reason,
                } => {
                    tracing::info!(attempt, ?delay, %reason, "the model server is busy; retrying");
                    reconnecting = Some(turn.emitter.activity(Activity::Reconnecting));
                }
                Seen::CallPending(shown) => {
                    // Its tool says what the call is, and which argument to show.
                    let callee = Callee::resolve(&level.scope, &shown.name).ok();
                    turn.emitter.emit(Event::ToolCallUpdate(ToolCallUpdate {
                        args: Some(Value::String(shown.arguments.clone())),
                        kind: callee.as_ref().and_then(Callee::kind),
                        streams: callee.as_ref().and_then(Callee::streams).map(str::to_owned),
                        ..ToolCallUpdate::new(
                            &shown.id,
                            &shown.name,
                            parent_id.clone(),
                            depth,
                            ToolCallStatus::Pending,
                        )
                    }));
                }
                Seen::PromptRead(read) => {
                    let left_ms = level.scope.server.reading(read);
                    turn.emitter.emit(Event::PromptProgress(PromptProgress {
                        parent_id: parent_id.clone(),
                        depth,
                        total: read.total,
                        cached: read.cached,
                        read: read.read,
                        elapsed_ms: read.elapsed_ms,
                        left_ms,
                    }));
                }
                Seen::Producing => reconnecting = None,
            },
        )
        .await
    };
    if let Ending::Failed(err) = &collected.ending
        && let Some(overflow) = err.overflow()
        && level.refits < MAX_REFITS
    {
        level.refits += 1;
        turn.accounts.add_usage(&Usage {
            llm_calls: 1,
            ..Default::default()
        });
        turn.accounts.record_call(ModelCall {
            operation: level.scope.operation.to_owned(),
            model: level.scope.model.clone(),
            server: Some(level.scope.server.name.clone()),
            depth: level.scope.depth,
            prompt_tokens: 0,
            completion_tokens: 0,
            estimated: false,
            latency_ms: millis(collected.elapsed),
            first_token_ms: None,
            error: Some(err.to_string()),
        });
        refit_refused(turn, level, prompt_estimate, overflow).await;
        return Ok(None);
    }
    let usage = collected.usage(prompt_estimate, answer_room);
    let read = (!usage.estimated).then_some(usage.prompt_tokens);
    let round = record_round(turn, level, collected, usage, prompt_estimate)?;
    if let Some(read) = read {
        notice_cut(turn, level, prompt_estimate, read).await;
    }
    Ok(Some(round))
}

/// A request the server refused as longer than the model's window, though it was
/// fitted to the window Cairn believed: the level learns what the server counted
/// (its estimate ran short) and the window it said it has, and says so.
async fn refit_refused(turn: &Turn, level: &mut Level, sent: u64, overflow: Overflow) {
    let believed = level.scope.fit.window.as_ref().map(|window| window.tokens);
    let counted = match overflow.counted {
        Some(counted) => counted,
        // A server that gives no count: take the estimate to have run short by half.
        None => sent + sent / 2,
    };
    turn.accounts.learn_count(&level.scope.model, sent, counted);
    let window = match (overflow.window, believed) {
        (Some(said), Some(believed)) => said.min(believed),
        (Some(said), None) => said,
        (None, Some(believed)) => believed,
        // Neither known: the server took less than it was sent.
        (None, None) => u32::try_from(sent.min(counted)).unwrap_or(u32::MAX),
    };
    let source = "the model server, refusing a longer prompt";
    fit_shown(turn, level, sent, counted, window, true, source).await;
}

/// A round the server answered after reading far less of its prompt than was
/// sent: it cut the start (Ollama does, past its window, in silence). The answer
/// stands, with a word that it was made from part of the prompt, and the level
/// fits what the server read from then on.
async fn notice_cut(turn: &Turn, level: &mut Level, sent: u64, read: u64) {
    if !read_only_part(read, sent) {
        return;
    }
    tracing::warn!(model = %level.scope.model, read, sent, "the server read only part of the prompt");
    let window = u32::try_from(read).unwrap_or(u32::MAX);
    let source = "what the model server read of a longer prompt";
    fit_shown(turn, level, sent, read, window, false, source).await;
}

/// Fits the level to `window` (the server's, said by `source`) where it is smaller
/// than the one believed, and says on the wire what the server did with the prompt.
async fn fit_shown(
    turn: &Turn,
    level: &mut Level,
    sent: u64,
    read: u64,
    window: u32,
    refused: bool,
    source: &str,
) {
    let believed = level.scope.fit.window.as_ref().map(|window| window.tokens);
    if believed.is_none_or(|believed| window < believed) {
        turn.placement
            .refit(&mut level.scope, ContextWindow::new(window, source))
            .await;
    }
    turn.emitter.emit(Event::PromptCut(PromptCut {
        parent_id: level.scope.parent_id.clone(),
        depth: level.scope.depth,
        sent,
        read,
        window,
        refused,
    }));
}

/// Counts a collected round (usage, the call log), reports its failure, and keeps
/// what a stopped round said.
fn record_round(
    turn: &Turn,
    level: &mut Level,
    collected: Collected,
    usage: Usage,
    prompt_estimate: u64,
) -> Result<Round, LevelFailure> {
    let mut server_failure = None;
    if !usage.estimated {
        turn.accounts
            .learn_count(&level.scope.model, prompt_estimate, usage.prompt_tokens);
    }
    turn.accounts.add_usage(&usage);
    let depth = level.scope.depth;
    let error = match &collected.ending {
        Ending::Complete => None,
        Ending::Stopped => Some("cancelled".to_owned()),
        Ending::Failed(err) => {
            // The `error` event tells the user; the log only adds detail.
            tracing::debug!(error = %err, depth, "model call failed");
            let server = &level.scope.server;
            // A profile's own model is not the one the user picked: say whose it is.
            let message = if !turn.placement.is_home(server) {
                format!(
                    "the agent `{}` runs on the server `{}`, which failed: {err}",
                    level.scope.agent.id, server.name
                )
            } else if turn.placement.is_thread_model(&level.scope.model) {
                err.to_string()
            } else {
                format!(
                    "the agent `{}` asks for the model `{}`: {err}",
                    level.scope.agent.id, level.scope.model
                )
            };
            // A subtask on another machine fails alone: the rest of the turn does
            // not depend on that machine.
            if depth == 0 || turn.placement.is_home(server) {
                turn.fail(ErrorEvent {
                    message: message.clone(),
                    kind: ErrorKind::Provider,
                });
            } else {
                server_failure = Some(message.clone());
            }
            Some(message)
        }
    };
    turn.accounts.record_call(ModelCall {
        operation: level.scope.operation.to_owned(),
        model: level.scope.model.clone(),
        server: Some(level.scope.server.name.clone()),
        depth,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        estimated: usage.estimated,
        latency_ms: millis(collected.elapsed),
        first_token_ms: collected.first_token.map(millis),
        error,
    });
    let mut round = collected.round;
    if depth == 0 {
        level.reasoning.push_str(&round.reasoning);
    }
    if matches!(collected.ending, Ending::Complete) {
        for (slot, call) in round.calls.iter_mut().enumerate() {
            // A call shown while it was written keeps the id it was shown under.
            call.id = match collected.pending.id_of(slot) {
                Some(id) => id.to_owned(),
                None => turn.ids.claim_call(&call.id),
            };
        }
        return Ok(round);
    }
    // Calls not yet complete are dropped: only whole calls enter history, so the
    // partial answer never leaves a call without its result.
    if !round.text.is_empty() || !round.reasoning.is_empty() {
        level.push(assistant(round.text, round.reasoning, Vec::new()));
    }
    Err(server_failure.map_or(LevelFailure::Stopped, LevelFailure::Server))
}

/// How many times one level sends a round again after the server refused it as too
/// long: once is the rule (the server said its count); twice covers a server that
/// said nothing to fit by.
const MAX_REFITS: u32 = 2;

/// Fewer tokens than any window a model works in (a server that cut a prompt kept a
/// whole window of it): a smaller count is a server counting something else, or
/// counting nothing.
const MIN_READ_OF_A_CUT: u64 = 512;

/// Whether a server that says it read `read` tokens of a prompt estimated at `sent`
/// read only part of it. Real tokenizers count 0.7–1.1 of the estimate; under half
/// is a prompt cut. Servers count the whole prompt, what their cache held included
/// (llama.cpp's `prompt_tokens`; Ollama's `prompt_eval_count` since its own runner,
/// 0.4).
fn read_only_part(read: u64, sent: u64) -> bool {
    read >= MIN_READ_OF_A_CUT && read.saturating_mul(2) < sent
}

/// What a level that acted and then said nothing is asked.
pub(crate) const SAY_WHAT_YOU_DID: &str =
    "Tell me in one or two sentences what you did and what came of it.";

fn assistant(content: String, reasoning: String, tool_calls: Vec<ToolCall>) -> ChatMessage {
    ChatMessage::Assistant {
        content,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls,
    }
}

/// The same tool with the same arguments (as JSON values: key order and spacing aside).
fn same_call(a: &ToolCall, b: &ToolCall) -> bool {
    a.name == b.name
        && match (
            serde_json::from_str::<Value>(&a.arguments),
            serde_json::from_str::<Value>(&b.arguments),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => a.arguments == b.arguments,
        }
}

/// JSON inside a ```json fence, as small models often write it.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|inner| inner.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}
