//! One assistant turn as the thread view shows it, built from the event wire or
//! from a stored message.
//!
//! events → root segments (text and cards in the order they came) → cards by id,
//! each with its own child segments (a subtask's text and calls) → the approval a
//! card waits on, in the card's own slot. Pure data: the view renders it, the host
//! tests it.

use std::collections::HashMap;
use std::sync::Arc;

use cairn_protocol::{
    AgentStateKind, ApprovalPreview, BudgetExceeded, CallKind, Cut, ErrorEvent, Event,
    ExecutionMode, ExecutionTree, Image, MessageStatus, Piece, PlanStep, PromptCut, PromptProgress,
    ToolApprovalRequest, ToolCallStatus, ToolCallUpdate, TreePlan, TurnStatus, pieces,
    tree::preview,
};
use serde_json::Value;

/// A piece of a level: text it said, or a call it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    Card(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardState {
    Running,
    Done,
    Failed,
    /// The user denied it: the card says so rather than what the model was told.
    Denied,
}

impl CardState {
    fn ended(is_error: Option<bool>, denied: bool) -> Self {
        match (denied, is_error) {
            (true, _) => Self::Denied,
            (false, Some(true)) => Self::Failed,
            (false, _) => Self::Done,
        }
    }
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub id: String,
    pub parent_id: Option<String>,
    pub depth: u32,
    pub name: String,
    /// What kind of call it is, as its tool said (a subtask, a plan, …); `None` for a
    /// plain call.
    pub kind: Option<CallKind>,
    /// While the call is written: the argument its tool shows as it grows.
    pub streams: Option<String>,
    /// A subtask's title.
    pub title: Option<String>,
    /// What the call acts on, as its tool said (none while it is written, nor for an
    /// answer stored before tools said).
    pub subject: Option<String>,
    pub args: Option<Value>,
    /// Shared: a result can be megabytes, and views clone cards freely.
    pub result: Option<Arc<Value>>,
    pub state: CardState,
    /// Known once it ended (from the view's clock, or the stored tree); waits for
    /// the user included.
    pub duration_ms: Option<u64>,
    /// How much of that went to waiting for the user's approval.
    pub waited_ms: u64,
    pub started_at_ms: Option<f64>,
    /// A subtask's own text and calls, in order.
    pub children: Vec<Segment>,
    pub approval: Option<ToolApprovalRequest>,
    /// Cards below the root start collapsed.
    pub expanded: bool,
    /// The model is still writing the call: `args` is the text of its arguments so far.
    pub pending: bool,
    /// Images the tool returned (shared, as `result`).
    pub images: Arc<[Image]>,
    /// The change the call made to a file, once it is done.
    pub change: Option<Arc<ApprovalPreview>>,
    /// A stored card's whole result size, where `result` is only its start: the whole
    /// is read from the store when asked for.
    pub result_bytes: Option<u64>,
    /// A subtask's model server, when it ran on another than the thread's (or waited
    /// for one of that server's slots).
    pub server: Option<String>,
    /// The subtask waits for a free slot on `server` right now.
    pub waiting_for_slot: bool,
}

impl Card {
    /// The card of a call as its first event tells it.
    fn started(update: &ToolCallUpdate, now_ms: f64) -> Self {
        Self {
            id: update.tool_call_id.clone(),
            parent_id: update.parent_id.clone(),
            depth: update.depth,
            name: update.name.clone(),
            kind: update.kind,
            streams: update.streams.clone(),
            title: update.subtask_title(),
            subject: update.subject.clone(),
            args: update.args.clone(),
            result: None,
            state: CardState::Running,
            duration_ms: None,
            waited_ms: 0,
            started_at_ms: Some(now_ms),
            children: Vec::new(),
            approval: None,
            expanded: starts_open(update.kind, update.depth),
            pending: false,
            images: Arc::from([]),
            change: None,
            result_bytes: None,
            server: None,
            waiting_for_slot: false,
        }
    }

    /// A card's name in an outline: a subtask's (or plan's) title, else the tool's.
    /// (The window's header says more: see `describe::Headline`.)
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// Plumbing folded into the card above it: a child level's finishing call that
    /// worked (its arguments are what the card above already shows as its result or
    /// checklist; one that failed stays in sight, as the reason the level went on).
    pub fn folded(&self) -> bool {
        self.kind == Some(CallKind::Finish) && self.state != CardState::Failed
    }

