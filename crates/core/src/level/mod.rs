//! A level of a turn: what it is (its [`Scope`], laid out from a [`LevelPlan`]) and
//! its state as it runs ([`Level`]). The loop that runs one is in [`run`].

use std::sync::Arc;

use crate::agent::{Agent, AgentSetup};
use crate::model::{RequestOrigin, Sampling};
use cairn_protocol::{ChatMessage, Cut, ToolSpec};
use serde_json::Value;

use crate::context::ContextFit;
use crate::disclosure::{Disclosure, Offer, Offered};
use crate::engine_tools::{Place, registry};
use crate::events::Journal;
use crate::repeats::Repeats;
use crate::servers::ModelServer;
use crate::subtask::Finish;
use crate::toolbelt::Toolbelt;

mod run;

pub(crate) use run::{first_request, fit_tiny_model, run_level};

/// Where a level sits and what it is given, before its tools are shown.
pub(crate) struct LevelPlan {
    pub depth: u32,
    /// The `tool_call_id` of the `run_subtask` that started this level.
    pub parent_id: Option<String>,
    pub title: Option<String>,
    /// The profile the level runs as.
    pub agent: Arc<Agent>,
    /// The model its calls ask for, where it runs, and how they sample.
    pub model: String,
    pub server: Arc<ModelServer>,
    pub sampling: Sampling,
    /// Its tools, the profile's rules already applied.
    pub tools: Toolbelt,
    /// The tools a subtask was limited to by name, if it was.
    pub named: Option<Vec<String>>,
    /// Its model can call tools at all.
    pub can_call_tools: bool,
    /// The profiles the turn can reach.
    pub agents: AgentSetup,
    /// How deep subtasks may nest.
    pub max_depth: u32,
    /// How a child hands its result back; `None` at the root.
    pub finish: Option<Finish>,
    /// What its model calls are for, in the usage log (`turn`, `subtask`, `plan`, …).
    pub operation: &'static str,
}

impl LevelPlan {
    /// The level as the engine tools see it before it is laid out (no tool groups
    /// yet): what decides which of them it offers, and so what its prompt says.
    pub fn place(&self) -> Place<'_> {
        Place {
            depth: self.depth,
            max_depth: self.max_depth,
            agent: &self.agent,
            agents: &self.agents,
            can_call_tools: self.can_call_tools,
            named: self.named.as_deref(),
            finish: self.finish.as_ref(),
            disclosure: None,
        }
    }

    /// Whether the level offers the engine tool `name` (`run_subtask`, …).
    pub fn offers(&self, name: &str) -> bool {
        registry::offered(&self.place(), name)
    }
}

/// What a level is: where it sits in the tree and what it may call. Fixed for the
/// level's life; shared read-only with the calls it dispatches.
#[derive(Debug)]
pub(crate) struct Scope {
    pub depth: u32,
    /// The `tool_call_id` of the `run_subtask` that started this level.
    pub parent_id: Option<String>,
    pub title: Option<String>,
    pub agent: Arc<Agent>,
    pub model: String,
    pub server: Arc<ModelServer>,
    pub sampling: Sampling,
    pub tools: Toolbelt,
    /// The tools a subtask was limited to by name, if it was.
    pub named: Option<Vec<String>>,
    pub can_call_tools: bool,
    pub agents: AgentSetup,
    pub max_depth: u32,
    /// How a child hands its result back; `None` at the root.
    pub finish: Option<Finish>,
    pub operation: &'static str,
    /// How its requests fit its model's window: a level on another server has that
    /// server's window, not the root's.
    pub fit: ContextFit,
    /// The window is small: its prompt is the compact form.
    pub compact: bool,
    /// What the model may call (the tools plus the engine's own), shown at once or
    /// partly on demand.
    offered: Offered,
}

impl Scope {
    /// The level `plan` describes, laid out for its window: its tools shown or folded,
    /// and its system prompt (`prompt(plan, compact)`), returned beside it.
    pub fn lay_out(
        plan: LevelPlan,
        fit: &ContextFit,
        prompt: impl Fn(&LevelPlan, bool) -> String,
    ) -> (Self, String) {
        let offers = level_offers(&plan.tools, &plan.place());
        let offered_count = offers.len();
        let layout = fit.lay_out(offers, fit.limits.max_visible_tools, |compact| {
            prompt(&plan, compact)
        });
        let LevelPlan {
            depth,
            parent_id,
            title,
            agent,
            model,
            server,
            sampling,
            tools,
            named,
            can_call_tools,
            agents,
            max_depth,
            finish,
            operation,
        } = plan;
        if layout.on_demand {
            tracing::info!(
                depth,
                tools = offered_count,
                compact = layout.compact,
                "the tools would crowd the model's context; some are shown on demand"
            );
        }
        let scope = Self {
            depth,
            parent_id,
            title,
            agent,
            model,
            server,
            sampling,
            tools,
            named,
            can_call_tools,
            agents,
            max_depth,
            finish,
            operation,
            fit: fit.clone(),
            compact: layout.compact,
            offered: layout.offered,
        };
        (scope, layout.system)
    }

