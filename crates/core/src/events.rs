//! Where a turn's events go, and what the turn keeps from them on the way: the
//! execution tree (from `tool_call_update`), the answer's timeline (text and calls in
//! order, at every depth) and the aggregate agent state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use cairn_protocol::{
    AgentState, AgentStateKind, ChatMessage, Event, ExecutionTree, ExecutionTreeNode, PromptCut,
    TimelineBuilder, ToolCallStatus, ToolCallUpdate, TreePlan, preview, preview_cuts,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::budget::millis;

/// A consumer of turn events: a CLI printer, an IPC channel, a session buffer.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

/// Receives root-level history as the turn appends it: each assistant message and
/// each tool result, in order. Persistence uses it to commit at tool boundaries.
pub trait Journal: Send + Sync {
    fn root_message(&self, message: &ChatMessage);
}

impl<F: Fn(Event) + Send + Sync> EventSink for F {
    fn emit(&self, event: Event) {
        self(event)
    }
}

/// Builds the persisted execution tree from a turn's events: its nodes from
/// `tool_call_update`, its timeline from those and the text chunks.
#[derive(Debug, Default)]
pub struct TreeBuilder {
    nodes: Vec<ExecutionTreeNode>,
    open: HashMap<String, (usize, Instant)>,
    timeline: TimelineBuilder,
    plans: Vec<TreePlan>,
    /// The server the root answered on, when not the thread's own.
    server: Option<String>,
    /// The root's prompt the server cut or refused, the last time it did.
    prompt_cut: Option<PromptCut>,
}

impl TreeBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in one event; only text and tool calls shape the tree.
    pub fn observe(&mut self, event: &Event) {
        self.timeline.observe(event);
        match event {
            Event::ToolCallUpdate(update) => self.call(update),
            Event::ServerState(state) => match &state.parent_id {
                None => self.server = Some(state.server.clone()),
                Some(card) => {
                    if let Some(node) = self.nodes.iter_mut().find(|node| &node.id == card) {
                        node.server = Some(state.server.clone());
                    }
                }
            },
            Event::PromptCut(cut) if cut.parent_id.is_none() => {
                self.prompt_cut = Some(cut.clone());
            }
            Event::PlanCreated(created) => self.plans.push(TreePlan {
                created: created.clone(),
                review: None,
            }),
            Event::PlanReview(review) => {
                if let Some(plan) = self
                    .plans
                    .iter_mut()
                    .rev()
                    .find(|plan| plan.created.tool_call_id == review.tool_call_id)
                {
                    plan.review = Some(review.clone());
                }
            }
            _ => {}
        }
    }

    fn call(&mut self, update: &ToolCallUpdate) {
        match update.status {
            // Not a call yet: the tree keeps calls the model finished.
            ToolCallStatus::Pending => {}
            ToolCallStatus::Start => {
                let title = update.subtask_title();
                self.open.insert(
                    update.tool_call_id.clone(),
                    (self.nodes.len(), Instant::now()),
                );
                self.nodes.push(ExecutionTreeNode {
                    id: update.tool_call_id.clone(),
                    parent_id: update.parent_id.clone(),
                    name: update.name.clone(),
                    title,
                    args_preview: update.args.as_ref().map(|args| preview(&value_text(args))),
                    result_preview: None,
                    subject: update.subject.clone(),
                    kind: update.kind,
                    ..ExecutionTreeNode::default()
                });
            }
            ToolCallStatus::End => {
                let Some((index, started)) = self.open.remove(&update.tool_call_id) else {
                    return;
                };
                let node = &mut self.nodes[index];
                let text = update.result.as_ref().map(value_text);
                node.result_preview = text.as_deref().map(preview);
                // Where the preview is a cut, the recorder keeps the whole beside it.
                node.result_bytes = text
                    .filter(|text| preview_cuts(text))
                    .map(|text| u64::try_from(text.len()).unwrap_or(u64::MAX));
                node.is_error = Some(update.is_error.unwrap_or(false));
                node.duration_ms = update
                    .duration_ms
                    .unwrap_or_else(|| millis(started.elapsed()));
                node.waited_ms = update.waited_ms.unwrap_or(0);
                node.denied = update.denied;
                node.images.clone_from(&update.images);
                node.change.clone_from(&update.change);
            }
        }
    }

    /// The tree so far; calls still open are marked as errors that did not finish.
    pub fn snapshot(&self) -> ExecutionTree {
        let mut nodes = self.nodes.clone();
        for (index, started) in self.open.values() {
            let node = &mut nodes[*index];
            node.is_error = Some(true);
            node.result_preview = Some("did not finish".into());
            node.duration_ms = millis(started.elapsed());
        }
        ExecutionTree {
            server: self.server.clone(),
            prompt_cut: self.prompt_cut.clone(),
            ..ExecutionTree::new(nodes)
                .with_timeline(self.timeline.entries().to_vec())
                .with_plans(self.plans.clone())
        }
    }
}

