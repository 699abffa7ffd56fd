//! A tool call in words: what it will do, in one line, for an approval prompt or a
//! card's header ("write notes.md (3 lines)", "run `cargo test`"). Every front end
//! says it the same way.

use serde_json::Value;

/// Longest piece of an argument quoted in a description.
const QUOTE_CHARS: usize = 80;

/// What the call `name` with `args` does, in one line.
pub fn action(name: &str, args: &Value) -> String {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(quote);
    match name {
        "read_file" => format!("read {}", text("path").unwrap_or_default()),
        "list_dir" => format!("list {}", text("path").unwrap_or_else(|| ".".into())),
        "search_files" => match text("path") {
            Some(path) => format!(
                "search {path} for “{}”",
                text("pattern").unwrap_or_default()
            ),
            None => format!("search for “{}”", text("pattern").unwrap_or_default()),
        },
        "write_file" => {
            let path = text("path").unwrap_or_default();
            match args.get("content").and_then(Value::as_str) {
                Some(content) => format!("write {path} ({})", size(content)),
                None => format!("write {path}"),
            }
        }
        "edit_file" => format!("edit {}", text("path").unwrap_or_default()),
        "run_command" => format!("run `{}`", text("command").unwrap_or_default()),
        "web_fetch" => format!("fetch {}", text("url").unwrap_or_default()),
        "memory_read" => format!("recall “{}”", text("key").unwrap_or_default()),
        "memory_write" => format!("remember “{}”", text("key").unwrap_or_default()),
        "memory_list" => "list what is remembered".to_owned(),
        "todo_write" => "update the to-do list".to_owned(),
        "run_subtask" => format!("start the subtask “{}”", text("title").unwrap_or_default()),
        "finish_subtask" => "finish the subtask".to_owned(),
        _ => match mcp_parts(name) {
            Some((server, tool)) => {
                format!("call {tool} on the MCP server {server}{}", arguments(args))
            }
            None => format!("{name}{}", arguments(args)),
        },
    }
}

/// A call as a card's header shows it: the tool, what it acts on (`notes.md`, `cargo
/// test`, `example.com`), and for an MCP tool its server; the raw arguments stay
/// behind a disclosure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    pub tool: String,
    pub subject: Option<String>,
    pub server: Option<String>,
}

impl Headline {
    pub fn of(name: &str, args: Option<&Value>) -> Self {
        let arg = |key: &str| args.and_then(|args| args.get(key)).and_then(Value::as_str);
        if let Some((server, tool)) = mcp_parts(name) {
            return Self {
                tool: tool.to_owned(),
                subject: args.and_then(first_text).map(|text| quote(&text)),
                server: Some(server.to_owned()),
            };
        }
        let subject = match name {
            "read_file" | "write_file" | "edit_file" => arg("path").map(str::to_owned),
            "list_dir" => Some(folder(arg("path").unwrap_or(""))),
            "search_files" => arg("pattern").map(|pattern| match arg("path") {
                Some(path) if !path.is_empty() && path != "." => {
                    format!("“{pattern}” in {}", folder(path))
                }
                _ => format!("“{pattern}”"),
            }),
            "run_command" => arg("command").map(first_line),
            "web_fetch" => arg("url").map(host),
            "memory_read" | "memory_write" => arg("key").map(str::to_owned),
            "todo_write" => args
                .and_then(|args| args.get("items"))
                .and_then(Value::as_array)
                .map(|items| match items.len() {
                    1 => "1 item".to_owned(),
                    n => format!("{n} items"),
                }),
            "run_subtask" => arg("title").map(str::to_owned),
            "create_plan" => arg("objective").map(str::to_owned),
            "switch_agent" => arg("to").map(|to| format!("to {to}")),
            _ => args.and_then(first_text),
        };
        Self {
            tool: name.to_owned(),
            subject: subject.map(|text| quote(&text)).filter(|s| !s.is_empty()),
            server: None,
        }
    }
}

/// A folder as people write one: `src/`, and `./` for the workspace itself.
fn folder(path: &str) -> String {
    match path.trim() {
        "" | "." | "./" => "./".to_owned(),
        path if path.ends_with('/') => path.to_owned(),
        path => format!("{path}/"),
    }
}

