//! Tool calls that small models write as text instead of emitting them.
//!
//! Qwen and Hermes wrap a call in `<tool_call>{…}</tool_call>`; Llama answers with a
//! bare `{"name": …, "parameters": …}`; Mistral prefixes `[TOOL_CALLS]`; others put
//! the JSON in a ```json fence. [`TextCalls`] watches the streamed text, holds back
//! only what might be such a call, and turns it into a real call when it names a
//! tool the request offered; anything else is released as the text it was.
//!
//! [`narrates_call`] spots the other failure: prose that announces a call ("I'll use
//! read_file to …") and then makes none.

use cairn_core::repetition::Repetition;
use cairn_protocol::ToolCall;
use serde_json::Value;

const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";
/// Opens and closes a fence: ```json, or any other language whose block holds a call
/// (the 1.5B wrote its `write_file` call in a ```python fence).
const FENCE: &str = "```";
const MISTRAL: &str = "[TOOL_CALLS]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Streaming through; only a suffix that could begin a marker is held.
    Free,
    /// Inside `<tool_call>`, waiting for its end.
    Tag,
    /// Inside a fence whose block starts like JSON, waiting for its end.
    Fence,
    /// Inside a fenced block of anything else (code in an answer): streamed through
    /// to its closing fence, which opens nothing.
    Code,
    /// The answer itself looks like JSON (or follows `[TOOL_CALLS]`): held to the end.
    Whole,
}

/// The incremental detector for one streamed answer.
#[derive(Debug)]
pub struct TextCalls {
    known: Vec<String>,
    mode: Mode,
    /// Text not yet released: a possible marker prefix, or a block being collected.
    held: String,
    /// The raw text of blocks turned into calls, released again if the model also
    /// emitted native calls (then the text was just text).
    converted: String,
    calls: Vec<ToolCall>,
    released_any: bool,
    /// `[TOOL_CALLS]` when that marker started the answer, so it comes back if the
    /// rest is not a call.
    whole_prefix: &'static str,
    /// The opening line of the fence being held (```json and its newline).
    fence_open: String,
    /// Watches a block being held: one that loops is no call, and is let out as text
    /// so that the engine sees the loop and stops it (the 0.5B wrote the same two
    /// arguments into one "call" for five minutes, shown nothing all the while).
    held_loop: Repetition,
    /// How much of the held block's arguments went out in drafts.
    drafted: usize,
    /// A drafted block was let out as text after all: its slot's draft is never
    /// made, so no later block is drafted into the same slot.
    draft_lost: bool,
    /// A block just became a call: the line breaks that set it apart from the text
    /// after it are dropped (the text before it ends in its own).
    after_call: bool,
}

/// A piece of a call being written as text, shown as a native call's is: its place
/// among the answer's calls, the tool it names and its arguments written since the
/// last piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub slot: usize,
    pub name: String,
    pub arguments: String,
}

impl TextCalls {
    pub fn new(known: Vec<String>) -> Self {
        Self {
            known,
            mode: Mode::Free,
            held: String::new(),
            converted: String::new(),
            calls: Vec::new(),
            released_any: false,
            whole_prefix: "",
            fence_open: String::new(),
            held_loop: Repetition::default(),
            drafted: 0,
            draft_lost: false,
            after_call: false,
        }
    }

    /// The call being written in the block held now, once it has named an offered
    /// tool and opened its arguments: the 1.5B writes its calls as a ```json block,
    /// 40 to 60 tokens (two seconds and more on a CPU) in which nothing else shows.
    /// `None` when nothing new is written, the block is not in that shape (arguments
    /// first, several calls), or a drafted block turned out to be text.
    pub fn draft(&mut self) -> Option<Draft> {
        if self.draft_lost || matches!(self.mode, Mode::Free | Mode::Code) {
            return None;
        }
        let (name, arguments) = named_then_arguments(&self.held)?;
        // What may begin the block's closing marker waits for what follows.
        let close = if self.mode == Mode::Tag {
            TAG_CLOSE
        } else {
            FENCE
        };
        let arguments = &arguments[..arguments.len() - begun_marker_len(arguments, close)];
        if !self.knows(name) || arguments.len() <= self.drafted {
            return None;
        }
        let piece = arguments[self.drafted..].to_owned();
        self.drafted = arguments.len();
        Some(Draft {
            slot: self.calls.len(),
            name: name.to_owned(),
            arguments: piece,
        })
    }

