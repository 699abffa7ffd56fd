//! A tool call in words: what it does, in one line, for an approval prompt ("write
//! notes.md (3 lines)", "run `cargo test`"), and what it acts on, for a card's header
//! (`notes.md`, `cargo test`). Each tool says this of its own calls (the engine's
//! `Tool::describe`), and the events carry it; this module holds the wording the
//! tools share, and what is said of a call whose tool said nothing (an answer stored
//! before tools described themselves, a call still being written).

use serde_json::Value;

/// Longest piece of an argument quoted in a description.
pub const QUOTE_CHARS: usize = 80;

/// A call as its tool tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAbout {
    /// What the call will do, in one line.
    pub action: String,
    /// What it acts on, for a card's header; one line.
    pub subject: Option<String>,
}

impl CallAbout {
    /// `action`, and `subject` cut to one line (nothing when it is blank).
    pub fn new(action: impl Into<String>, subject: Option<String>) -> Self {
        Self {
            action: action.into(),
            subject: subject.map(|text| quote(&text)).filter(|s| !s.is_empty()),
        }
    }

    /// What is said of a call to `name` whose tool says nothing of its own: the tool
    /// and its arguments (an MCP tool by its server), the first text among them as
    /// what it acts on.
    pub fn generic(name: &str, args: &Value) -> Self {
        let action = match mcp_parts(name) {
            Some((server, tool)) => {
                format!("call {tool} on the MCP server {server}{}", arguments(args))
            }
            None => format!("{name}{}", arguments(args)),
        };
        Self::new(action, first_text(args))
    }
}

/// A call as a card's header shows it: the tool, what it acts on, and for an MCP
/// tool its server; the raw arguments stay behind a disclosure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    pub tool: String,
    pub subject: Option<String>,
    pub server: Option<String>,
}

impl Headline {
    /// The header of a call to `name`: with the `subject` its tool said, else the
    /// first text among `args`.
    pub fn of(name: &str, subject: Option<&str>, args: Option<&Value>) -> Self {
        let subject = match subject {
            Some(subject) => Some(quote(subject)),
            None => args.and_then(first_text).map(|text| quote(&text)),
        }
        .filter(|s| !s.is_empty());
        match mcp_parts(name) {
            Some((server, tool)) => Self {
                tool: tool.to_owned(),
                subject,
                server: Some(server.to_owned()),
            },
            None => Self {
                tool: name.to_owned(),
                subject,
                server: None,
            },
        }
    }
}

/// A folder as people write one: `src/`, and `./` for the workspace itself.
pub fn folder(path: &str) -> String {
    match path.trim() {
        "" | "." | "./" => "./".to_owned(),
        path if path.ends_with('/') => path.to_owned(),
        path => format!("{path}/"),
    }
}

/// A script's first line, with how many follow: flattened into one line, its lines
/// would read as one command (`set -e cargo build`).
pub fn first_line(script: &str) -> String {
    let mut lines = script
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or_default();
    match lines.count() {
        0 => first.to_owned(),
        1 => format!("{first} … (+1 line)"),
        more => format!("{first} … (+{more} lines)"),
    }
}

/// The host a URL names (`https://example.com/a?b` → `example.com`); the text itself
/// when it names none.
pub fn host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host.is_empty() {
        url.to_owned()
    } else {
        host.to_owned()
    }
}

/// How much a text is: "empty", "1 line, 4 bytes", "3 lines".
pub fn size(content: &str) -> String {
    match content.lines().count() {
        0 => "empty".to_owned(),
        1 => format!("1 line, {} bytes", content.len()),
        lines => format!("{lines} lines"),
    }
}