    /// The tools shown to the model this round, and their size in tokens.
    pub fn visible(&self) -> (Arc<[ToolSpec]>, u64) {
        self.offered.visible()
    }

    /// The tool groups, when some tools wait in them.
    pub fn disclosure(&self) -> Option<&Disclosure> {
        self.offered.disclosure()
    }

    /// The level as an engine tool called at it sees it.
    pub fn place(&self) -> Place<'_> {
        Place {
            depth: self.depth,
            max_depth: self.max_depth,
            agent: &self.agent,
            agents: &self.agents,
            can_call_tools: self.can_call_tools,
            named: self.named.as_deref(),
            finish: self.finish.as_ref(),
            disclosure: self.disclosure(),
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

/// The tools' offers, then the engine's own a level at `place` offers beside them.
pub(crate) fn level_offers(tools: &Toolbelt, place: &Place<'_>) -> Vec<Offer> {
    tools.offers().chain(registry::offers(place)).collect()
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
    /// The calls it keeps repeating.
    repeats: Repeats,
    /// Why its last answer was cut before the model finished it, if it was.
    pub cut: Option<Cut>,
    /// The root's only: what its first message opens with (the thread's mode, folder
    /// and `AGENTS.md`; see `prompt`). Added as each request is made, to the first
    /// user message the fitted history still holds, so that pruning never loses it.
    pub context: Option<String>,
    /// Whether it has called anything yet.
    made_calls: bool,
    /// Whether it was asked to say what it did after acting in silence.
    asked_to_say: bool,
    /// Whether it was told that a tool it wrote out as text does not exist.
    told_no_such_tool: bool,
    /// Rounds sent again after the server refused them as too long.
    pub refits: u32,
    /// The file a tiny model was asked for whole, its answer saved as it (see
    /// `whole_file`): the level offers no tools.
    pub whole_file: Option<crate::whole_file::WholeFile>,
}

#[derive(Debug)]
pub(crate) enum LevelEnd {
    Answer(String),
    Structured(Value),
    /// `switch_agent` handed the thread over (the root only).
    Switched,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LevelFailure {
    /// The level used its iterations without finishing.
    IterationLimit(u32),
    /// The model kept repeating this call after it was refused.
    Loop(String),
    /// The whole turn is stopping (user, budget, provider); the reason is on the turn.
    Stopped,
    /// The server of a subtask on another machine failed: that subtask ends with
    /// this reason, the turn goes on.
    Server(String),
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
            repeats: Repeats::default(),
            cut: None,
            context: None,
            made_calls: false,
            asked_to_say: false,
            refits: 0,
            told_no_such_tool: false,
            whole_file: None,
        }
    }

    /// The estimated tokens of the context its requests carry besides its history.
    fn context_tokens(&self) -> u64 {
        self.context
            .as_deref()
            .map_or(0, |context| crate::history::bytes_to_tokens(context.len()))
    }

    /// The history as it is sent: the context opening its first user message.
    fn sent_history(&self) -> Vec<ChatMessage> {
        let mut messages = self.history.clone();
        if let Some(context) = &self.context
            && let Some(ChatMessage::User { content }) = messages
                .iter_mut()
                .find(|message| matches!(message, ChatMessage::User { .. }))
        {
            content.insert_str(0, context);
        }
        messages
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

    /// The calls made since the user last spoke, newest first, each with its result
    /// (a call whose result is not in the history is left out).
    fn calls_since_asked(&self) -> Vec<(&cairn_protocol::ToolCall, &ChatMessage)> {
        let since = self
            .history
            .iter()
            .rposition(|message| matches!(message, ChatMessage::User { .. }))
            .map_or(0, |at| at + 1);
        let messages = &self.history[since..];
        let result_of = |id: &str| {
            messages.iter().find(
                |message| matches!(message, ChatMessage::Tool { tool_call_id, .. } if tool_call_id == id),
            )
        };
        messages
            .iter()
            .rev()
            .flat_map(|message| message.tool_calls().iter().rev())
            .filter_map(|call| Some((call, result_of(&call.id)?)))
            .collect()
    }

    /// Whether the words the level last heard from its user (or its parent) ask a
    /// question rather than for a change.
    fn asked_a_question(&self) -> bool {
        crate::prompt::last_asks_a_question(&self.history)
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
