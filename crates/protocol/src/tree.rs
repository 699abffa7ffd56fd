//! The execution tree persisted with an assistant message: a flat list of tool-call
//! nodes with parent links, from which a front end rebuilds the nested cards, and the
//! answer's timeline (text and calls in the order they were shown, at every depth), so
//! a stored answer reads as it did live.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::event::{Event, ToolCallStatus, required};
use crate::plan::{PlanCreated, PlanReview};

/// Previews in the tree are cut to this many characters.
pub const PREVIEW_MAX_CHARS: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionTree {
    /// Always 1 for this shape.
    pub version: u32,
    pub nodes: Vec<ExecutionTreeNode>,
    /// The answer as it was shown, in order. Empty in answers stored before it was
    /// kept: [`ExecutionTree::pieces`] then shows the calls first and the text after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineEntry>,
    /// The plans `create_plan` made in this answer, with a reviewer's verdict, so a
    /// stored plan shows its checklist as it did live.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<TreePlan>,
    /// Why the answer was cut before the model finished it, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<crate::Cut>,
    /// The model server the root answered on, when it was not the thread's own (a
    /// hand-over to a profile on another machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The server read only part of the root's prompt, or refused it as too long
    /// (the last time it did in this answer), so a reloaded answer says it as the live
    /// one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cut: Option<crate::PromptCut>,
}

/// A plan as its answer keeps it: the `create_plan` card's checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreePlan {
    pub created: PlanCreated,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<PlanReview>,
}

/// One piece of a stored answer's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TimelineEntry {
    /// Text a level wrote: `parent_id` is null at the root, else the `run_subtask` call
    /// whose subtask wrote it.
    Text {
        parent_id: Option<String>,
        content: String,
    },
    /// A call, by its node's id (the node knows its parent).
    Call { id: String },
}

/// Read through one struct of both variants' fields, as `ApprovalPreview` is, so that
/// the webview compiles no buffering reader of a tagged enum.
impl<'de> Deserialize<'de> for TimelineEntry {
    fn deserialize<D: serde::Deserializer<'de>>(body: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields {
            kind: String,
            parent_id: Option<String>,
            content: Option<String>,
            id: Option<String>,
        }
        let fields = Fields::deserialize(body)?;
        Ok(match fields.kind.as_str() {
            "text" => Self::Text {
                parent_id: fields.parent_id,
                content: required::<D>(fields.content, "content")?,
            },
            "call" => Self::Call {
                id: required::<D>(fields.id, "id")?,
            },
            other => return Err(serde::de::Error::unknown_variant(other, &["text", "call"])),
        })
    }
}

/// Builds an answer's timeline from its events, as a front end showed them live.
#[derive(Debug, Clone, Default)]
pub struct TimelineBuilder {
    entries: Vec<TimelineEntry>,
    /// Per level (`None` is the root), the entry its text is being written into; a
    /// call at that level closes it. Parallel subtasks interleave their chunks, so each
    /// level keeps its own.
    writing: HashMap<Option<String>, usize>,
}

impl TimelineBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in one event; only text and call starts shape the timeline.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::Chunk(chunk) if !chunk.content.is_empty() => {
                if let Some(&index) = self.writing.get(&chunk.parent_id)
                    && let Some(TimelineEntry::Text { content, .. }) = self.entries.get_mut(index)
                {
                    content.push_str(&chunk.content);
                    return;
                }
                self.writing
                    .insert(chunk.parent_id.clone(), self.entries.len());
                self.entries.push(TimelineEntry::Text {
                    parent_id: chunk.parent_id.clone(),
                    content: chunk.content.clone(),
                });
            }
            Event::ToolCallUpdate(update) if update.status == ToolCallStatus::Start => {
                self.writing.remove(&update.parent_id);
                self.entries.push(TimelineEntry::Call {
                    id: update.tool_call_id.clone(),
                });
            }
            _ => {}
        }
    }

    pub fn entries(&self) -> &[TimelineEntry] {
        &self.entries
    }
}

/// What a level of a stored answer shows, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Call(&'a ExecutionTreeNode),
}

impl ExecutionTree {
    pub const VERSION: u32 = 1;