/// `text` on one line, cut to [`QUOTE_CHARS`] with `…`.
pub fn quote(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// "850 ms", "1.2 s", "2 min 5 s".
pub fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A call's time as its card shows it: the wait for the user apart from its own
/// ("waited 37.6 s · 14 ms"), or its own alone.
pub fn call_time(duration_ms: u64, waited_ms: u64) -> String {
    let own = duration(duration_ms.saturating_sub(waited_ms));
    match waited_ms {
        0 => own,
        waited => format!("waited {} · {own}", duration(waited)),
    }
}

/// The text argument `key` of `args`, if there is one.
pub fn text_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The first string among the arguments: what an unknown tool most likely acts on.
fn first_text(args: &Value) -> Option<String> {
    args.as_object()?
        .values()
        .find_map(Value::as_str)
        .map(str::to_owned)
}

/// `mcp__<server>__<tool>` as (server, tool).
pub fn mcp_parts(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

/// Arguments as compact JSON after a space, cut to fit one line; nothing for none.
fn arguments(args: &Value) -> String {
    match args {
        Value::Null => String::new(),
        Value::Object(map) if map.is_empty() => String::new(),
        other => format!(" {}", quote(&other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_whose_tool_says_nothing_reads_as_its_name_and_arguments() {
        let cases = [
            (
                "mcp__github__create_issue",
                json!({"title": "Bug"}),
                "call create_issue on the MCP server github {\"title\":\"Bug\"}",
                Some("Bug"),
            ),
            (
                "mcp__files__list",
                json!({}),
                "call list on the MCP server files",
                None,
            ),
            ("custom", json!({"a": 1}), "custom {\"a\":1}", None),
            (
                "custom",
                json!({"n": 1, "what": "this"}),
                "custom {\"n\":1,\"what\":\"this\"}",
                Some("this"),
            ),
        ];
        for (name, args, action, subject) in cases {
            let about = CallAbout::generic(name, &args);
            assert_eq!(about.action, action, "{name}");
            assert_eq!(about.subject.as_deref(), subject, "{name}");
        }
    }

    #[test]
    fn a_long_argument_is_cut_on_a_character_boundary() {
        let said = CallAbout::generic("custom", &json!({"command": "é".repeat(200)}));
        let subject = said.subject.unwrap_or_default();
        assert_eq!(subject.chars().count(), QUOTE_CHARS + 1);
        assert!(subject.ends_with('…'));
    }

    #[test]
    fn a_header_shows_what_the_tool_said_else_the_first_text_and_an_mcp_server() {
        let args = json!({"n": 1, "path": "notes.md"});
        assert_eq!(
            Headline::of("list_dir", Some("src/"), Some(&args))
                .subject
                .as_deref(),
            Some("src/")
        );
        assert_eq!(
            Headline::of("list_dir", None, Some(&args))
                .subject
                .as_deref(),
            Some("notes.md"),
            "an answer stored before tools said"
        );
        let mcp = Headline::of("mcp__github__search_issues", Some("crash"), None);
        assert_eq!(
            (
                mcp.tool.as_str(),
                mcp.subject.as_deref(),
                mcp.server.as_deref()
            ),
            ("search_issues", Some("crash"), Some("github"))
        );
        assert_eq!(Headline::of("run_command", None, None).subject, None);
        assert_eq!(
            Headline::of("x", Some("  "), None).subject,
            None,
            "blank is none"
        );
    }

    #[test]
    fn the_shared_wording_names_folders_scripts_hosts_and_sizes() {
        assert_eq!(folder("src"), "src/");
        assert_eq!(folder(""), "./");
        assert_eq!(first_line("set -e\n\ncargo build\n"), "set -e … (+1 line)");
        assert_eq!(first_line("  cd src\nls\nwc -l *\n"), "cd src … (+2 lines)");
        assert_eq!(
            host("https://user@example.com:8080/a?b=c"),
            "example.com:8080"
        );
        assert_eq!(host("example.com/x"), "example.com");
        assert_eq!(size("one\ntwo\n"), "2 lines");
        assert_eq!(size("kept"), "1 line, 4 bytes");
        assert_eq!(quote("cargo   test\n--all"), "cargo test --all");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(1234), "1.2 s");
        assert_eq!(duration(125_000), "2 min 5 s");
        assert_eq!(call_time(37_587, 37_573), "waited 37.6 s · 14 ms");
        assert_eq!(call_time(14, 0), "14 ms");
    }
}