    /// The held block is done with, as a call (`converted`) or as text.
    fn block_ended(&mut self, converted: bool) {
        if self.drafted > 0 && !converted {
            self.draft_lost = true;
        }
        self.drafted = 0;
        self.after_call = converted;
    }

    /// Takes a text delta; returns the text that can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut out = String::new();
        loop {
            match self.mode {
                Mode::Whole => {
                    self.release_if_looping(&mut out);
                    break;
                }
                Mode::Free => {
                    if self.after_call {
                        // A block cut out of the text left its blank lines behind
                        // ("Here's how:\n\n\n\nThis will return…"), and a small model
                        // later copied that hollow text as its answer.
                        let breaks =
                            self.held.len() - self.held.trim_start_matches(['\n', '\r']).len();
                        self.held.drain(..breaks);
                        if self.held.is_empty() {
                            break;
                        }
                        self.after_call = false;
                    }
                    if !self.released_any && out.is_empty() {
                        let start = self.held.trim_start();
                        if start.is_empty() {
                            break;
                        }
                        if let Some(rest) = start.strip_prefix(MISTRAL) {
                            self.held = rest.to_owned();
                            self.whole_prefix = MISTRAL;
                            self.mode = Mode::Whole;
                            break;
                        }
                        if MISTRAL.starts_with(start) {
                            break;
                        }
                        if start.starts_with('{')
                            || start.starts_with('[') && could_be_json_array(start)
                        {
                            self.mode = Mode::Whole;
                            break;
                        }
                    }
                    match [TAG_OPEN, FENCE]
                        .iter()
                        .filter_map(|marker| self.held.find(marker).map(|at| (at, *marker)))
                        .min()
                    {
                        Some((at, TAG_OPEN)) => {
                            out.push_str(&self.held[..at]);
                            self.held.drain(..at + TAG_OPEN.len());
                            self.mode = Mode::Tag;
                        }
                        Some((at, _)) => {
                            out.push_str(&self.held[..at]);
                            self.held.drain(..at);
                            match fence_kind(&self.held) {
                                // Not yet known: the opening line or the block's
                                // first character is still to come.
                                None => break,
                                Some((opening, holds_json)) => {
                                    let opening = self.held[..opening].to_owned();
                                    self.held.drain(..opening.len());
                                    if holds_json {
                                        self.fence_open = opening;
                                        self.mode = Mode::Fence;
                                    } else {
                                        out.push_str(&opening);
                                        self.mode = Mode::Code;
                                    }
                                }
                            }
                        }
                        None => {
                            let keep = partial_marker_len(&self.held);
                            let cut = self.held.len() - keep;
                            out.push_str(&self.held[..cut]);
                            self.held.drain(..cut);
                            break;
                        }
                    }
                }
                Mode::Code => match self.held.find(FENCE) {
                    Some(end) => {
                        out.push_str(&self.held[..end + FENCE.len()]);
                        self.held.drain(..end + FENCE.len());
                        self.mode = Mode::Free;
                    }
                    None => {
                        let keep = begun_marker_len(&self.held, FENCE);
                        let cut = self.held.len() - keep;
                        out.push_str(&self.held[..cut]);
                        self.held.drain(..cut);
                        break;
                    }
                },
                Mode::Tag | Mode::Fence => {
                    let (open, close) = if self.mode == Mode::Tag {
                        (TAG_OPEN.to_owned(), TAG_CLOSE)
                    } else {
                        (self.fence_open.clone(), FENCE)
                    };
                    let Some(end) = self.held.find(close) else {
                        self.release_if_looping(&mut out);
                        break;
                    };
                    let inner: String = self.held[..end].to_owned();
                    self.held.drain(..end + close.len());
                    self.mode = Mode::Free;
                    let block = format!("{open}{inner}{close}");
                    match self.parse(&inner, &block) {
                        Some(calls) => {
                            self.calls.extend(calls);
                            self.converted.push_str(&block);
                            self.block_ended(true);
                        }
                        None => {
                            out.push_str(&block);
                            self.block_ended(false);
                        }
                    }
                }
            }
        }
        if !out.is_empty() {
            self.released_any = true;
        }
        out
    }

    /// Lets the block being held out as text, its opening marker first, when it has
    /// become a loop.
    fn release_if_looping(&mut self, out: &mut String) {
        if !self.held_loop.degenerate(&self.held) {
            return;
        }
        out.push_str(match self.mode {
            Mode::Tag => TAG_OPEN,
            Mode::Fence => &self.fence_open,
            Mode::Whole => self.whole_prefix,
            Mode::Free | Mode::Code => "",
        });
        out.push_str(&self.held);
        self.held.clear();
        self.held_loop = Repetition::default();
        self.mode = Mode::Free;
        self.block_ended(false);
    }

    /// Ends the answer. `native_calls`: whether the model also emitted real calls,
    /// in which case nothing is converted. Returns the remaining text and the calls.
    pub fn finish(mut self, native_calls: bool) -> (String, Vec<ToolCall>) {
        let fence_open = std::mem::take(&mut self.fence_open);
        let opening = match self.mode {
            Mode::Tag => TAG_OPEN,
            Mode::Fence => &fence_open,
            Mode::Whole => self.whole_prefix,
            Mode::Free | Mode::Code => "",
        };
        let mut text = String::new();
        if !native_calls && !matches!(self.mode, Mode::Free | Mode::Code) {
            // Small models often stop before the closing tag or fence, and now and
            // then before the object's last brace (the 0.5B, asked to read a file).
            let body = self.held.trim_end().trim_end_matches(FENCE);
            let written = format!("{opening}{}", self.held.trim_end());
            let closed = closed(body);
            if let Some(calls) = self
                .parse(body, &written)
                .or_else(|| self.parse(closed.as_deref()?, &written))
            {
                self.calls.extend(calls);
                return (text, self.calls);
            }
        }
        if native_calls {
            text.push_str(&self.converted);
            self.calls.clear();
        }
        text.push_str(opening);
        text.push_str(&self.held);
        (text, self.calls)
    }

    /// The calls in a block of text, if it is one (or several) naming offered tools,
    /// or written as calls are (a name and its arguments), naming any: the engine then
    /// tells the model which tools there are, where leaving it as text would have let
    /// it think it had called something. `written` is the block as the model wrote it.
    fn parse(&self, text: &str, written: &str) -> Option<Vec<ToolCall>> {
        let text = after_comment_lines(text).unwrap_or(text).trim();
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        let value = values.next()?.ok()?;
        let rest = text[values.byte_offset()..].trim();
        let written = without(written, rest);
        let items = match value {
            Value::Array(items) => items,
            single => vec![single],
        };
        if items.is_empty() {
            return None;
        }
        items.iter().map(|item| self.call(item, &written)).collect()
    }

    fn knows(&self, name: &str) -> bool {
        self.known.iter().any(|known| known == name)
    }

    fn call(&self, item: &Value, written: &str) -> Option<ToolCall> {
        let item = item
            .get("function")
            .filter(|f| f.is_object())
            .unwrap_or(item);
        let name = ["name", "tool", "tool_name"]
            .iter()
            .find_map(|key| item.get(key)?.as_str())?;
        let arguments = ["arguments", "parameters", "args", "input"]
            .iter()
            .find_map(|key| item.get(key));
        // A tool's name with more after it (`read_file draft.txt`, as the 0.5B wrote)
        // names that tool.
        let name = match name.split_once(char::is_whitespace) {
            Some((first, _)) if self.knows(first) && !self.knows(name) => first,
            _ => name,
        };
        // A name no tool has is a call only in a call's shape: with its arguments
        // as an object. `{"name": "Ada"}` stays the text it is.
        let known = self.knows(name);
        if !known && !arguments.is_some_and(Value::is_object) {
            return None;
        }
        let arguments = match arguments {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(Value::String(text)) => text.clone(),
            Some(object @ Value::Object(_)) => object.to_string(),
            Some(_) => return None,
        };
        Some(ToolCall {
            id: String::new(),
            name: name.to_owned(),
            arguments,
            written: Some(written.to_owned()),
        })
    }
}