/// Text as a preview shows it: strings bare, anything else as compact JSON.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What the turn is doing somewhere in its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activity {
    Thinking,
    Executing,
    WaitingOnUser,
    Reconnecting,
}

#[derive(Debug, Default)]
struct StateCounts {
    thinking: usize,
    executing: usize,
    waiting: usize,
    reconnecting: usize,
    shown: Option<AgentStateKind>,
}

impl StateCounts {
    fn slot(&mut self, activity: Activity) -> &mut usize {
        match activity {
            Activity::Thinking => &mut self.thinking,
            Activity::Executing => &mut self.executing,
            Activity::WaitingOnUser => &mut self.waiting,
            Activity::Reconnecting => &mut self.reconnecting,
        }
    }

    /// With parallel subtasks several things happen at once; the state shown is the
    /// one that most needs the user's eye. Between activities the last state stays:
    /// `idle` is only shown when the turn ends.
    fn derived(&self) -> Option<AgentStateKind> {
        if self.waiting > 0 {
            Some(AgentStateKind::WaitingOnUser)
        } else if self.reconnecting > 0 {
            Some(AgentStateKind::Reconnecting)
        } else if self.executing > 0 {
            Some(AgentStateKind::Executing)
        } else if self.thinking > 0 {
            Some(AgentStateKind::Thinking)
        } else {
            None
        }
    }
}

/// The turn's outlet: forwards events to the sink, feeding the tree and the agent
/// state on the way.
pub(crate) struct Emitter {
    sink: Arc<dyn EventSink>,
    tree: Mutex<TreeBuilder>,
    state: Mutex<StateCounts>,
}

impl Emitter {
    pub(crate) fn new(sink: Arc<dyn EventSink>) -> Self {
        Self {
            sink,
            tree: Mutex::new(TreeBuilder::new()),
            state: Mutex::new(StateCounts::default()),
        }
    }

    pub(crate) fn emit(&self, event: Event) {
        if matches!(
            event,
            Event::ToolCallUpdate(_)
                | Event::ServerState(_)
                | Event::PromptCut(_)
                | Event::Chunk(_)
                | Event::PlanCreated(_)
                | Event::PlanReview(_)
        ) {
            self.tree
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .observe(&event);
        }
        self.sink.emit(event);
    }

    pub(crate) fn tree(&self) -> ExecutionTree {
        self.tree
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .snapshot()
    }

    /// Marks an activity as running until the guard drops.
    pub(crate) fn activity(&self, activity: Activity) -> ActivityGuard<'_> {
        self.shift(activity, true);
        ActivityGuard {
            emitter: self,
            activity,
        }
    }

    pub(crate) fn idle(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.shown != Some(AgentStateKind::Idle) {
            state.shown = Some(AgentStateKind::Idle);
            self.sink.emit(Event::AgentState(AgentState {
                state: AgentStateKind::Idle,
            }));
        }
    }

    fn shift(&self, activity: Activity, enter: bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = state.slot(activity);
        *slot = if enter {
            *slot + 1
        } else {
            slot.saturating_sub(1)
        };
        let Some(next) = state.derived() else { return };
        if state.shown == Some(next) {
            return;
        }
        state.shown = Some(next);
        // Emitted under the lock so two changes cannot reach the sink out of order.
        self.sink
            .emit(Event::AgentState(AgentState { state: next }));
    }
}

pub(crate) struct ActivityGuard<'a> {
    emitter: &'a Emitter,
    activity: Activity,
}

impl Drop for ActivityGuard<'_> {
    fn drop(&mut self) {
        self.emitter.shift(self.activity, false);
    }
}
