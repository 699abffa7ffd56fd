//! The agent loop, one implementation for every depth.
//!
//! iteration: budgets → prune history → stream a model round (deltas out as events)
//! → no calls: the level's answer → calls: dispatch them, append every result → again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use cairn_protocol::{
    ChatMessage, Chunk, ErrorEvent, ErrorKind, Event, ModelCall, Reasoning, ToolCall, ToolSpec,
    Usage,
};
use cairn_providers::{ChatRequest, ModelEvent, RequestOrigin, TokenUsage};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::disclosure::Disclosure;
use crate::events::Activity;
use crate::history;
use crate::session::Journal;
use crate::subtask::{self, OutputSchema};
use crate::toolbelt::Toolbelt;
use crate::turn::Turn;

/// What a level is: where it sits in the tree and what it may call. Fixed for the
/// level's life; shared read-only with the calls it dispatches.
#[derive(Debug)]
pub(crate) struct Scope {
    pub depth: u32,
    /// The `tool_call_id` of the `run_subtask` that started this level.
    pub parent_id: Option<String>,
    pub title: Option<String>,
    pub tools: Toolbelt,
    /// Whether `run_subtask` is offered here.
    pub can_spawn: bool,
    /// Set for subtasks that must end with a structured result.
    pub schema: Option<OutputSchema>,
    /// What the model may call: the tools plus the engine's own.
    pub specs: Arc<[ToolSpec]>,
    spec_tokens: u64,
    /// Set when there are too many tools to show at once.
    pub disclosure: Option<Disclosure>,
}

impl Scope {
    pub fn new(
        depth: u32,
        parent_id: Option<String>,
        title: Option<String>,
        tools: Toolbelt,
        can_spawn: bool,
        schema: Option<OutputSchema>,
        tool_budget: usize,
    ) -> Self {
        let mut specs: Vec<ToolSpec> = tools.specs().to_vec();
        if can_spawn {
            specs.push(subtask::run_subtask_spec());
        }
        if depth > 0 {
            specs.push(subtask::finish_subtask_spec(
                schema.as_ref().map(|s| &s.source),
            ));
        }
        let disclosure = Disclosure::over_budget(&specs, tool_budget);
        let spec_bytes = serde_json::to_string(&specs).map_or(0, |text| text.len());
        Self {
            depth,
            parent_id,
            title,
            tools,
            can_spawn,
            schema,
            specs: specs.into(),
            spec_tokens: history::bytes_to_tokens(spec_bytes),
            disclosure,
        }
    }

    /// The tools shown to the model this round, and their size in tokens.
    pub fn visible(&self) -> (Arc<[ToolSpec]>, u64) {
        match &self.disclosure {
            None => (Arc::clone(&self.specs), self.spec_tokens),
            Some(disclosure) => {
                let visible = disclosure.visible();
                let bytes = serde_json::to_string(&*visible).map_or(0, |text| text.len());
                (visible, history::bytes_to_tokens(bytes))
            }
        }
    }

    /// Names the model sees here, for "unknown tool" errors.
    pub fn callable_names(&self) -> Vec<String> {
        self.visible()
            .0
            .iter()
            .map(|spec| spec.name.clone())
            .collect()
    }
}

/// A level's mutable state: its conversation and what it has said.
#[derive(Debug)]
pub(crate) struct Level {
    pub scope: Scope,
    history: Vec<ChatMessage>,
    /// Every message this level added, pruned or not: the root's part of the thread.
    appended: Vec<ChatMessage>,
    texts: Vec<String>,
    reasoning: String,
    /// Set on the root level only: told of each message as it is appended.
    pub journal: Option<Arc<dyn Journal>>,
}

