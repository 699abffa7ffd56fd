//! One profile file: the front matter between `---` lines, and the instructions below.

use cairn_core::AgentRole;
use serde::Deserialize;

/// The front matter as written. Unknown keys are refused: a misspelt `tools` would
/// otherwise give a profile every tool or none without a word.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// The named model server its calls go to (`cairn servers list`).
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub tools: ToolLists,
    #[serde(default)]
    pub subagent: Subagent,
    #[serde(default)]
    pub ui: Ui,
    /// The part the engine gives it (`router`, `reviewer`); its own, not its base's.
    #[serde(default)]
    pub role: Option<AgentRole>,
}

/// Anchored regexes over tool names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolLists {
    #[serde(default)]
    pub add: Vec<String>,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subagent {
    #[serde(default = "yes")]
    pub runnable: bool,
}

impl Default for Subagent {
    fn default() -> Self {
        Self { runnable: true }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ui {
    #[serde(default)]
    pub hidden: bool,
}

fn yes() -> bool {
    true
}

/// A profile as its file says, before its base is resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct RawProfile {
    pub id: String,
    pub front: FrontMatter,
    pub instructions: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("`{0}` is not a profile id: use lowercase letters, digits, `-` and `_`")]
    BadId(String),
    #[error("the file does not start with front matter: a `---` line, YAML, a `---` line")]
    NoFrontMatter,
    #[error("the front matter has no closing `---` line")]
    Unclosed,
    #[error("the front matter is not valid: {0}")]
    Yaml(String),
    #[error("`temperature` must be between 0 and 2, not {0}")]
    Temperature(f64),
}

/// Whether `id` may name a profile (`[a-z0-9_-]+`).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

impl RawProfile {
    /// Parses the text of `ID.md`.
    pub fn parse(id: &str, text: &str) -> Result<Self, ProfileError> {
        if !valid_id(id) {
            return Err(ProfileError::BadId(id.to_owned()));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.split_inclusive('\n');
        if lines.next().map(str::trim_end) != Some("---") {
            return Err(ProfileError::NoFrontMatter);
        }
        let mut yaml = String::new();
        let mut closed = false;
        for line in lines.by_ref() {
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            yaml.push_str(line);
        }
        if !closed {
            return Err(ProfileError::Unclosed);
        }
        let instructions: String = lines.collect();
        let front: FrontMatter = if yaml.trim().is_empty() {
            FrontMatter::default()
        } else {
            serde_yaml_ng::from_str(&yaml).map_err(|err| ProfileError::Yaml(err.to_string()))?
        };
        if let Some(t) = front.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
            return Err(ProfileError::Temperature(t));
        }
        Ok(Self {
            id: id.to_owned(),
            front,
            instructions: instructions.trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_read() {
        let text = "---\n\
            description: Reviews diffs\n\
            base: chat\n\
            model: qwen3:32b\n\
            server: gpu\n\
            temperature: 0.2\n\
            tools:\n  add: [read_file]\n  remove: ['write_.*']\n\
            subagent: {runnable: false}\n\
            ui:\n  hidden: true\n\
            role: reviewer\n\
            ---\n\
            # Review\n\nBe terse.\n";
        let profile = RawProfile::parse("reviewer", text).unwrap();
        assert_eq!(
            profile.front,
            FrontMatter {
                description: "Reviews diffs".into(),
                base: Some("chat".into()),
                model: Some("qwen3:32b".into()),
                server: Some("gpu".into()),
                temperature: Some(0.2),
                tools: ToolLists {
                    add: vec!["read_file".into()],
                    remove: vec!["write_.*".into()],
                },
                subagent: Subagent { runnable: false },
                ui: Ui { hidden: true },
                role: Some(AgentRole::Reviewer),
            }
        );
        assert_eq!(profile.instructions, "# Review\n\nBe terse.");
    }

    #[test]
    fn defaults_are_runnable_visible_and_toolless() {
        let profile = RawProfile::parse("plain", "---\n---\nHello.").unwrap();
        assert_eq!(profile.front, FrontMatter::default());
        assert!(profile.front.subagent.runnable);
        assert!(!profile.front.ui.hidden);
        assert_eq!(profile.instructions, "Hello.");
        // Windows line ends and a byte-order mark are fine.
        let crlf = RawProfile::parse("crlf", "\u{feff}---\r\ndescription: x\r\n---\r\nHi\r\n");
        assert_eq!(crlf.unwrap().front.description, "x");
    }

    #[test]
    fn each_malformed_file_says_what_is_wrong() {
        let cases = [
            ("Bad", "---\n---\n", "not a profile id"),
            ("a.b", "---\n---\n", "not a profile id"),
            ("x", "description: x\n", "does not start with front matter"),
            ("x", "---\ndescription: x\n", "no closing"),
            ("x", "---\ndescription: [unclosed\n---\n", "not valid"),
            (
                "x",
                "---\ndescriptoin: typo\n---\n",
                "unknown field `descriptoin`",
            ),
            ("x", "---\ntools: read_file\n---\n", "not valid"),
            ("x", "---\ntemperature: 7\n---\n", "between 0 and 2"),
        ];
        for (id, text, expected) in cases {
            let err = RawProfile::parse(id, text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
