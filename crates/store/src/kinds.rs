//! The kind of each call in an execution tree stored before trees kept it. Trees now
//! carry what each call's tool said it was (`ExecutionTreeNode::kind`); older ones,
//! and threads imported from them, only name the call. These are the names the
//! engine's tools had when kinds were not yet kept: a fact about old data, fixed, not
//! a rule for new calls (a tool added since says its kind itself).

use cairn_protocol::{CallKind, ExecutionTree};

/// Fills in the kind of every call of `tree` that has none, from its name.
pub(crate) fn fill_in(tree: &mut ExecutionTree) {
    for node in tree.nodes.iter_mut().filter(|node| node.kind.is_none()) {
        node.kind = match node.name.as_str() {
            "run_subtask" => Some(CallKind::Subtask),
            "create_plan" => Some(CallKind::Plan),
            "finish_subtask" | "submit_plan" | "submit_review" => Some(CallKind::Finish),
            "switch_agent" => Some(CallKind::HandOver),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use cairn_protocol::ExecutionTreeNode;

    use super::*;

    #[test]
    fn an_old_trees_calls_get_the_kinds_their_names_had_and_new_ones_keep_theirs() {
        let node = |name: &str, kind: Option<CallKind>| ExecutionTreeNode {
            id: name.into(),
            name: name.into(),
            kind,
            ..ExecutionTreeNode::default()
        };
        let mut tree = ExecutionTree::new(vec![
            node("run_subtask", None),
            node("submit_review", None),
            node("switch_agent", None),
            node("read_file", None),
            // A tool of today, whatever its name, says its own kind.
            node("delegate", Some(CallKind::Subtask)),
        ]);
        fill_in(&mut tree);
        let kinds: Vec<_> = tree.nodes.iter().map(|node| node.kind).collect();
        assert_eq!(
            kinds,
            [
                Some(CallKind::Subtask),
                Some(CallKind::Finish),
                Some(CallKind::HandOver),
                None,
                Some(CallKind::Subtask),
            ]
        );
    }
}