    /// Whether the card has ended for good: no question open, nothing being written.
    /// Its body can then be drawn once; only "Show all" lengthens its result. A plan's
    /// card is left out: its checklist is read from the turn's plans and steps, not
    /// from the card, so it stays drawn as it was.
    pub fn settled(&self) -> bool {
        self.state != CardState::Running
            && self.approval.is_none()
            && !self.pending
            && self.kind != Some(CallKind::Plan)
    }

    /// Whether the result only repeats the text the card's level ended with, shown just
    /// above it: a subtask answering in words returns its last text as its result. A
    /// stored result is a preview, so it may be that text cut.
    pub fn result_repeats_text(&self) -> bool {
        let Some(Value::String(result)) = self.result.as_deref() else {
            return false;
        };
        let Some(Segment::Text(last)) = self.children.last() else {
            return false;
        };
        let result = result.trim();
        !result.is_empty() && (result == last.trim() || result == preview(last).trim())
    }

    /// The time the call took on its own, waits for the user left out.
    pub fn own_time_ms(&self) -> Option<u64> {
        self.duration_ms
            .map(|total| total.saturating_sub(self.waited_ms))
    }
}

/// How far a plan's step got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    Waiting,
    Running,
    Done,
    Failed,
    Skipped,
}

/// The whole turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnView {
    pub segments: Vec<Segment>,
    pub reasoning: String,
    pub cards: HashMap<String, Card>,
    pub state: Option<AgentStateKind>,
    pub budget: Option<BudgetExceeded>,
    pub error: Option<ErrorEvent>,
    pub plan: Option<String>,
    /// The plans `create_plan` made, by the id of its call (the card they show in).
    pub plans: HashMap<String, TreePlan>,
    /// A plan kept as a draft in this answer, by its id: the user may run it.
    pub draft: Option<String>,
    pub finished: Option<TurnStatus>,
    /// The thread the turn ran in, once its `done` told.
    pub thread_id: Option<String>,
    /// The stored answer this is, once its `done` told (what its usage is kept by).
    pub message_id: Option<String>,
    /// The answer's text is streaming at the root right now (then it shows itself:
    /// no "Thinking…" beside it).
    pub writing: bool,
    /// Why the answer was cut before the model finished it, if it was.
    pub cut: Option<Cut>,
    /// The files this answer changed that Restore can put back: as stored, or (live)
    /// as its calls said.
    pub restorable: Vec<String>,
    /// The model server the answer came from, when not the thread's own (a hand-over
    /// to a profile on another machine).
    pub server: Option<String>,
    /// The root waits for a free slot on this server right now.
    pub waiting_for_slot: Option<String>,
    /// How far the server has read the root's latest prompt, where it says.
    pub reading: Option<PromptProgress>,
    /// The server read only part of the root's prompt, or refused it as too long.
    pub prompt_cut: Option<PromptCut>,
}

