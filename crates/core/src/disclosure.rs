//! Progressive tool disclosure: the tools a model sees at once, and the rest loaded
//! on demand.
//!
//! Every tool but the core ones (files, commands, the engine's own endings) belongs to
//! a group: `memory`, `web`, `subtasks`, an MCP server's `mcp__github`, … Rare groups
//! (memory, the todo list, plans, model parameters) wait until loaded whatever the
//! window; the others are folded too when the level's tools are too many or too large
//! for its window (`context`). Each round the model sees the tools shown, `load_tools`
//! (whose description names every folded group) and the groups loaded so far.
//! Calling a tool of a group not yet loaded loads the group and runs the call:
//! nothing is ever out of reach.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use cairn_protocol::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};

pub const LIST_TOOL_GROUPS: &str = "list_tool_groups";
pub const LOAD_TOOLS: &str = "load_tools";

/// A group named in full in `load_tools`' description has at most this many tools;
/// a larger one is named with its count, and `list_tool_groups` lists it.
const NAMED_IN_FULL: usize = 4;

/// The group a tool is loaded with when it is not shown from the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGroup {
    pub name: String,
    /// Folded however roomy the window: tools most turns never need.
    pub rare: bool,
}

impl ToolGroup {
    /// A group shown while the window has room for it.
    pub fn shown(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            rare: false,
        }
    }

    /// A group shown only once loaded.
    pub fn rare(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            rare: true,
        }
    }
}

/// The group an MCP-style name puts a tool in (`mcp__github__create_issue` is in
/// `mcp__github`), or `None` for a name without one.
pub fn group_of(name: &str) -> Option<&str> {
    name.rfind("__")
        .map(|at| &name[..at])
        .filter(|group| !group.is_empty())
}

/// A tool as a level offers it: what the model reads, and where it waits when folded.
#[derive(Debug, Clone)]
pub(crate) struct Offer {
    pub spec: ToolSpec,
    /// `None`: a core tool, always shown.
    pub group: Option<ToolGroup>,
}

impl Offer {
    pub fn core(spec: ToolSpec) -> Self {
        Self { spec, group: None }
    }

    pub fn grouped(spec: ToolSpec, group: ToolGroup) -> Self {
        Self {
            spec,
            group: Some(group),
        }
    }
}

/// What a level offers the model: every tool at once, or some shown and the rest on
/// demand.
#[derive(Debug)]
pub(crate) enum Offered {
    All {
        specs: Arc<[ToolSpec]>,
        /// Their size in tokens, as sent.
        tokens: u64,
    },
    OnDemand(Disclosure),
}

impl Offered {
    /// `offers` with the groups `fold` names folded (none: everything shown), each
    /// spec as `shape` makes it.
    pub fn new(
        offers: Vec<Offer>,
        fold: &BTreeSet<String>,
        shape: impl Fn(ToolSpec) -> ToolSpec,
    ) -> Self {
        let mut base = Vec::new();
        let mut groups: BTreeMap<String, Vec<ToolSpec>> = BTreeMap::new();
        for offer in offers {
            let spec = shape(offer.spec);
            match offer.group {
                Some(group) if fold.contains(&group.name) => {
                    groups.entry(group.name).or_default().push(spec);
                }
                _ => base.push(spec),
            }
        }
        if groups.is_empty() {
            let tokens = crate::history::spec_tokens(&base);
            return Self::All {
                specs: base.into(),
                tokens,
            };
        }
        let names = group_names(&groups);
        base.extend(meta_specs(&names).into_iter().map(&shape));
        Self::OnDemand(Disclosure {
            base,
            groups,
            loaded: Mutex::default(),
        })
    }

    /// What the model sees this round, and its size in tokens.
    pub fn visible(&self) -> (Arc<[ToolSpec]>, u64) {
        match self {
            Self::All { specs, tokens } => (Arc::clone(specs), *tokens),
            Self::OnDemand(disclosure) => disclosure.visible(),
        }
    }

    /// The groups, when some tools wait in them.
    pub fn disclosure(&self) -> Option<&Disclosure> {
        match self {
            Self::All { .. } => None,
            Self::OnDemand(disclosure) => Some(disclosure),
        }
    }
}