    pub fn new(nodes: Vec<ExecutionTreeNode>) -> Self {
        Self {
            version: Self::VERSION,
            nodes,
            timeline: Vec::new(),
            plans: Vec::new(),
            server: None,
            cut: None,
            prompt_cut: None,
        }
    }

    pub fn with_plans(mut self, plans: Vec<TreePlan>) -> Self {
        self.plans = plans;
        self
    }

    pub fn with_timeline(mut self, timeline: Vec<TimelineEntry>) -> Self {
        self.timeline = timeline;
        self
    }

    /// No calls (and so no subtask text either).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The direct children of `parent` (`None` for the root level), in call order.
    pub fn children<'a>(
        &'a self,
        parent: Option<&'a str>,
    ) -> impl Iterator<Item = &'a ExecutionTreeNode> + 'a {
        self.nodes
            .iter()
            .filter(move |node| node.parent_id.as_deref() == parent)
    }
}

/// What one level of a stored answer shows, in the order it was shown: `parent` is
/// `None` for the root (whose text is `content`, the message's own) or a `run_subtask`
/// call's id. An answer stored before timelines were kept shows its calls first and,
/// at the root, its text after them; its subtasks' text was not kept.
pub fn pieces<'a>(
    tree: Option<&'a ExecutionTree>,
    content: &'a str,
    parent: Option<&str>,
) -> Vec<Piece<'a>> {
    let Some(tree) = tree.filter(|tree| !tree.timeline.is_empty()) else {
        let mut pieces: Vec<Piece<'a>> = tree
            .into_iter()
            .flat_map(|tree| &tree.nodes)
            .filter(|node| node.parent_id.as_deref() == parent)
            .map(Piece::Call)
            .collect();
        if parent.is_none() && !content.is_empty() {
            pieces.push(Piece::Text(content));
        }
        return pieces;
    };
    let nodes: HashMap<&str, &ExecutionTreeNode> = tree
        .nodes
        .iter()
        .map(|node| (node.id.as_str(), node))
        .collect();
    tree.timeline
        .iter()
        .filter_map(|entry| match entry {
            TimelineEntry::Text { parent_id, content } => (parent_id.as_deref() == parent
                && !content.is_empty())
            .then_some(Piece::Text(content.as_str())),
            TimelineEntry::Call { id } => nodes
                .get(id.as_str())
                .filter(|node| node.parent_id.as_deref() == parent)
                .map(|node| Piece::Call(node)),
        })
        .collect()
}

impl Default for ExecutionTree {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionTreeNode {
    /// The tool call id.
    pub id: String,
    pub parent_id: Option<String>,
    /// The tool name; `run_subtask` nodes contain the calls of their subtask.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    pub duration_ms: u64,
    /// How much of `duration_ms` went to waiting for the user's approval.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waited_ms: u64,
    /// The user denied the call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
    /// Images the tool returned, kept whole (the window shows them again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::Image>,
    /// What the call acts on, as its tool said (see `ToolCallUpdate::subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The change the call made to a file (see `ToolCallUpdate::change`), kept whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<crate::ApprovalPreview>,
    /// The whole result's size in bytes, where `result_preview` is only its start: the
    /// whole is kept beside the answer, for a card's "Show all".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<u64>,
    /// For a subtask: the model server it ran on, when it was not the thread's own
    /// or it waited for one of that server's slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// What kind of call it was (see `ToolCallUpdate::kind`); absent for plain calls.
    /// Trees stored before it was kept have it filled in by the store's migration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::CallKind>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether [`preview`] cuts `text`: then the whole is kept beside the tree.
pub fn preview_cuts(text: &str) -> bool {
    text.chars().count() > PREVIEW_MAX_CHARS
}

/// `text` cut to at most [`PREVIEW_MAX_CHARS`] characters, `…` marking a cut.
pub fn preview(text: &str) -> String {
    let mut starts = text.char_indices().map(|(at, _)| at);
    // The byte offset of the last character that fits once `…` takes one place, and
    // whether anything follows the character after it.
    let cut = starts.nth(PREVIEW_MAX_CHARS - 1);
    match (cut, starts.next()) {
        (Some(cut), Some(_)) => {
            let mut out = String::with_capacity(cut + '…'.len_utf8());
            out.push_str(&text[..cut]);
            out.push('…');
            out
        }
        _ => text.to_owned(),
    }
}