impl TurnView {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replays a whole stream (a late attach gets the events so far first).
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>, now_ms: f64) -> Self {
        let mut view = Self::new();
        for event in events {
            view.apply(event, now_ms);
        }
        view
    }

    /// A stored answer as it was shown: its text and cards in their order at every
    /// depth (an answer stored before timelines were kept: its cards, then its text).
    pub fn from_stored(content: &str, tree: Option<&ExecutionTree>, status: MessageStatus) -> Self {
        let mut view = Self::new();
        view.segments = view.stored_level(tree, content, None, 0);
        for plan in tree.into_iter().flat_map(|tree| &tree.plans) {
            view.note_plan(plan.clone());
        }
        view.draft = tree
            .and_then(|tree| tree.plans.last())
            .filter(|plan| plan.created.execution_mode == ExecutionMode::DraftOnly)
            .map(|plan| plan.created.plan_id.clone());
        view.cut = tree.and_then(|tree| tree.cut);
        view.prompt_cut = tree.and_then(|tree| tree.prompt_cut.clone());
        view.server = tree.and_then(|tree| tree.server.clone());
        view.finished = Some(match status {
            MessageStatus::Complete => TurnStatus::Completed,
            // A cut answer's turn completed; only its answer is partial.
            MessageStatus::Partial if view.cut.is_some() => TurnStatus::Completed,
            MessageStatus::Partial => TurnStatus::BudgetExceeded,
            MessageStatus::Cancelled => TurnStatus::Cancelled,
            MessageStatus::Failed => TurnStatus::Failed,
        });
        view
    }

    /// One level of a stored answer: its segments, with its cards (and theirs) added.
    fn stored_level(
        &mut self,
        tree: Option<&ExecutionTree>,
        content: &str,
        parent: Option<&str>,
        depth: u32,
    ) -> Vec<Segment> {
        let mut segments = Vec::new();
        for piece in pieces(tree, content, parent) {
            match piece {
                Piece::Text(text) => segments.push(Segment::Text(text.to_owned())),
                Piece::Call(node) => {
                    let children = self.stored_level(tree, content, Some(&node.id), depth + 1);
                    self.cards.insert(
                        node.id.clone(),
                        Card {
                            id: node.id.clone(),
                            parent_id: node.parent_id.clone(),
                            depth,
                            name: node.name.clone(),
                            kind: node.kind,
                            streams: None,
                            title: node.title.clone(),
                            subject: node.subject.clone(),
                            args: node.args_preview.as_deref().map(preview_value),
                            result: node
                                .result_preview
                                .as_deref()
                                .map(|text| Arc::new(preview_value(text))),
                            state: CardState::ended(node.is_error, node.denied),
                            duration_ms: Some(node.duration_ms),
                            waited_ms: node.waited_ms,
                            started_at_ms: None,
                            children,
                            approval: None,
                            expanded: starts_open(node.kind, depth),
                            pending: false,
                            images: Arc::from(node.images.as_slice()),
                            change: node.change.clone().map(Arc::new),
                            result_bytes: node.result_bytes,
                            server: node.server.clone(),
                            waiting_for_slot: false,
                        },
                    );
                    segments.push(Segment::Card(node.id.clone()));
                }
            }
        }
        segments
    }

    /// Takes one event in. `now_ms` is the view's clock, for durations.
    pub fn apply(&mut self, event: &Event, now_ms: f64) {
        match event {
            Event::Chunk(_) | Event::Reasoning(_) | Event::Done(_) => {}
            _ => self.writing = false,
        }
        match event {
            Event::Chunk(chunk) => {
                self.writing |= chunk.parent_id.is_none() && !chunk.content.is_empty();
                self.push_text(chunk.parent_id.as_deref(), &chunk.content);
            }
            Event::Reasoning(reasoning) if reasoning.parent_id.is_none() => {
                self.reasoning.push_str(&reasoning.content);
            }
            Event::Reasoning(_) => {}
            Event::ToolCallUpdate(update) => self.call_update(update, now_ms),
            Event::ToolApprovalRequest(request) => {
                if let Some(card) = self.cards.get_mut(&request.tool_call_id) {
                    card.approval = Some(request.clone());
                    // A question inside a collapsed subtask must be seen: open the way.
                    card.expanded = true;
                    let mut parent = card.parent_id.clone();
                    while let Some(id) = parent {
                        let Some(up) = self.cards.get_mut(&id) else {
                            break;
                        };
                        up.expanded = true;
                        parent = up.parent_id.clone();
                    }
                }
            }
            Event::BudgetExceeded(exceeded) => self.budget = Some(*exceeded),
            Event::AgentState(state) => self.state = Some(state.state),
            Event::PromptProgress(progress) if progress.parent_id.is_none() => {
                self.reading = Some(progress.clone());
            }
            Event::PromptCut(cut) if cut.parent_id.is_none() => {
                self.prompt_cut = Some(cut.clone());
            }
            Event::ServerState(state) => match &state.parent_id {
                Some(id) => {
                    if let Some(card) = self.cards.get_mut(id) {
                        card.server = Some(state.server.clone());
                        card.waiting_for_slot = state.waiting;
                    }
                }
                None => {
                    self.server = Some(state.server.clone());
                    self.waiting_for_slot = state.waiting.then(|| state.server.clone());
                }
            },
            Event::PlanReady(plan) => {
                self.plan = Some(plan.plan.clone());
                self.draft.clone_from(&plan.plan_id);
            }
            Event::PlanCreated(created) => self.note_plan(TreePlan {
                created: created.clone(),
                review: None,
            }),
            Event::PlanReview(review) => {
                if let Some(plan) = self.plans.get_mut(&review.tool_call_id) {
                    plan.review = Some(review.clone());
                }
            }
            Event::Done(done) => {
                self.drop_unmade_calls();
                self.finished = Some(done.status);
                self.cut = done.cut;
                self.thread_id = Some(done.thread_id.clone());
                self.message_id = Some(done.message_id.clone());
            }
            // This answer is over: the next agent's follows in an answer of its own.
            Event::AgentSwitched(switched) => {
                self.finished = Some(TurnStatus::Completed);
                self.thread_id = Some(switched.thread_id.clone());
            }
            Event::Error(error) => self.error = Some(error.clone()),
            _ => {}
        }
    }

    /// A call being written, starting or ending.
    fn call_update(&mut self, update: &ToolCallUpdate, now_ms: f64) {
        match update.status {
            ToolCallStatus::Pending => match self.cards.get_mut(&update.tool_call_id) {
                Some(card) if card.pending => card.args.clone_from(&update.args),
                Some(_) => {}
                None => self.place(Card {
                    pending: true,
                    ..Card::started(update, now_ms)
                }),
            },
            ToolCallStatus::Start => match self.cards.get_mut(&update.tool_call_id) {
                // The card shown while the model wrote the call becomes the call.
                Some(card) if card.pending => {
                    *card = Card {
                        children: std::mem::take(&mut card.children),
                        ..Card::started(update, now_ms)
                    };
                }
                Some(_) => {}
                None => self.place(Card::started(update, now_ms)),
            },
            ToolCallStatus::End => {
                if let Some(card) = self.cards.get_mut(&update.tool_call_id) {
                    card.result = update.result.clone().map(Arc::new);
                    card.state = CardState::ended(update.is_error, update.denied);
                    if update.subject.is_some() {
                        card.subject.clone_from(&update.subject);
                    }
                    card.waited_ms = update.waited_ms.unwrap_or(0);
                    card.images = Arc::from(update.images.as_slice());
                    card.change = update.change.clone().map(Arc::new);
                    let changed = update.change.as_ref().and_then(changed_path);
                    for path in changed
                        .into_iter()
                        .chain(update.changed.iter().map(String::as_str))
                    {
                        if !self.restorable.iter().any(|known| known == path) {
                            self.restorable.push(path.to_owned());
                        }
                    }
                    // The engine's own figure when it sent one: events can reach the
                    // webview late, and a restart shows the stored figure.
                    card.duration_ms = update.duration_ms.or_else(|| {
                        card.started_at_ms
                            .map(|start| (now_ms - start).max(0.0) as u64)
                    });
                    card.approval = None;
                }
            }
        }
    }

    /// Keeps a plan for its card, which it names.
    fn note_plan(&mut self, plan: TreePlan) {
        let id = plan.created.tool_call_id.clone();
        if let Some(card) = self.cards.get_mut(&id) {
            card.title = Some(plan.created.objective.clone());
        }
        self.plans.insert(id, plan);
    }

    /// The steps of the plan shown in card `plan_call`, each with how far it got: a
    /// step's card is the `run_subtask` under it with its `step_id` (or, in an answer
    /// whose previews were cut, its title).
    pub fn plan_steps(&self, plan_call: &str) -> Vec<(PlanStep, StepState)> {
        let Some(plan) = self.plans.get(plan_call) else {
            return Vec::new();
        };
        let cards: Vec<&Card> = self
            .cards
            .values()
            .filter(|card| {
                card.parent_id.as_deref() == Some(plan_call) && card.kind == Some(CallKind::Subtask)
            })
            .collect();
        plan.created
            .steps
            .iter()
            .map(|step| {
                let card = cards.iter().find(|card| {
                    card.args
                        .as_ref()
                        .and_then(|args| args.get("step_id"))
                        .and_then(Value::as_str)
                        .map_or(card.title.as_deref() == Some(step.title.as_str()), |id| {
                            id == step.id
                        })
                });
                let state = match card {
                    None => StepState::Waiting,
                    Some(card) => match card.state {
                        CardState::Running => StepState::Running,
                        CardState::Done => StepState::Done,
                        CardState::Failed
                            if card
                                .result
                                .as_ref()
                                .and_then(|r| r.as_str())
                                .is_some_and(|r| r.starts_with("skipped")) =>
                        {
                            StepState::Skipped
                        }
                        CardState::Failed | CardState::Denied => StepState::Failed,
                    },
                };
                (step.clone(), state)
            })
            .collect()
    }

    /// Marks an approval answered (the card's end event will follow).
    pub fn answered(&mut self, approval_id: &str) {
        for card in self.cards.values_mut() {
            if card
                .approval
                .as_ref()
                .is_some_and(|a| a.approval_id == approval_id)
            {
                card.approval = None;
            }
        }
    }

    /// Opens or closes a card.
    pub fn toggle(&mut self, id: &str) {
        if let Some(card) = self.cards.get_mut(id) {
            card.expanded = !card.expanded;
        }
    }

    /// Approvals waiting in this turn, in card order.
    pub fn pending_approvals(&self) -> Vec<&ToolApprovalRequest> {
        let mut pending: Vec<&ToolApprovalRequest> = self
            .cards
            .values()
            .filter_map(|card| card.approval.as_ref())
            .collect();
        pending.sort_by(|a, b| a.approval_id.cmp(&b.approval_id));
        pending
    }

    pub fn is_running(&self) -> bool {
        self.finished.is_none()
    }

    /// The answer's text at the root, segments joined.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Text(text) => Some(text.as_str()),
                Segment::Card(_) => None,
            })
            .collect();
        texts.join("\n\n")
    }

    fn segments_of(&mut self, parent: Option<&str>) -> &mut Vec<Segment> {
        match parent.and_then(|id| self.cards.contains_key(id).then_some(id)) {
            Some(id) => match self.cards.get_mut(id) {
                Some(card) => &mut card.children,
                None => &mut self.segments,
            },
            None => &mut self.segments,
        }
    }

    fn push_text(&mut self, parent: Option<&str>, text: &str) {
        let segments = self.segments_of(parent);
        match segments.last_mut() {
            Some(Segment::Text(last)) => last.push_str(text),
            _ => segments.push(Segment::Text(text.to_owned())),
        }
    }

    /// Calls the model began to write but never finished were never calls: they go.
    fn drop_unmade_calls(&mut self) {
        let unmade: Vec<String> = self
            .cards
            .values()
            .filter(|card| card.pending)
            .map(|card| card.id.clone())
            .collect();
        for id in unmade {
            if let Some(card) = self.cards.remove(&id) {
                self.segments_of(card.parent_id.as_deref())
                    .retain(|segment| *segment != Segment::Card(id.clone()));
            }
        }
    }

    fn place(&mut self, card: Card) {
        let id = card.id.clone();
        let parent = card.parent_id.clone();
        self.cards.insert(id.clone(), card);
        self.segments_of(parent.as_deref()).push(Segment::Card(id));
    }
}

/// A stored preview as the live card had it: JSON objects and arrays come back as
/// structure (so they are laid out the same way); text, and JSON cut off at the preview
/// limit, stay text.
/// The file a change was made to (a command changes none the card can name).
fn changed_path(change: &ApprovalPreview) -> Option<&str> {
    match change {
        ApprovalPreview::Diff { path, .. } | ApprovalPreview::NewFile { path, .. } => Some(path),
        ApprovalPreview::Command { .. } => None,
    }
}

fn preview_value(preview: &str) -> Value {
    match serde_json::from_str::<Value>(preview) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
        _ => Value::String(preview.to_owned()),
    }
}

/// Whether a card starts open: the answer's own calls do, the calls inside a
/// subtask do not, and a hand-over says all it has to in the divider under it.
fn starts_open(kind: Option<CallKind>, depth: u32) -> bool {
    depth == 0 && kind != Some(CallKind::HandOver)
}

#[cfg(test)]
mod tests;
