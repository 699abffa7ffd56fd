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
}