/// How many tools `offers` would show with the groups `fold` names folded, and (when
/// `measure`) their size in tokens, without building them.
pub(crate) fn shown_size(offers: &[Offer], fold: &BTreeSet<String>, measure: bool) -> (usize, u64) {
    let folded = |offer: &&Offer| offer.group.as_ref().is_some_and(|g| fold.contains(&g.name));
    let shown = offers.iter().filter(|offer| !folded(offer));
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for offer in offers.iter().filter(folded) {
        if let Some(group) = &offer.group {
            groups
                .entry(group.name.as_str())
                .or_default()
                .push(offer.spec.name.as_str());
        }
    }
    let meta = if groups.is_empty() {
        Vec::new()
    } else {
        meta_specs(&groups)
    };
    let count = shown.clone().count() + meta.len();
    let tokens = if measure {
        crate::history::spec_tokens(shown.map(|offer| &offer.spec).chain(&meta))
    } else {
        0
    };
    (count, tokens)
}

/// `load_tools` named a group there is not; the model reads which there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no tool group named {}; the groups are: {}", .unknown.join(", "), .groups.join(", "))]
pub(crate) struct NoSuchGroup {
    pub unknown: Vec<String>,
    pub groups: Vec<String>,
}

/// The disclosure state of one level.
#[derive(Debug)]
pub(crate) struct Disclosure {
    /// Always shown: the tools not folded, and the meta-tools.
    base: Vec<ToolSpec>,
    groups: BTreeMap<String, Vec<ToolSpec>>,
    loaded: Mutex<Loaded>,
}

#[derive(Debug, Default)]
struct Loaded {
    groups: BTreeSet<String>,
    /// The specs for the current set and their size in tokens, worked out again only
    /// when it changes.
    visible: Option<(Arc<[ToolSpec]>, u64)>,
}

#[derive(Deserialize)]
pub(crate) struct LoadToolsArgs {
    pub groups: Vec<String>,
}

impl Disclosure {
    /// The groups folded at the start, by name.
    pub fn group_names(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }

    /// What the model sees this round, and its size in tokens.
    pub fn visible(&self) -> (Arc<[ToolSpec]>, u64) {
        let mut loaded = self.lock();
        if let Some((visible, tokens)) = &loaded.visible {
            return (Arc::clone(visible), *tokens);
        }
        let mut specs = self.base.clone();
        for group in &loaded.groups {
            specs.extend(self.groups[group].iter().cloned());
        }
        let tokens = crate::history::spec_tokens(&specs);
        let visible: Arc<[ToolSpec]> = specs.into();
        loaded.visible = Some((Arc::clone(&visible), tokens));
        (visible, tokens)
    }

    /// Loads the groups named (those this level has) before the first round.
    pub fn preload(&self, groups: &[String]) {
        for group in groups {
            if self.groups.contains_key(group) {
                self.load_group(group);
            }
        }
    }

    /// Loads the group of a folded tool the model called directly.
    pub fn note_call(&self, tool: &str) {
        let group = self
            .groups
            .iter()
            .find(|(_, specs)| specs.iter().any(|spec| spec.name == tool))
            .map(|(group, _)| group.clone());
        if let Some(group) = group {
            self.load_group(&group);
        }
    }

