//! The execution tree persisted with an assistant message: a flat list of tool-call
//! nodes with parent links, from which a front end rebuilds the nested cards.

use serde::{Deserialize, Serialize};

/// Previews in the tree are cut to this many characters.
pub const PREVIEW_MAX_CHARS: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionTree {
    /// Always 1 for this shape.
    pub version: u32,
    pub nodes: Vec<ExecutionTreeNode>,
}

impl ExecutionTree {
    pub const VERSION: u32 = 1;

    pub fn new(nodes: Vec<ExecutionTreeNode>) -> Self {
        Self {
            version: Self::VERSION,
            nodes,
        }
    }

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

impl Default for ExecutionTree {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
