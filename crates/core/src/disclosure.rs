//! Progressive tool disclosure for toolbelts larger than a small model can take in.
//!
//! Local models degrade with many tool definitions (past about 40 a reasoning model
//! stops thinking), so when a level's toolbelt is over the budget its tools are
//! grouped by name prefix (`mcp__github__create_issue` is in `mcp__github`). Each
//! round the model sees the core tools (those without a group), `list_tool_groups`,
//! `load_tools` and the groups loaded so far. Calling a tool of a group not yet
//! loaded loads the group and runs the call: nothing is ever out of reach.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use cairn_protocol::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const LIST_TOOL_GROUPS: &str = "list_tool_groups";
pub const LOAD_TOOLS: &str = "load_tools";

/// When a level's tools are too many to show at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolBudget {
    /// More tools than this are folded.
    pub count: usize,
    /// Tool schemas larger than this (estimated tokens) are folded too: the part of a
    /// small context window the prompt leaves them. `None` when the window is unknown.
    pub tokens: Option<u64>,
}

/// The group a tool belongs to, or `None` for a core tool.
pub fn group_of(name: &str) -> Option<&str> {
    name.rfind("__")
        .map(|at| &name[..at])
        .filter(|group| !group.is_empty())
}

/// The disclosure state of one level.
#[derive(Debug)]
pub(crate) struct Disclosure {
    /// Always shown: core tools, the engine's tools, the two meta-tools.
    base: Vec<ToolSpec>,
    groups: BTreeMap<String, Vec<ToolSpec>>,
    loaded: Mutex<Loaded>,
}

#[derive(Debug, Default)]
struct Loaded {
    groups: BTreeSet<String>,
    /// The specs for the current set, rebuilt only when it changes.
    visible: Option<Arc<[ToolSpec]>>,
}

#[derive(Deserialize)]
pub(crate) struct LoadToolsArgs {
    pub groups: Vec<String>,
}

impl Disclosure {
    /// Splits `specs` (the level's whole offer) when it is over `budget`, in number
    /// or in size.
    pub fn over_budget(specs: &[ToolSpec], budget: ToolBudget) -> Option<Self> {
        let too_large = budget.tokens.is_some_and(|room| spec_tokens(specs) > room);
        if specs.len() <= budget.count && !too_large {
            return None;
        }
        let mut base = Vec::new();
        let mut groups: BTreeMap<String, Vec<ToolSpec>> = BTreeMap::new();
        for spec in specs {
            match group_of(&spec.name) {
                Some(group) => groups
                    .entry(group.to_owned())
                    .or_default()
                    .push(spec.clone()),
                None => base.push(spec.clone()),
            }
        }
        if groups.is_empty() {
            // Nothing to fold away: every tool is core.
            return None;
        }
        base.push(list_tool_groups_spec());
        base.push(load_tools_spec());
        Some(Self {
            base,
            groups,
            loaded: Mutex::default(),
        })
    }

    /// What the model sees this round.
    pub fn visible(&self) -> Arc<[ToolSpec]> {
        let mut loaded = self.lock();
        if let Some(visible) = &loaded.visible {
            return Arc::clone(visible);
        }
        let mut specs = self.base.clone();
        for group in &loaded.groups {
            specs.extend(self.groups[group].iter().cloned());
        }
        let visible: Arc<[ToolSpec]> = specs.into();
        loaded.visible = Some(Arc::clone(&visible));
        visible
    }

    /// Loads the group of a tool the model called directly.
    pub fn note_call(&self, tool: &str) {
        if let Some(group) = group_of(tool)
            && self.groups.contains_key(group)
        {
            self.load_group(group);
        }
    }

    /// `list_tool_groups`: every group, its size, its tools, and whether it is loaded.
    pub fn list(&self) -> String {
        let loaded = self.lock();
        let mut out = String::from("Tool groups (load one with load_tools to use its tools):\n");
        for (group, specs) in &self.groups {
            let names: Vec<&str> = specs
                .iter()
                .map(|spec| {
                    spec.name
                        .strip_prefix(group)
                        .unwrap_or(&spec.name)
                        .trim_start_matches('_')
                })
                .collect();
            let state = if loaded.groups.contains(group) {
                " [loaded]"
            } else {
                ""
            };
            out.push_str(&format!(
                "- {group} ({} tools){state}: {}\n",
                specs.len(),
                names.join(", ")
            ));
        }
        out
    }

    /// `load_tools`: loads the named groups, or says which do not exist.
    pub fn load(&self, groups: &[String]) -> Result<String, String> {
        let unknown: Vec<&str> = groups
            .iter()
            .filter(|group| !self.groups.contains_key(group.as_str()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "no tool group named {}; the groups are: {}",
                unknown.join(", "),
                self.groups.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        let mut tools = Vec::new();
        for group in groups {
            self.load_group(group);
            tools.extend(self.groups[group].iter().map(|spec| spec.name.clone()));
        }
        Ok(format!(
            "Loaded {}. You can now call: {}",
            groups.join(", "),
            tools.join(", ")
        ))
    }

    fn load_group(&self, group: &str) {
        let mut loaded = self.lock();
        if loaded.groups.insert(group.to_owned()) {
            loaded.visible = None;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The estimated size of tool schemas as the model receives them.
pub(crate) fn spec_tokens(specs: &[ToolSpec]) -> u64 {
    let bytes = serde_json::to_string(specs).map_or(0, |text| text.len());
    crate::history::bytes_to_tokens(bytes)
}

fn list_tool_groups_spec() -> ToolSpec {
    ToolSpec {
        name: LIST_TOOL_GROUPS.into(),
        description: "List the groups of additional tools you can load, with their tools.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

fn load_tools_spec() -> ToolSpec {
    ToolSpec {
        name: LOAD_TOOLS.into(),
        description: "Load one or more tool groups so their tools become callable.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "groups": {"type": "array", "items": {"type": "string"}, "description": "Group names from list_tool_groups"}
            },
            "required": ["groups"]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".repeat(400),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn schemas_too_large_for_the_window_are_folded_though_they_are_few() {
        let specs = [spec("read_file"), spec("mcp__gh__a"), spec("mcp__gh__b")];
        let roomy = ToolBudget {
            count: 38,
            tokens: Some(10_000),
        };
        assert!(Disclosure::over_budget(&specs, roomy).is_none());
        let unknown = ToolBudget {
            count: 38,
            tokens: None,
        };
        assert!(Disclosure::over_budget(&specs, unknown).is_none());
        let tight = ToolBudget {
            count: 38,
            tokens: Some(200),
        };
        let folded = Disclosure::over_budget(&specs, tight).expect("folded");
        let names: Vec<String> = folded.visible().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["read_file", LIST_TOOL_GROUPS, LOAD_TOOLS]);
    }

    #[test]
    fn groups_are_name_prefixes() {
        assert_eq!(group_of("mcp__github__create_issue"), Some("mcp__github"));
        assert_eq!(group_of("mcp__fs__read"), Some("mcp__fs"));
        assert_eq!(group_of("read_file"), None);
        assert_eq!(group_of("__odd"), None);
    }
}