    /// `list_tool_groups`: every group, its size, its tools, and whether it is loaded.
    pub fn list(&self) -> String {
        let loaded = self.lock();
        let mut out = String::from("Tool groups (load one with load_tools to use its tools):\n");
        for (group, specs) in &self.groups {
            let state = if loaded.groups.contains(group) {
                " [loaded]"
            } else {
                ""
            };
            out.push_str(&format!(
                "- {group} ({} tools){state}: {}\n",
                specs.len(),
                specs
                    .iter()
                    .map(|spec| short_name(group, &spec.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }

    /// Whether some group still waits to be loaded: an unknown tool's error points to
    /// `load_tools` only then (with every group loaded, the 1.5B, so pointed, loaded
    /// them all again and again until the loop guard ended its turn).
    pub fn has_waiting(&self) -> bool {
        let loaded = self.lock();
        self.groups
            .keys()
            .any(|group| !loaded.groups.contains(group))
    }

    /// `load_tools`: loads the named groups, or says which do not exist. Groups
    /// already loaded are said to be, not loaded again in words: a model told "Loaded"
    /// each time takes it for progress.
    pub fn load(&self, groups: &[String]) -> Result<String, NoSuchGroup> {
        let unknown: Vec<String> = groups
            .iter()
            .filter(|group| !self.groups.contains_key(group.as_str()))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(NoSuchGroup {
                unknown,
                groups: self.groups.keys().cloned().collect(),
            });
        }
        let (mut fresh, mut already, mut tools) = (Vec::new(), Vec::new(), Vec::new());
        for group in groups {
            if self.load_group(group) {
                fresh.push(group.as_str());
            } else {
                already.push(group.as_str());
            }
            tools.extend(self.groups[group].iter().map(|spec| spec.name.as_str()));
        }
        let tools = tools.join(", ");
        Ok(match (fresh.is_empty(), already.is_empty()) {
            (true, _) => format!(
                "Already loaded: {}, nothing new: call {tools} or another tool you have.",
                already.join(", ")
            ),
            (false, true) => format!("Loaded {}. You can now call: {tools}", fresh.join(", ")),
            (false, false) => format!(
                "Loaded {} ({} already loaded). You can now call: {tools}",
                fresh.join(", "),
                already.join(", ")
            ),
        })
    }

    /// Loads `group`; whether it was not loaded before.
    fn load_group(&self, group: &str) -> bool {
        let mut loaded = self.lock();
        let fresh = loaded.groups.insert(group.to_owned());
        if fresh {
            loaded.visible = None;
        }
        fresh
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The groups `offers` fall in, with how many tools each has.
pub(crate) fn group_sizes(offers: &[Offer]) -> BTreeMap<&ToolGroup, usize> {
    let mut sizes: BTreeMap<&ToolGroup, usize> = BTreeMap::new();
    for group in offers.iter().filter_map(|offer| offer.group.as_ref()) {
        *sizes.entry(group).or_default() += 1;
    }
    sizes
}

impl PartialOrd for ToolGroup {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolGroup {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.name, self.rare).cmp(&(&other.name, other.rare))
    }
}

/// A tool's name without its group's prefix where the name carries it
/// (`create_issue` for `mcp__github__create_issue`).
fn short_name<'a>(group: &str, tool: &'a str) -> &'a str {
    tool.strip_prefix(group)
        .and_then(|rest| rest.strip_prefix("__"))
        .unwrap_or(tool)
}

/// `spec` as a small window or a small model is shown it: the first sentence of its
/// description, and only the arguments a call must give, without their descriptions
/// (their names say most of it). A small model writes every argument it is shown:
/// shown `read_file`'s `limit` and `offset`, the 1.5B read files one line per call
/// (`limit: 1`), where shown only `path` it read them whole. An optional argument
/// is still taken when given (a result that pages says which to give). A tool whose
/// every argument is optional keeps them: they are the choice it offers.
pub(crate) fn brief(mut spec: ToolSpec) -> ToolSpec {
    keep_required(&mut spec.parameters);
    if let Some(properties) = spec.parameters.get_mut("properties") {
        strip_descriptions(properties);
    }
    let first = first_sentence(&spec.description).len();
    let start = spec.description.len() - spec.description.trim_start().len();
    spec.description.truncate(start + first);
    spec.description.drain(..start);
    spec
}

/// Drops the optional arguments of a schema that requires some.
fn keep_required(schema: &mut Value) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if required.is_empty() {
        return;
    }
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.retain(|name, _| required.contains(name));
    }
}

/// Drops `description` from every argument schema in a `properties` map, however
/// deeply nested, leaving arguments that are themselves named `description`.
fn strip_descriptions(properties: &mut Value) {
    let Some(map) = properties.as_object_mut() else {
        return;
    };
    for schema in map.values_mut() {
        let Some(schema) = schema.as_object_mut() else {
            continue;
        };
        schema.remove("description");
        if let Some(nested) = schema.get_mut("properties") {
            strip_descriptions(nested);
        }
        if let Some(items) = schema.get_mut("items")
            && let Some(nested) = items.get_mut("properties")
        {
            strip_descriptions(nested);
        }
    }
}

/// Up to the first full stop followed by a space or a line's end.
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(at, c)| (c == '.' && text[at + 1..].starts_with(char::is_whitespace)) || c == '\n')
        .map_or(text.len(), |(at, c)| at + usize::from(c == '.'));
    &text[..end]
}

