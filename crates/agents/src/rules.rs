//! A profile's tool rules: `add` and `remove` regexes, applied from the base profile
//! down to the child, the last rule that matches a name deciding.

use cairn_core::ToolSelection;
use regex::Regex;

use crate::profile::ToolLists;

/// One profile's layer: what it adds, then what it removes.
#[derive(Debug, Clone)]
struct Layer {
    add: Vec<Regex>,
    remove: Vec<Regex>,
}

/// The layers of a profile and its bases, base first.
#[derive(Debug, Clone, Default)]
pub struct ToolRules {
    layers: Vec<Layer>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` is not a valid regex: {reason}")]
pub struct ToolRulesError {
    pub pattern: String,
    pub reason: String,
}

impl ToolRules {
    /// These rules with `lists` applied after them (a child's over its base's).
    pub fn then(&self, lists: &ToolLists) -> Result<Self, ToolRulesError> {
        let mut layers = self.layers.clone();
        layers.push(Layer {
            add: compile(&lists.add)?,
            remove: compile(&lists.remove)?,
        });
        Ok(Self { layers })
    }
}

/// Anchored: `read_file` names that tool alone, not `read_file_fast` as well.
fn compile(patterns: &[String]) -> Result<Vec<Regex>, ToolRulesError> {
    patterns
        .iter()
        .map(|pattern| {
            Regex::new(&format!("^(?:{pattern})$")).map_err(|err| ToolRulesError {
                pattern: pattern.clone(),
                reason: err
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_owned(),
            })
        })
        .collect()
}

impl ToolSelection for ToolRules {
    fn allows(&self, tool: &str) -> bool {
        self.layers.iter().fold(false, |allowed, layer| {
            if layer.remove.iter().any(|re| re.is_match(tool)) {
                false
            } else {
                allowed || layer.add.iter().any(|re| re.is_match(tool))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(add: &[&str], remove: &[&str]) -> ToolLists {
        ToolLists {
            add: add.iter().map(|s| (*s).to_owned()).collect(),
            remove: remove.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn no_rules_allow_nothing() {
        assert!(!ToolRules::default().allows("read_file"));
    }

    #[test]
    fn patterns_are_anchored() {
        let rules = ToolRules::default()
            .then(&lists(&["read_file"], &[]))
            .unwrap();
        assert!(rules.allows("read_file"));
        assert!(!rules.allows("read_file_fast"));
        assert!(!rules.allows("xread_file"));
    }

    #[test]
    fn a_child_narrows_or_widens_its_base_in_order() {
        let base = ToolRules::default()
            .then(&lists(&[".*"], &["run_command"]))
            .unwrap();
        assert!(base.allows("write_file"));
        assert!(!base.allows("run_command"));
        let reader = base.then(&lists(&[], &["write_.*|edit_file"])).unwrap();
        assert!(reader.allows("read_file"));
        assert!(!reader.allows("write_file"));
        assert!(!reader.allows("edit_file"));
        // A child may give back what its base removed.
        let runner = base.then(&lists(&["run_command"], &[])).unwrap();
        assert!(runner.allows("run_command"));
        // Within one layer, remove wins over add.
        let both = ToolRules::default()
            .then(&lists(&["mcp__.*"], &["mcp__db__.*"]))
            .unwrap();
        assert!(both.allows("mcp__web__get"));
        assert!(!both.allows("mcp__db__drop"));
    }

    #[test]
    fn a_bad_regex_names_itself() {
        let err = ToolRules::default()
            .then(&lists(&["read_(file"], &[]))
            .unwrap_err();
        assert_eq!(err.pattern, "read_(file");
        assert!(err.to_string().contains("not a valid regex"), "{err}");
    }
}