#[derive(Debug)]
pub(crate) enum LevelEnd {
    Answer(String),
    Structured(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LevelFailure {
    /// The level used its iterations without finishing.
    IterationLimit(u32),
    /// The whole turn is stopping (user, budget, provider); the reason is on the turn.
    Stopped,
}

/// The assistant side of one model round.
struct Round {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
}

impl Level {
    pub fn new(scope: Scope, history: Vec<ChatMessage>) -> Self {
        Self {
            scope,
            history,
            appended: Vec::new(),
            texts: Vec::new(),
            reasoning: String::new(),
            journal: None,
        }
    }

    fn push(&mut self, message: ChatMessage) {
        if let ChatMessage::Assistant { content, .. } = &message
            && !content.is_empty()
        {
            self.texts.push(content.clone());
        }
        if let Some(journal) = &self.journal {
            journal.root_message(&message);
        }
        self.appended.push(message.clone());
        self.history.push(message);
    }

    /// (answer text, reasoning, appended messages).
    pub fn into_parts(self) -> (String, String, Vec<ChatMessage>) {
        (self.texts.join("\n\n"), self.reasoning, self.appended)
    }

    fn origin(&self) -> RequestOrigin {
        RequestOrigin {
            depth: self.scope.depth,
            parent_id: self.scope.parent_id.clone(),
            subtask_title: self.scope.title.clone(),
        }
    }
}

type LevelFuture<'a> = Pin<Box<dyn Future<Output = Result<LevelEnd, LevelFailure>> + Send + 'a>>;

impl Turn {
    /// Runs a level to its end. Boxed: subtasks recurse through it.
    pub(crate) fn run_level<'a>(&'a self, level: &'a mut Level) -> LevelFuture<'a> {
        Box::pin(async move {
            let mut iteration = 0;
            loop {
                if self.is_stopping() {
                    return Err(LevelFailure::Stopped);
                }
                if iteration == self.limits.max_iterations_per_level {
                    return Err(LevelFailure::IterationLimit(iteration));
                }
                iteration += 1;
                self.guard(self.budget.check_wall_clock())?;
                let (visible, visible_tokens) = level.scope.visible();
                if let Err(observed) = history::prune(
                    &mut level.history,
                    self.limits.max_history_tokens,
                    visible_tokens,
                ) {
                    self.trip(self.budget.tokens_exceeded(observed));
                    return Err(LevelFailure::Stopped);
                }
                self.guard(self.budget.charge_llm_call())?;

                let round = self.model_round(level, visible, visible_tokens).await?;
                if round.calls.is_empty() {
                    level.push(assistant(round.text.clone(), round.reasoning, Vec::new()));
                    match self.settle(level, round.text) {
                        Some(end) => return Ok(end),
                        None => continue,
                    }
                }
                level.push(assistant(round.text, round.reasoning, round.calls.clone()));
                let dispatched = self.dispatch(&level.scope, &round.calls).await;
                for result in dispatched.results {
                    level.push(result);
                }
                if self.is_stopping() {
                    return Err(LevelFailure::Stopped);
                }
                if let Some(result) = dispatched.finished {
                    return Ok(LevelEnd::Structured(result));
                }
            }
        })
    }

    fn guard<T>(
        &self,
        check: Result<T, cairn_protocol::BudgetExceeded>,
    ) -> Result<T, LevelFailure> {
        check.map_err(|exceeded| {
            self.trip(exceeded);
            LevelFailure::Stopped
        })
    }

    /// A level that answered without calling anything is done, unless it owes a
    /// structured result: then prose that already is a valid result counts, and
    /// anything else earns a reminder and another round.
    fn settle(&self, level: &mut Level, text: String) -> Option<LevelEnd> {
        let Some(schema) = &level.scope.schema else {
            return Some(LevelEnd::Answer(text));
        };
        let problem = match serde_json::from_str::<Value>(strip_fence(&text)) {
            Ok(value) => match schema.check(&value) {
                Ok(()) => return Some(LevelEnd::Structured(value)),
                Err(problem) => problem,
            },
            Err(_) => "the answer is not JSON".to_owned(),
        };
        level.push(ChatMessage::user(format!(
            "This subtask must end by calling {} with a `result` that matches its output \
             schema ({problem}). Call it now.",
            subtask::FINISH_SUBTASK
        )));
        None
    }

    /// Streams one model answer, forwarding deltas as they arrive. On a stop the
    /// partial text is kept in the level's history before returning.
    async fn model_round(
        &self,
        level: &mut Level,
        tools: Arc<[ToolSpec]>,
        tool_tokens: u64,
    ) -> Result<Round, LevelFailure> {
        let mut sampling = self.sampling;
        if sampling.temperature.is_none() && !tools.is_empty() {
            // Small local models narrate calls instead of making them when they
            // sample; tool rounds decode greedily unless the user set a temperature.
            sampling.temperature = Some(0.0);
        }
        let request = ChatRequest {
            model: self.model_name.clone(),
            messages: level.history.clone(),
            tools,
            sampling,
            origin: level.origin(),
        };
        let started = Instant::now();
        let mut first_token = None;
        let mut failure = None;
        let prompt_estimate = tool_tokens
            + level
                .history
                .iter()
                .map(history::estimate_tokens)
                .sum::<u64>();
        let thinking = self.emitter.activity(Activity::Thinking);
        let mut stream = self.model.stream_chat(request);
        let mut round = Round {
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
        };
        let mut reported: Option<TokenUsage> = None;
        let mut reconnecting = None;
        let stopped = loop {
            let next = tokio::select! {
                biased;
                () = self.cancel.cancelled() => break true,
                next = stream.next() => next,
            };
            if matches!(
                next,
                Some(Ok(ModelEvent::Text(_)
                    | ModelEvent::Reasoning(_)
                    | ModelEvent::ToolCall(_)))
            ) {
                reconnecting = None;
                first_token.get_or_insert_with(|| started.elapsed());
            }
            match next {
                None => break false,
                Some(Ok(ModelEvent::Text(delta))) => {
                    round.text.push_str(&delta);
                    self.emitter.emit(Event::Chunk(Chunk {
                        content: delta,
                        parent_id: level.scope.parent_id.clone(),
                        depth: level.scope.depth,
                    }));
                }
                Some(Ok(ModelEvent::Reasoning(delta))) => {
                    round.reasoning.push_str(&delta);
                    self.emitter.emit(Event::Reasoning(Reasoning {
                        content: delta,
                        parent_id: level.scope.parent_id.clone(),
                        depth: level.scope.depth,
                    }));
                }
                Some(Ok(ModelEvent::ToolCall(mut call))) => {
                    call.id = self.ids.claim_call(&call.id);
                    round.calls.push(call);
                }
                // A forced retry answers twice in one round: both count.
                Some(Ok(ModelEvent::Usage(usage))) => {
                    let total = reported.get_or_insert_with(TokenUsage::default);
                    total.prompt_tokens += usage.prompt_tokens;
                    total.completion_tokens += usage.completion_tokens;
                }
                Some(Ok(ModelEvent::Finished(_))) => {}
                Some(Ok(ModelEvent::Reconnecting {
                    attempt,
                    delay,
                    reason,
                })) => {
                    tracing::info!(attempt, ?delay, %reason, "the model server is busy; retrying");
                    reconnecting = Some(self.emitter.activity(Activity::Reconnecting));
                }
                Some(Err(err)) => {
                    // The `error` event tells the user; the log only adds detail.
                    tracing::debug!(error = %err, depth = level.scope.depth, "model call failed");
                    failure = Some(err.to_string());
                    self.fail(ErrorEvent {
                        message: err.to_string(),
                        kind: ErrorKind::Provider,
                    });
                    break true;
                }
            }
        };
        drop(stream);
        drop(reconnecting);
        drop(thinking);
        let usage = round_usage(reported, prompt_estimate, &round);
        self.add_usage(&usage);
        self.record_call(ModelCall {
            operation: if level.scope.depth == 0 {
                "chat"
            } else {
                "subtask"
            }
            .to_owned(),
            model: self.model_name.clone(),
            depth: level.scope.depth,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            estimated: usage.estimated,
            latency_ms: millis(started.elapsed()),
            first_token_ms: first_token.map(millis),
            error: failure.or_else(|| stopped.then(|| "cancelled".to_owned())),
        });
        if level.scope.depth == 0 {
            level.reasoning.push_str(&round.reasoning);
        }
        if stopped {
            // Calls not yet complete are dropped: only whole calls enter history, so
            // the partial answer never leaves a call without its result.
            if !round.text.is_empty() || !round.reasoning.is_empty() {
                level.push(assistant(round.text, round.reasoning, Vec::new()));
            }
            return Err(LevelFailure::Stopped);
        }
        Ok(round)
    }
}

fn assistant(content: String, reasoning: String, tool_calls: Vec<ToolCall>) -> ChatMessage {
    ChatMessage::Assistant {
        content,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls,
    }
}

fn round_usage(reported: Option<TokenUsage>, prompt_estimate: u64, round: &Round) -> Usage {
    let (prompt_tokens, completion_tokens, estimated) = match reported {
        Some(usage) => (usage.prompt_tokens, usage.completion_tokens, false),
        None => {
            let produced = round.text.len()
                + round.reasoning.len()
                + round
                    .calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>();
            (prompt_estimate, history::bytes_to_tokens(produced), true)
        }
    };
    Usage {
        prompt_tokens,
        completion_tokens,
        llm_calls: 1,
        tool_calls: 0,
        estimated,
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

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