/// Each folded group by name, with the names of its tools.
fn group_names(groups: &BTreeMap<String, Vec<ToolSpec>>) -> BTreeMap<&str, Vec<&str>> {
    groups
        .iter()
        .map(|(group, specs)| {
            let names = specs.iter().map(|spec| spec.name.as_str()).collect();
            (group.as_str(), names)
        })
        .collect()
}

/// The tools that reach folded `groups`: `load_tools`, and `list_tool_groups` when a
/// group is too large to name its tools in `load_tools`' description.
fn meta_specs(groups: &BTreeMap<&str, Vec<&str>>) -> Vec<ToolSpec> {
    let mut specs = Vec::with_capacity(2);
    if groups.values().any(|names| names.len() > NAMED_IN_FULL) {
        specs.push(list_tool_groups_spec());
    }
    specs.push(load_tools_spec(groups));
    specs
}

fn list_tool_groups_spec() -> ToolSpec {
    ToolSpec {
        name: LIST_TOOL_GROUPS.into(),
        description: "List the tool groups load_tools can load, with all their tools.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

/// `load_tools`, its description naming each group it loads (a small group with its
/// tools), so that a model can load what it needs without asking first.
fn load_tools_spec(groups: &BTreeMap<&str, Vec<&str>>) -> ToolSpec {
    let named: Vec<String> = groups
        .iter()
        .map(|(group, tools)| {
            if tools.len() > NAMED_IN_FULL {
                format!("{group} ({} tools)", tools.len())
            } else {
                let tools: Vec<&str> = tools.iter().map(|tool| short_name(group, tool)).collect();
                format!("{group} ({})", tools.join(", "))
            }
        })
        .collect();
    let names: Vec<&str> = groups.keys().copied().collect();
    ToolSpec {
        name: LOAD_TOOLS.into(),
        description: format!("Make more tools callable: {}.", named.join(", ")),
        parameters: json!({
            "type": "object",
            "properties": {
                "groups": {"type": "array", "items": {"type": "string", "enum": names}}
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
            description: "Does it. With care.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Where"},
                "description": {"type": "string", "description": "Its own words"}
            }}),
        }
    }

    fn names(specs: &[ToolSpec]) -> Vec<&str> {
        specs.iter().map(|spec| spec.name.as_str()).collect()
    }

    fn fold(groups: &[&str]) -> BTreeSet<String> {
        groups.iter().map(|group| (*group).to_owned()).collect()
    }

    /// `offers` with the groups named folded.
    fn folded(offers: Vec<Offer>, groups: &[&str]) -> Disclosure {
        match Offered::new(offers, &fold(groups), |spec| spec) {
            Offered::OnDemand(disclosure) => disclosure,
            Offered::All { .. } => panic!("nothing was folded"),
        }
    }

    fn offers() -> Vec<Offer> {
        let mut offers = vec![
            Offer::core(spec("read_file")),
            Offer::grouped(spec("memory_read"), ToolGroup::rare("memory")),
            Offer::grouped(spec("memory_write"), ToolGroup::rare("memory")),
            Offer::grouped(spec("web_fetch"), ToolGroup::shown("web")),
        ];
        for n in 0..6 {
            offers.push(Offer::grouped(
                spec(&format!("mcp__gh__t{n}")),
                ToolGroup::shown("mcp__gh"),
            ));
        }
        offers
    }

    #[test]
    fn folded_groups_wait_behind_load_tools_which_names_them() {
        let all = Offered::new(offers(), &fold(&[]), |spec| spec);
        assert!(all.disclosure().is_none());
        assert_eq!(all.visible().0.len(), offers().len());
        let folded = folded(offers(), &["memory"]);
        let (visible, _) = folded.visible();
        assert_eq!(names(&visible)[..2], ["read_file", "web_fetch"]);
        assert_eq!(names(&visible).last(), Some(&LOAD_TOOLS));
        let load = visible.last().unwrap();
        assert_eq!(
            load.description,
            "Make more tools callable: memory (memory_read, memory_write)."
        );
        assert_eq!(
            load.parameters["properties"]["groups"]["items"]["enum"],
            json!(["memory"])
        );
        assert!(
            !names(&visible).contains(&LIST_TOOL_GROUPS),
            "every group is named in full"
        );
    }

    #[test]
    fn a_large_group_is_counted_and_listed_on_request() {
        let folded = folded(offers(), &["memory", "mcp__gh", "web"]);
        let (visible, _) = folded.visible();
        assert_eq!(names(&visible), ["read_file", LIST_TOOL_GROUPS, LOAD_TOOLS]);
        assert_eq!(
            visible[2].description,
            "Make more tools callable: mcp__gh (6 tools), memory (memory_read, \
             memory_write), web (web_fetch)."
        );
        assert!(
            folded
                .list()
                .contains("- mcp__gh (6 tools): t0, t1, t2, t3, t4, t5")
        );
    }

    #[test]
    fn a_group_loads_when_asked_or_when_one_of_its_tools_is_called() {
        let folded = folded(offers(), &["memory", "web"]);
        assert_eq!(
            folded.load(&["nope".into()]).unwrap_err().to_string(),
            "no tool group named nope; the groups are: memory, web"
        );
        assert!(folded.has_waiting());
        assert_eq!(
            folded.load(&["web".into()]).unwrap(),
            "Loaded web. You can now call: web_fetch"
        );
        assert!(names(&folded.visible().0).contains(&"web_fetch"));
        folded.note_call("memory_write");
        assert!(names(&folded.visible().0).ends_with(&[
            "memory_read",
            "memory_write",
            "web_fetch"
        ]));
        assert!(!folded.has_waiting());
    }

    #[test]
    fn a_group_loaded_again_is_said_to_be_loaded_already() {
        let folded = folded(offers(), &["memory", "web"]);
        folded.load(&["web".into()]).unwrap();
        assert_eq!(
            folded.load(&["memory".into(), "web".into()]).unwrap(),
            "Loaded memory (web already loaded). You can now call: memory_read, memory_write, \
             web_fetch"
        );
        assert_eq!(
            folded.load(&["memory".into(), "web".into()]).unwrap(),
            "Already loaded: memory, web, nothing new: call memory_read, memory_write, \
             web_fetch or another tool you have."
        );
    }

    #[test]
    fn a_brief_spec_keeps_only_the_arguments_a_call_must_give() {
        let read = ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Where"},
                "limit": {"type": "integer", "minimum": 1},
                "offset": {"type": "integer", "minimum": 1}
            }, "required": ["path"]}),
        };
        assert_eq!(
            brief(read).parameters,
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
        );
        // Nothing required: every argument is a choice the tool offers, and stays.
        let choose = ToolSpec {
            name: "set_llm_params".into(),
            description: "Change the parameters.".into(),
            parameters: json!({"type": "object", "properties": {
                "temperature": {"type": "number"},
                "top_p": {"type": "number"}
            }}),
        };
        assert_eq!(
            brief(choose).parameters,
            json!({"type": "object", "properties": {
                "temperature": {"type": "number"},
                "top_p": {"type": "number"}
            }})
        );
    }

    #[test]
    fn a_brief_spec_keeps_a_sentence_and_the_argument_names() {
        let short = brief(spec("read_file"));
        assert_eq!(short.description, "Does it.");
        assert_eq!(
            short.parameters,
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "description": {"type": "string"}
            }})
        );
        assert_eq!(
            first_sentence("Fetch example.com pages. More"),
            "Fetch example.com pages."
        );
        assert_eq!(first_sentence("One line\nand more"), "One line");
        assert_eq!(first_sentence("No stop"), "No stop");
    }

    #[test]
    fn what_would_be_shown_is_sized_as_it_would_be_built() {
        for groups in [&[][..], &["memory"], &["memory", "mcp__gh", "web"]] {
            let (count, tokens) = shown_size(&offers(), &fold(groups), true);
            let (visible, built) = Offered::new(offers(), &fold(groups), |spec| spec).visible();
            assert_eq!((count, tokens), (visible.len(), built), "{groups:?}");
            assert_eq!(built, crate::history::spec_tokens(visible.iter()));
        }
    }

    #[test]
    fn groups_are_name_prefixes() {
        assert_eq!(group_of("mcp__github__create_issue"), Some("mcp__github"));
        assert_eq!(group_of("mcp__fs__read"), Some("mcp__fs"));
        assert_eq!(group_of("read_file"), None);
        assert_eq!(group_of("__odd"), None);
    }
}