/// The tool a call object names and its arguments so far, when the object opens with
/// its name and then its arguments (`{"name": "read_file", "arguments": {"pa`), as
/// Qwen's and Hermes' calls do.
fn named_then_arguments(held: &str) -> Option<(&str, &str)> {
    let rest = held.trim_start().strip_prefix('{')?;
    let rest = rest.trim_start().strip_prefix("\"name\"")?;
    let rest = rest.trim_start().strip_prefix(':')?;
    let rest = rest.trim_start().strip_prefix('"')?;
    let (name, rest) = rest.split_once('"')?;
    let rest = rest.trim_start().strip_prefix(',')?.trim_start();
    let rest = ["\"arguments\"", "\"parameters\""]
        .iter()
        .find_map(|key| rest.strip_prefix(key))?;
    let arguments = rest.trim_start().strip_prefix(':')?.trim_start();
    (!arguments.is_empty()).then_some((name, arguments))
}

/// `written` without `rest`, what followed the block's first value: only the calls
/// that run are written back. Shown its read and its write as one block, with only the
/// read run, the 1.5B wrote both again, and the write was never made (task benchmark,
/// README "Small models").
fn without(written: &str, rest: &str) -> String {
    match written.rfind(rest).filter(|_| !rest.is_empty()) {
        Some(at) => format!(
            "{}{}",
            written[..at].trim_end(),
            &written[at + rest.len()..]
        ),
        None => written.to_owned(),
    }
}