/// A script's first line, with how many follow: flattened into one line, its lines
/// would read as one command (`set -e cargo build`).
fn first_line(script: &str) -> String {
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
fn host(url: &str) -> String {
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

fn size(content: &str) -> String {
    match content.lines().count() {
        0 => "empty".to_owned(),
        1 => format!("1 line, {} bytes", content.len()),
        lines => format!("{lines} lines"),
    }
}

/// Arguments as compact JSON after a space, cut to fit one line; nothing for none.
fn arguments(args: &Value) -> String {
    match args {
        Value::Null => String::new(),
        Value::Object(map) if map.is_empty() => String::new(),
        other => format!(" {}", quote(&other.to_string())),
    }
}

/// `text` on one line, cut to [`QUOTE_CHARS`] with `…`.
fn quote(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_builtin_says_what_it_does() {
        let cases = [
            ("read_file", json!({"path": "notes.md"}), "read notes.md"),
            ("list_dir", json!({"path": "src/"}), "list src/"),
            (
                "search_files",
                json!({"pattern": "TODO", "path": "src"}),
                "search src for “TODO”",
            ),
            (
                "write_file",
                json!({"path": "a.md", "content": "one\ntwo\n"}),
                "write a.md (2 lines)",
            ),
            (
                "write_file",
                json!({"path": "a.md", "content": "kept"}),
                "write a.md (1 line, 4 bytes)",
            ),
            ("edit_file", json!({"path": "a.rs"}), "edit a.rs"),
            (
                "run_command",
                json!({"command": "cargo   test\n--all"}),
                "run `cargo test --all`",
            ),
            (
                "web_fetch",
                json!({"url": "https://example.com"}),
                "fetch https://example.com",
            ),
            (
                "mcp__github__create_issue",
                json!({"title": "Bug"}),
                "call create_issue on the MCP server github {\"title\":\"Bug\"}",
            ),
            (
                "mcp__files__list",
                json!({}),
                "call list on the MCP server files",
            ),
            ("custom", json!({"a": 1}), "custom {\"a\":1}"),
        ];
        for (name, args, said) in cases {
            assert_eq!(action(name, &args), said, "{name}");
        }
    }

    #[test]
    fn a_long_argument_is_cut_on_a_character_boundary() {
        let said = action("run_command", &json!({"command": "é".repeat(200)}));
        assert_eq!(said.chars().count(), "run ``".len() + QUOTE_CHARS + 1);
        assert!(said.ends_with("…`"));
    }

    fn line(name: &str, args: Value) -> String {
        let head = Headline::of(name, Some(&args));
        let mut out = head.tool;
        if let Some(subject) = head.subject {
            out = format!("{out} {subject}");
        }
        if let Some(server) = head.server {
            out = format!("{out} ({server})");
        }
        out
    }

    #[test]
    fn each_card_header_names_the_tool_and_what_it_acts_on() {
        let cases = [
            (
                "read_file",
                json!({"path": "notes.md"}),
                "read_file notes.md",
            ),
            ("list_dir", json!({"path": "src"}), "list_dir src/"),
            ("list_dir", json!({}), "list_dir ./"),
            (
                "write_file",
                json!({"path": "a/b.rs", "content": "x"}),
                "write_file a/b.rs",
            ),
            (
                "edit_file",
                json!({"path": "c.rs", "old_text": "a", "new_text": "b"}),
                "edit_file c.rs",
            ),
            (
                "search_files",
                json!({"pattern": "fn main", "path": "src"}),
                "search_files “fn main” in src/",
            ),
            (
                "search_files",
                json!({"pattern": "todo"}),
                "search_files “todo”",
            ),
            (
                "run_command",
                json!({"command": "cargo test"}),
                "run_command cargo test",
            ),
            (
                "web_fetch",
                json!({"url": "https://user@example.com:8080/a?b=c"}),
                "web_fetch example.com:8080",
            ),
            (
                "web_fetch",
                json!({"url": "example.com/x"}),
                "web_fetch example.com",
            ),
            (
                "memory_write",
                json!({"key": "name", "value": "Ada"}),
                "memory_write name",
            ),
            (
                "todo_write",
                json!({"items": [{"text": "a", "done": false}]}),
                "todo_write 1 item",
            ),
            (
                "create_plan",
                json!({"objective": "Tidy the notes"}),
                "create_plan Tidy the notes",
            ),
            (
                "mcp__github__search_issues",
                json!({"query": "crash"}),
                "search_issues crash (github)",
            ),
            ("mystery", json!({"n": 1, "what": "this"}), "mystery this"),
            ("mystery", json!({"n": 1}), "mystery"),
        ];
        for (name, args, expected) in cases {
            assert_eq!(line(name, args), expected);
        }
    }

    #[test]
    fn a_long_or_many_line_subject_is_cut_to_one_line() {
        let script = "set -e\n\ncargo build\n";
        assert_eq!(
            line("run_command", json!({"command": script})),
            "run_command set -e … (+1 line)"
        );
        assert_eq!(
            line("run_command", json!({"command": "  cd src\nls\nwc -l *\n"})),
            "run_command cd src … (+2 lines)"
        );
        assert_eq!(
            line("run_command", json!({"command": "cargo   test\n"})),
            "run_command cargo test",
            "one line and its blank end"
        );
        let long = "x".repeat(200);
        let head = Headline::of("run_command", Some(&json!({"command": long})));
        let subject = head.subject.unwrap_or_default();
        assert_eq!(subject.chars().count(), QUOTE_CHARS + 1);
        assert!(subject.ends_with('…'));
        assert_eq!(Headline::of("run_command", None).subject, None);
    }
}
