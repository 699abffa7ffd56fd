//! How values read on screen (times, durations, sizes, previews, labels, usage), and
//! typed values read back.

use cairn_protocol::desktop::{ContextInfo, McpServerInfo, ToolInfo};
use cairn_protocol::{
    AgentStateKind, AnswerUsage, BudgetExceeded, BudgetReason, CallTotals, PermissionMode,
    PromptProgress, ThreadUsage,
};
use serde_json::Value;

/// "just now", "5 min ago", "3 h ago", "2 d ago", from Unix milliseconds.
pub fn ago(then_ms: i64, now_ms: i64) -> String {
    let seconds = (now_ms - then_ms).max(0) / 1000;
    match seconds {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

pub use cairn_protocol::describe::duration;

/// The string field `key` of JSON still being written (`{"path": "a.md", "content":
/// "Hel`), as far as it has come; `None` before its opening quote.
pub fn partial_field(text: &str, key: &str) -> Option<String> {
    let needle = format!("\"{key}\"");
    let at = text.find(&needle)? + needle.len();
    let rest = text[at..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => {}
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        out.push(c);
                    }
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// The fields a card's header names, from arguments still being written.
pub fn partial_args(text: &str) -> Value {
    let fields: serde_json::Map<String, Value> = [
        "path",
        "command",
        "url",
        "pattern",
        "key",
        "title",
        "objective",
        "query",
    ]
    .into_iter()
    .filter_map(|key| Some((key.to_owned(), Value::String(partial_field(text, key)?))))
    .collect();
    Value::Object(fields)
}

/// What a call being written shows of itself: the argument its tool `streams` (the
/// content a write is writing, the command a command is), else its arguments so far;
/// the last lines when long.
pub fn pending_preview(streams: Option<&str>, text: &str) -> String {
    let shown = streams
        .and_then(|key| partial_field(text, key))
        .unwrap_or_else(|| text.to_owned());
    let lines: Vec<&str> = shown.lines().collect();
    match lines.len().checked_sub(PENDING_LINES) {
        Some(skip) if skip > 0 => format!("…\n{}", lines[skip..].join("\n")),
        _ => shown,
    }
}

/// The most lines a call being written shows (its latest).
const PENDING_LINES: usize = 30;

/// How an MCP server stands, in words.
pub fn mcp_status(server: &McpServerInfo) -> String {
    match (&server.tools, &server.error, server.allowed) {
        (Some(tools), _, _) => format!("running, {tools} tools"),
        (None, Some(error), _) => error.clone(),
        (None, None, true) => "allowed; starts with Cairn".to_owned(),
        (None, None, false) => "not started".to_owned(),
    }
}

/// What `/mcp` says: each server, how it stands, whether its read-only marks count,
/// and the tools it gives (by their own names).
pub fn mcp_listing(servers: &[McpServerInfo], tools: &[ToolInfo]) -> String {
    if servers.is_empty() {
        return "No MCP servers are configured (mcp.json beside the database, or \
                CAIRN_MCP_CONFIG); Settings shows them once there are."
            .to_owned();
    }
    let mut out = vec!["MCP servers (Settings starts, stops and trusts them):".to_owned()];
    for server in servers {
        let trust = if server.trusted { ", trusted" } else { "" };
        out.push(format!(
            "{} — {}{trust} ({})",
            server.name,
            mcp_status(server),
            server.target
        ));
        let prefix = format!("mcp__{}__", server.name);
        let names: Vec<&str> = tools
            .iter()
            .filter_map(|tool| tool.name.strip_prefix(&prefix))
            .collect();
        if !names.is_empty() {
            out.push(format!("  tools: {}", names.join(", ")));
        }
    }
    out.join("\n")
}

/// "1,234": counts read at a glance.
pub fn count(n: u64) -> String {
    cairn_protocol::thousands(n)
}

/// A cost in the prices' own unit: "free" when nothing is priced (a local model),
/// four decimals below 1, two above.
pub fn cost(cost: f64) -> String {
    if cost <= 0.0 {
        "free".to_owned()
    } else if cost < 1.0 {
        format!("cost {cost:.4}")
    } else {
        format!("cost {cost:.2}")
    }
}

/// A price field's text that is not a price.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("The {label} price must be a number of at least 0 per million tokens, not “{text}”")]
pub struct NotAPrice {
    label: String,
    text: String,
}

/// A price field's text as a number per million tokens, or why it is not one.
pub fn per_million(label: &str, text: &str) -> Result<f64, NotAPrice> {
    let text = text.trim();
    match text.parse::<f64>() {
        Ok(price) if price.is_finite() && price >= 0.0 => Ok(price),
        _ => Err(NotAPrice {
            label: label.to_owned(),
            text: text.to_owned(),
        }),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// "1,234 tokens (1,000 in, 234 out)", with "~" when some counts are estimates.
fn tokens(calls: &CallTotals) -> String {
    let about = if calls.estimated { "~" } else { "" };
    format!(
        "{about}{} ({} in, {} out)",
        plural(calls.total_tokens(), "token", "tokens"),
        count(calls.prompt_tokens),
        count(calls.completion_tokens)
    )
}

/// What an answer took, in one line: tokens, calls, time, cost.
pub fn answer_usage(answer: &AnswerUsage) -> String {
    let mut parts = vec![
        tokens(&answer.calls),
        plural(answer.calls.llm_calls, "model call", "model calls"),
    ];
    if answer.tool_calls > 0 {
        parts.push(plural(answer.tool_calls, "tool call", "tool calls"));
    }
    parts.push(duration(answer.elapsed_ms));
    parts.push(cost(answer.calls.cost));
    parts.join(" · ")
}

/// A chat's totals, a line each, as its menu shows them.
pub fn thread_usage(usage: &ThreadUsage) -> Vec<String> {
    let total = &usage.total;
    vec![
        plural(total.llm_calls, "model call", "model calls"),
        tokens(total),
        plural(usage.tool_calls, "tool call", "tool calls"),
        format!("{} in the model", duration(total.latency_ms)),
        cost(total.cost),
    ]
    .into_iter()
    .chain(usage.by_server.iter().map(|split| {
        let name = if split.server.is_empty() {
            "an unnamed server"
        } else {
            &split.server
        };
        format!(
            "on {name}: {} · {}",
            plural(split.totals.llm_calls, "model call", "model calls"),
            tokens(&split.totals)
        )
    }))
    .collect()
}

/// "1.5 GB" and the like, for download progress.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A context window in tokens as people say it: 4096 → "4k", 131072 → "128k".
pub fn context_size(tokens: u32) -> String {
    if tokens < 1000 {
        return tokens.to_string();
    }
    format!("{}k", (tokens + 512) / 1024)
}

/// The picker's tooltip: the exact window, who said so, and what Cairn does about it.
pub fn context_hint(info: &ContextInfo) -> String {
    let Some(tokens) = info.tokens else {
        return String::new();
    };
    let source = info.source.as_deref().unwrap_or("the server");
    let mut hint = format!(
        "This model takes {tokens} tokens at once ({source}). Cairn fits the conversation \
         and each tool result to it."
    );
    let groups = info.on_demand.join(", ");
    if info.tools_on_demand {
        hint.push_str(&format!(
            " Its tools would crowd that, so the model sees the core ones and loads the \
             rest as it needs them: {groups}."
        ));
    } else if !groups.is_empty() {
        hint.push_str(&format!(
            " Tools most chats never need load when the model asks for them: {groups}."
        ));
    }
    if info.tools_in_text {
        hint.push_str(
            " Its chat template takes no tools, so Cairn describes them in its prompt and \
             reads its calls from what it writes.",
        );
    }
    if let Some(checkup) = &info.checkup {
        hint.push_str(&format!(
            " Tried with a file to read, it {checkup}; Cairn shows it its tools' results \
             the way that worked (`cairn models check` tries again)."
        ));
    }
    hint
}

/// What the model picker says beside the model: its window, and how its tools reach
/// it when not the usual way.
pub fn context_label(info: &ContextInfo) -> Option<String> {
    let mut parts = vec![format!("{} context", context_size(info.tokens?))];
    if info.tools_on_demand {
        parts.push("tools on demand".to_owned());
    }
    if info.tools_in_text {
        parts.push("tools through text".to_owned());
    }
    if let Some(checkup) = &info.checkup {
        parts.push(checkup.clone());
    }
    Some(parts.join(" · "))
}

/// A value as a card shows it: strings as they are, anything else as pretty JSON,
/// cut to `max` characters.
pub fn preview(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    cut(&text, max)
}

/// At most `max` characters, with an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The state chip's words; `None` when there is nothing to say.
pub fn state_chip(state: AgentStateKind) -> Option<&'static str> {
    match state {
        AgentStateKind::Thinking => Some("Thinking…"),
        AgentStateKind::Executing => Some("Running tools…"),
        AgentStateKind::WaitingOnUser => Some("Waiting for you"),
        AgentStateKind::Reconnecting => Some("Server busy, retrying…"),
        AgentStateKind::Idle => None,
    }
}

pub fn mode_label(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Plan => "Plan",
        PermissionMode::Default => "Default",
        PermissionMode::Auto => "Auto",
    }
}

/// What each mode lets the agent do, for the dropdown.
pub fn mode_hint(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Plan => "Reads only; writes a plan for you to approve",
        PermissionMode::Default => "Reads freely; asks before it writes, runs or fetches",
        PermissionMode::Auto => "Does everything without asking (deny rules still hold)",
    }
}

/// The chip while the server reads a long prompt: "Reading the prompt: 1,200 of 1,900
/// tokens · 8 s left".
pub fn reading(progress: &PromptProgress) -> String {
    // The protocol's words start with an ASCII letter: Unicode's case tables would
    // cost the page their bytes for nothing.
    let mut said = progress.said();
    if let Some(first) = said.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    said
}

/// The inline notice for a budget the turn ran into.
pub fn budget(exceeded: &BudgetExceeded) -> String {
    let what = match exceeded.reason {
        BudgetReason::Subtasks => "the subtask limit",
        BudgetReason::LlmCalls => "the model-call limit",
        BudgetReason::ToolCalls => "the tool-call limit",
        BudgetReason::WallClock => "the time limit",
        BudgetReason::Tokens => "the token limit",
        BudgetReason::Bytes => "the output size limit",
    };
    format!(
        "Stopped at {what} ({}). Send a message to continue, or {}.",
        exceeded.used(),
        exceeded.how_to_raise()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_budget_notice_says_which_limit_and_how_to_raise_it() {
        let notice = budget(&BudgetExceeded {
            reason: BudgetReason::WallClock,
            limit: 180_000,
            observed: 180_400,
        });
        assert!(
            notice.starts_with(
                "Stopped at the time limit (181 s of 180 s). Send a message to continue, or \
                 raise it with CAIRN_MAX_WALL_CLOCK_MS"
            ),
            "{notice}"
        );
    }

    #[test]
    fn a_call_being_written_shows_what_it_has_written_so_far() {
        let text = r#"{"path": "notes.md", "content": "Line one\nLine \"two\" \u00e9t"#;
        assert_eq!(partial_field(text, "path").as_deref(), Some("notes.md"));
        assert_eq!(
            partial_field(text, "content").as_deref(),
            Some("Line one\nLine \"two\" ét")
        );
        assert_eq!(partial_field(r#"{"path": "no"#, "content"), None);
        assert_eq!(partial_field(r#"{"content":"#, "content"), None);
        assert_eq!(partial_args(text), json!({"path": "notes.md"}));
        assert_eq!(
            pending_preview(Some("content"), text),
            "Line one\nLine \"two\" ét"
        );
        assert_eq!(pending_preview(None, "{\"a\": 1"), "{\"a\": 1");
        let long: String = (1..=40).map(|n| format!("line {n}\\n")).collect();
        let preview = pending_preview(Some("content"), &format!(r#"{{"content": "{long}"#));
        assert!(preview.starts_with("…\nline 11\n"), "{preview}");
        assert!(preview.ends_with("line 40"));
    }

    #[test]
    fn mcp_lists_each_server_how_it_stands_and_its_tools() {
        let server = |name: &str, tools: Option<usize>, error: Option<&str>| McpServerInfo {
            name: name.into(),
            target: format!("{name}-server --stdio"),
            allowed: true,
            trusted: name == "files",
            tools,
            error: error.map(Into::into),
        };
        let tool = |name: &str| ToolInfo {
            name: name.into(),
            category: cairn_protocol::ToolCategory::Read,
            description: String::new(),
        };
        let listing = mcp_listing(
            &[
                server("files", Some(2), None),
                server("github", None, Some("exited: no token")),
            ],
            &[
                tool("read_file"),
                tool("mcp__files__list"),
                tool("mcp__files__read"),
            ],
        );
        assert_eq!(
            listing,
            "MCP servers (Settings starts, stops and trusts them):\n\
             files — running, 2 tools, trusted (files-server --stdio)\n  tools: list, read\n\
             github — exited: no token (github-server --stdio)"
        );
        assert!(mcp_listing(&[], &[]).starts_with("No MCP servers are configured"));
    }

    #[test]
    fn a_price_is_a_number_or_says_what_is_wrong() {
        assert_eq!(per_million("prompt", " 2.5 "), Ok(2.5));
        assert_eq!(
            per_million("completion", "ten").map_err(|err| err.to_string()),
            Err(
                "The completion price must be a number of at least 0 per million tokens, not “ten”"
                    .into()
            )
        );
        assert!(per_million("prompt", "-1").is_err());
        assert!(per_million("prompt", "").is_err());
    }

    #[test]
    fn usage_reads_as_counts_time_and_cost() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(cost(0.0), "free");
        assert_eq!(cost(0.00215), "cost 0.0022");
        assert_eq!(cost(12.345), "cost 12.35");
        let answer = AnswerUsage {
            message_id: "m".into(),
            calls: CallTotals {
                llm_calls: 2,
                prompt_tokens: 3_000,
                completion_tokens: 300,
                latency_ms: 2_000,
                estimated: false,
                cost: 0.009,
            },
            tool_calls: 1,
            elapsed_ms: 4_200,
        };
        assert_eq!(
            answer_usage(&answer),
            "3,300 tokens (3,000 in, 300 out) · 2 model calls · 1 tool call · 4.2 s · cost 0.0090"
        );
        let usage = ThreadUsage {
            total: CallTotals {
                llm_calls: 1,
                prompt_tokens: 10,
                completion_tokens: 1,
                latency_ms: 900,
                estimated: true,
                cost: 0.0,
            },
            tool_calls: 0,
            answers: vec![answer],
            by_server: Vec::new(),
        };
        assert_eq!(
            thread_usage(&usage),
            [
                "1 model call",
                "~11 tokens (10 in, 1 out)",
                "0 tool calls",
                "900 ms in the model",
                "free"
            ]
        );
        // With more than one server, each server's share follows.
        let split = |server: &str, llm_calls, prompt_tokens| cairn_protocol::ServerTotals {
            server: server.into(),
            totals: CallTotals {
                llm_calls,
                prompt_tokens,
                ..CallTotals::default()
            },
        };
        let usage = ThreadUsage {
            by_server: vec![split("laptop", 1, 10), split("gpu", 3, 4_000)],
            ..usage
        };
        assert_eq!(
            thread_usage(&usage)[5..],
            [
                "on laptop: 1 model call · 10 tokens (10 in, 0 out)",
                "on gpu: 3 model calls · 4,000 tokens (4,000 in, 0 out)"
            ]
        );
    }

    #[test]
    fn context_sizes_read_as_people_say_them() {
        assert_eq!(context_size(4096), "4k");
        assert_eq!(context_size(32_768), "32k");
        assert_eq!(context_size(131_072), "128k");
        assert_eq!(context_size(40_960), "40k");
        assert_eq!(context_size(512), "512");
        let mut info = ContextInfo {
            tokens: Some(4096),
            source: Some("Ollama, as loaded".into()),
            tools_on_demand: true,
            on_demand: vec!["memory".into(), "web".into()],
            tools_in_text: false,
            checkup: None,
        };
        assert_eq!(
            context_label(&info).as_deref(),
            Some("4k context · tools on demand")
        );
        let hint = context_hint(&info);
        assert!(hint.starts_with("This model takes 4096 tokens at once (Ollama, as loaded)."));
        assert!(
            hint.ends_with("loads the rest as it needs them: memory, web."),
            "{hint}"
        );
        info.tools_on_demand = false;
        assert!(
            context_hint(&info).ends_with("load when the model asks for them: memory, web."),
            "{}",
            context_hint(&info)
        );
        info.tools_in_text = true;
        assert_eq!(
            context_label(&info).as_deref(),
            Some("4k context · tools through text")
        );
        assert!(context_hint(&info).ends_with("reads its calls from what it writes."));
        info.checkup = Some("needs the question restated (writes calls as text)".into());
        assert_eq!(
            context_label(&info).as_deref(),
            Some(
                "4k context · tools through text · needs the question restated (writes calls \
                 as text)"
            )
        );
        assert!(
            context_hint(&info).contains(
                "Tried with a file to read, it needs the question restated (writes calls as \
                 text);"
            ),
            "{}",
            context_hint(&info)
        );
        info.tokens = None;
        assert_eq!(
            context_label(&info),
            None,
            "nothing to say without a window"
        );
    }

    #[test]
    fn times_sizes_and_durations_read_naturally() {
        assert_eq!(ago(0, 30_000), "just now");
        assert_eq!(ago(0, 5 * 60_000), "5 min ago");
        assert_eq!(ago(0, 3 * 3_600_000), "3 h ago");
        assert_eq!(ago(0, 50 * 3_600_000), "2 d ago");
        assert_eq!(ago(10_000, 0), "just now", "a clock that went back");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(1234), "1.2 s");
        assert_eq!(duration(125_000), "2 min 5 s");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1_500_000_000), "1.5 GB");
    }

    #[test]
    fn previews_are_cut_on_characters() {
        assert_eq!(preview(&json!("héllo wörld"), 5), "héllo…");
        assert_eq!(preview(&json!({"a": 1}), 100), "{\n  \"a\": 1\n}");
        assert_eq!(cut("short", 10), "short");
    }
}