/// `json` with the braces and brackets it left open closed, when it stops between two
/// values (not inside a string, not after a key or a comma); `None` when nothing is
/// open or it cannot be closed so.
fn closed(json: &str) -> Option<String> {
    let mut open = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' => {
                open.pop()?;
            }
            _ => {}
        }
    }
    let last = json.trim_end().chars().last()?;
    if in_string || open.is_empty() || matches!(last, ':' | ',') {
        return None;
    }
    Some(
        open.iter()
            .rev()
            .fold(json.to_owned(), |mut closed, closer| {
                closed.push(*closer);
                closed
            }),
    )
}

/// `[` starts a JSON array of calls only if what follows can be one (`[{`, `[ {`).
fn could_be_json_array(text: &str) -> bool {
    let rest = text[1..].trim_start();
    rest.is_empty() || rest.starts_with('{')
}

/// How many bytes at the end of `text` could be the start of a marker.
/// What a fence at the start of `text` opens: the length of its opening line (the
/// fence, its language, the newline) and whether its block starts like JSON (`{`, or
/// `[` then `{`) after any comment lines, or a fence named `json`. `None` until that
/// can be told.
fn fence_kind(text: &str) -> Option<(usize, bool)> {
    let newline = text.find('\n')?;
    let language = text[FENCE.len()..newline].trim();
    let opening = newline + 1;
    if language == "json" {
        return Some((opening, true));
    }
    let block = after_comment_lines(&text[opening..])?.trim_start();
    let first = block.chars().next()?;
    let holds_json = match first {
        '{' => true,
        '[' => {
            let rest = block[1..].trim_start();
            match rest.chars().next() {
                None => return None,
                Some(next) => next == '{',
            }
        }
        _ => false,
    };
    Some((opening, holds_json))
}

/// `block` after the whole comment lines (`#`, `//`) that open it, at most
/// [`MAX_HEADING_COMMENTS`] of them: the 1.5B headed a call with `# tools` in a
/// ```python fence. `None` while such a line is still being written. Only a few are
/// skipped, so a block of nothing but comments (a runaway's `# ` over and over)
/// streams as the code it is instead of being held.
fn after_comment_lines(block: &str) -> Option<&str> {
    let mut rest = block;
    for _ in 0..MAX_HEADING_COMMENTS {
        let line = rest.trim_start();
        if !(line.starts_with('#') || line.starts_with("//")) {
            return Some(rest);
        }
        rest = &line[line.find('\n')? + 1..];
    }
    Some(rest)
}

const MAX_HEADING_COMMENTS: usize = 2;

fn partial_marker_len(text: &str) -> usize {
    [TAG_OPEN, FENCE]
        .iter()
        .map(|marker| begun_marker_len(text, marker))
        .max()
        .unwrap_or(0)
}

/// How many of `text`'s last bytes could be the start of `marker` (never all of it).
fn begun_marker_len(text: &str, marker: &str) -> usize {
    (1..marker.len())
        .rev()
        .find(|&n| text.ends_with(&marker[..n]))
        .unwrap_or(0)
}

/// Whether an answer with no calls announces one it did not make.
///
/// It has to say it is about to act ("I'll", "let me", …, followed closely by a verb
/// of acting or a tool's name) and mention a tool, and not be asking the user a
/// question. A conversational answer that merely talks about tools stays an answer.
pub fn narrates_call(text: &str, known: &[String]) -> bool {
    let lower = text.to_lowercase();
    if lower.trim_end().ends_with('?') {
        return false;
    }
    let mentions_tool = known
        .iter()
        .any(|name| lower.contains(&name.to_lowercase()))
        || lower.contains(" tool");
    if !mentions_tool {
        return false;
    }
    const INTENT: [&str; 7] = [
        "i'll ",
        "i will ",
        "let me ",
        "i'm going to ",
        "i am going to ",
        "i need to ",
        "i should ",
    ];
    const ACT: [&str; 14] = [
        "call", "use", "run", "invoke", "execute", "read", "list", "write", "search", "fetch",
        "check", "look", "open", "create",
    ];
    INTENT.iter().any(|intent| {
        lower.match_indices(intent).any(|(at, _)| {
            let window: String = lower[at + intent.len()..].chars().take(40).collect();
            ACT.iter().any(|verb| {
                window
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| word == *verb)
            }) || known
                .iter()
                .any(|name| window.contains(&name.to_lowercase()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        ["read_file", "list_dir", "get_weather"]
            .map(String::from)
            .to_vec()
    }

    /// Streams `text` in pieces of `size` bytes (on char boundaries) and finishes.
    fn run(text: &str, size: usize) -> (String, Vec<ToolCall>) {
        let mut calls = TextCalls::new(known());
        let mut shown = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = size.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            shown.push_str(&calls.push(&rest[..cut]));
            rest = &rest[cut..];
        }
        let (tail, found) = calls.finish(false);
        shown.push_str(&tail);
        (shown, found)
    }

    fn check(text: &str, expect_text: &str, expect: &[(&str, &str)]) {
        for size in [1, 3, 7, 1000] {
            let (shown, calls) = run(text, size);
            assert_eq!(shown, expect_text, "{text:?} in {size}-byte pieces");
            let got: Vec<_> = calls
                .iter()
                .map(|c| (c.name.as_str(), c.arguments.as_str()))
                .collect();
            assert_eq!(got, expect, "{text:?} in {size}-byte pieces");
        }
    }

    // The model outputs below follow each family's documented tool-call format as
    // their chat templates render it.

    #[test]
    fn qwen_and_hermes_tool_call_tags() {
        check(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>",
            "",
            &[("get_weather", r#"{"location":"Paris"}"#)],
        );
        check(
            "I'll check the file.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n</tool_call>",
            "I'll check the file.\n",
            &[
                ("read_file", r#"{"path":"a.txt"}"#),
                ("list_dir", r#"{"path":"."}"#),
            ],
        );
        // Stopped before the closing tag.
        check(
            "<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \"src\"}}",
            "",
            &[("list_dir", r#"{"path":"src"}"#)],
        );
    }

    #[test]
    fn a_call_that_stops_before_its_last_brace_is_closed() {
        // The 0.5B's own words, with a tool it has and with one it invented.
        check(
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"draft.txt\"}",
            "",
            &[("read_file", r#"{"path":"draft.txt"}"#)],
        );
        check(
            "{\"name\": \"plan.txt\", \"arguments\": {\"file_path\": \"work\"}",
            "",
            &[("plan.txt", r#"{"file_path":"work"}"#)],
        );
        // Cut inside a string, or after a key: not a call, the text it was.
        for cut in [
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"dra",
            "{\"name\": \"read_file\", \"arguments\": {\"path\":",
        ] {
            check(cut, cut, &[]);
        }
        assert_eq!(
            closed("{\"a\": [1, {\"b\": \"}\"}"),
            Some("{\"a\": [1, {\"b\": \"}\"}]}".into())
        );
        assert_eq!(closed("{\"a\": 1}"), None, "nothing open");
        assert_eq!(closed("{\"a\": 1}}"), None, "more closed than opened");
    }

    #[test]
    fn llama_bare_json_and_mistral_prefix() {
        check(
            "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Tokyo\"}}",
            "",
            &[("get_weather", r#"{"location":"Tokyo"}"#)],
        );
        check(
            "[TOOL_CALLS] [{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}]",
            "",
            &[("read_file", r#"{"path":"x"}"#)],
        );
        check(
            "{\"function\": {\"name\": \"list_dir\", \"arguments\": \"{\\\"path\\\": \\\".\\\"}\"}}",
            "",
            &[("list_dir", r#"{"path": "."}"#)],
        );
    }

    #[test]
    fn fenced_json_after_prose() {
        check(
            "Sure:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}\n```",
            "Sure:\n",
            &[("read_file", r#"{"path":"README.md"}"#)],
        );
        // The block's own blank lines go with it: the text reads as one paragraph
        // break, not three.
        check(
            "Here's how:\n\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.md\"}}\n```\n\nThis will return it.\n\nThen more.",
            "Here's how:\n\nThis will return it.\n\nThen more.",
            &[("read_file", r#"{"path":"a.md"}"#)],
        );
    }

    /// Outputs users reported from real small models, quoted from public issues.
    #[test]
    fn outputs_reported_from_real_small_models() {
        let known: Vec<String> = ["calculator", "getTimeInformation", "LLM_Tool_RAG"]
            .map(String::from)
            .to_vec();
        let cases = [
            // qwen2.5-coder:14b through Ollama: bare JSON in content (ollama/ollama#12174).
            (
                r#"{"name": "calculator", "arguments": {"expr": "17 * 23"}}"#,
                "calculator",
                r#"{"expr":"17 * 23"}"#,
            ),
            // qwen2:7b: the Hermes tag with empty arguments (sgomez/ollama-ai-provider#26).
            (
                "<tool_call>\n{\"name\": \"getTimeInformation\", \"arguments\": {}}\n</tool_call>",
                "getTimeInformation",
                "{}",
            ),
            // qwen3:32b: bare JSON with prose arguments (ollama/ollama#11185).
            (
                r#"{"name": "LLM_Tool_RAG", "arguments": {"term": "accidents, tribunal de Versailles", "vector": "accidents tribunal Versailles jugements"}}"#,
                "LLM_Tool_RAG",
                r#"{"term":"accidents, tribunal de Versailles","vector":"accidents tribunal Versailles jugements"}"#,
            ),
        ];
        for (output, name, arguments) in cases {
            for size in [1, 5, 64] {
                let mut detector = TextCalls::new(known.clone());
                let mut shown = String::new();
                for chunk in output.as_bytes().chunks(size) {
                    shown.push_str(&detector.push(std::str::from_utf8(chunk).unwrap()));
                }
                let (tail, calls) = detector.finish(false);
                shown.push_str(&tail);
                assert_eq!(shown, "", "{output}");
                assert_eq!(calls.len(), 1, "{output}");
                assert_eq!(
                    (calls[0].name.as_str(), calls[0].arguments.as_str()),
                    (name, arguments)
                );
            }
        }
    }

    #[test]
    fn text_that_is_not_a_call_is_released_unchanged() {
        for text in [
            "Plain answer with no calls.",
            "Compare a < b and <tool> tags.",
            "Here is JSON:\n```json\n{\"name\": \"Alice\", \"age\": 3}\n```\nDone.",
            "{\"name\": \"delete_all\", \"arguments\": \"everything\"}",
            "{\"status\": \"ok\"}",
            "[1, 2, 3]",
            "[link](http://x) text",
            "<tool_call>{\"name\": \"unknown_tool\"}</tool_call> and more",
            "```rust\nfn main() {}\n```",
            "```python\n# greet\nprint(\"hi\")\n```",
            "```js\n// a config\n{\"port\": 8080}\n```",
        ] {
            check(text, text, &[]);
        }
    }

    /// Seen from Qwen2.5-Coder-0.5B in the task benchmark: a call in a call's shape
    /// naming no tool. As a call, the engine answers with the tools there are.
    #[test]
    fn a_call_naming_no_tool_is_still_a_call() {
        check(
            "```json\n{\"name\": \"read_summary.txt\", \"arguments\": {\"path\": \"summary.txt\"}}\n```",
            "",
            &[("read_summary.txt", r#"{"path":"summary.txt"}"#)],
        );
        check(
            "{\"name\": \"delete_all\", \"arguments\": {}}",
            "",
            &[("delete_all", "{}")],
        );
    }

    #[test]
    fn a_call_in_a_fence_of_another_language_is_a_call() {
        // As the 1.5B wrote a file.
        check(
            // The arguments in key order: the workspace's serde_json may keep the order
            // written, the crate alone sorts.
            "```python\n{\n    \"name\": \"write_file\",\n    \"arguments\": {\"content\": \
             \"print(1)\", \"path\": \"hi.py\"}\n}\n```",
            "",
            &[("write_file", r#"{"content":"print(1)","path":"hi.py"}"#)],
        );
        // As the 1.5B wrote one later, headed by a comment.
        check(
            "```python\n# tools\n{\"name\": \"write_file\", \"arguments\": {\"content\": \
             \"Hi\", \"path\": \"hi.py\"}}\n```",
            "",
            &[("write_file", r#"{"content":"Hi","path":"hi.py"}"#)],
        );
        check(
            "Here:\n```\n[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]\n```",
            "Here:\n",
            &[("read_file", r#"{"path":"a"}"#)],
        );
    }

    #[test]
    fn code_in_an_answer_streams_and_its_closing_fence_opens_nothing() {
        let answer = "Run this:\n```python\nprint({'a': 1})\n```\n{\"name\": \"read_file\"} is how it \
                      looks.\n```sh\nls\n```";
        check(answer, answer, &[]);
        // Streamed as it comes, not held to the end of the block.
        let mut calls = TextCalls::new(known());
        let shown = calls.push("```python\nprint(1)\nprint(2)\n");
        assert_eq!(shown, "```python\nprint(1)\nprint(2)\n");
    }

    #[test]
    fn a_tool_name_with_words_after_it_names_the_tool() {
        check(
            r#"{"name": "read_file draft.txt", "arguments": {"path": "draft.txt"}}"#,
            "",
            &[("read_file", r#"{"path":"draft.txt"}"#)],
        );
        check(
            r#"{"name": "say hello", "arguments": {}}"#,
            "",
            &[("say hello", "{}")],
        );
    }

    #[test]
    fn a_call_keeps_the_text_it_was_written_as() {
        let block = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```";
        let (_, calls) = run(&format!("Sure:\n{block}\nThat reads it."), 4);
        assert_eq!(calls[0].written.as_deref(), Some(block));
        let bare = "{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}";
        let (_, calls) = run(bare, 4);
        assert_eq!(calls[0].written.as_deref(), Some(bare));
        // Two calls in one block, one after the other: only the first runs, and only
        // it is written back.
        let (_, calls) = run(
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n\
             {\"name\": \"write_file\", \"arguments\": {\"path\": \"b\", \"content\": \"x\"}}\n```",
            4,
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].written.as_deref(), Some(block));
        // Stopped before its closing tag: what there was.
        let (_, calls) = run("<tool_call>{\"name\": \"list_dir\", \"arguments\": {}}", 4);
        assert_eq!(
            calls[0].written.as_deref(),
            Some("<tool_call>{\"name\": \"list_dir\", \"arguments\": {}}")
        );
    }

    #[test]
    fn with_native_calls_nothing_is_converted() {
        let mut calls = TextCalls::new(known());
        let shown = calls
            .push("Calling <tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>");
        let (tail, found) = calls.finish(true);
        assert_eq!(
            format!("{shown}{tail}"),
            "Calling <tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>"
        );
        assert!(found.is_empty());
    }

    #[test]
    fn a_held_block_that_loops_is_let_out_as_text() {
        for opening in ["", "```json\n", "<tool_call>"] {
            let mut calls = TextCalls::new(known());
            let mut shown = calls.push(&format!(
                "{opening}{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"a.txt\""
            ));
            assert_eq!(shown, "", "held while it may be a call");
            for _ in 0..100 {
                shown.push_str(&calls.push(", \"content\": \"summary.txt\", \"path\": \"a.txt\""));
            }
            assert!(
                shown.starts_with(&format!("{opening}{{\"name\"")),
                "{shown}"
            );
            assert!(shown.len() > 1000, "let out as it loops: {}", shown.len());
            let (rest, found) = calls.finish(false);
            assert!(found.is_empty(), "{found:?}");
            assert!(rest.len() < 300, "only what came after: {rest}");
        }
    }

    #[test]
    fn ordinary_text_streams_without_delay() {
        let mut calls = TextCalls::new(known());
        assert_eq!(calls.push("Hello"), "Hello");
        assert_eq!(calls.push(" wor"), " wor");
        // Only a possible marker start is held back, and released once it is not one.
        assert_eq!(calls.push("ld <tool"), "ld ");
        assert_eq!(calls.push("s>"), "<tools>");
        // A fenced block of comments alone (a runaway's `# ` again and again) streams
        // once it has more than a call's heading.
        let mut calls = TextCalls::new(known());
        assert_eq!(calls.push("```\n# \n# \n"), "");
        assert_eq!(calls.push("# \n"), "```\n# \n# \n# \n");
        assert_eq!(calls.push("# \n"), "# \n");
    }

    /// Streams `text` a byte at a time (on char boundaries), gathering the drafts.
    fn drafts_of(calls: &mut TextCalls, text: &str) -> Vec<Draft> {
        let mut drafts: Vec<Draft> = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let next = (at + 1..=text.len())
                .find(|&end| text.is_char_boundary(end))
                .unwrap_or(text.len());
            calls.push(&text[at..next]);
            at = next;
            if let Some(draft) = calls.draft() {
                match drafts.last_mut() {
                    Some(last) if last.slot == draft.slot => {
                        assert_eq!(last.name, draft.name);
                        last.arguments.push_str(&draft.arguments);
                    }
                    _ => drafts.push(draft),
                }
            }
        }
        drafts
    }

    #[test]
    fn a_call_written_as_text_is_drafted_while_it_is_written() {
        let mut calls = TextCalls::new(known());
        let text = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n\
                    <tool_call>\n{\"name\": \"list_dir\", \"parameters\": {}}\n</tool_call>";
        let drafts = drafts_of(&mut calls, text);
        // Each block's arguments as written so far: the object's own closing brace
        // too, since nothing tells it from the arguments' until the block ends.
        assert_eq!(
            drafts,
            [
                Draft {
                    slot: 0,
                    name: "read_file".into(),
                    arguments: "{\"path\": \"a.txt\"}}\n".into(),
                },
                Draft {
                    slot: 1,
                    name: "list_dir".into(),
                    arguments: "{}}\n".into(),
                },
            ]
        );
        let (_, made) = calls.finish(false);
        assert_eq!(
            made.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["read_file", "list_dir"],
            "the drafted calls are the calls made, in the drafts' slots"
        );
    }

    #[test]
    fn only_a_named_offered_call_is_drafted_and_a_draft_let_out_as_text_ends_drafting() {
        for undrafted in [
            // Arguments first, a tool not offered, JSON that is no call.
            "```json\n{\"arguments\": {\"path\": \"a\"}, \"name\": \"read_file\"}\n```",
            "```json\n{\"name\": \"delete_all\", \"arguments\": {\"x\": 1}}\n```",
            "```json\n{\"city\": \"Paris\", \"arguments\": 1}\n```",
        ] {
            let mut calls = TextCalls::new(known());
            assert_eq!(drafts_of(&mut calls, undrafted), [], "{undrafted}");
        }
        let mut calls = TextCalls::new(known());
        // Drafted, then not a call (its arguments a number): the draft is never
        // made, so the next block is not drafted into its slot.
        let text = "```json\n{\"name\": \"read_file\", \"arguments\": 5}\n```\n\
                    ```json\n{\"name\": \"list_dir\", \"arguments\": {}}\n```";
        let drafts = drafts_of(&mut calls, text);
        assert_eq!(
            drafts.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["read_file"]
        );
        let (_, made) = calls.finish(false);
        assert_eq!(made.len(), 1, "the second block is still a call");
    }

    #[test]
    fn narration_is_told_from_conversation() {
        let known = known();
        for narrated in [
            "I'll use the read_file tool to look at main.rs.",
            "Let me call list_dir on the project root.",
            "To answer, I will read_file README.md first.",
            "I'm going to check the weather with get_weather for Paris.",
        ] {
            assert!(narrates_call(narrated, &known), "{narrated}");
        }
        for conversational in [
            "Hello! How can I help you today?",
            "I can read files with read_file and list folders with list_dir.",
            "Let me know if you want me to use read_file?",
            "The weather in Paris is sunny.",
            "I'll be happy to help with your essay.",
        ] {
            assert!(!narrates_call(conversational, &known), "{conversational}");
        }
    }
}
