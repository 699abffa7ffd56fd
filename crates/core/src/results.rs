//! Tool results that do not fit the model's context: what the model reads is cut to
//! size (head and tail, with a marker that says how to read the rest), and the whole
//! result is kept with the turn for `read_tool_result` to page through.
//!
//! A 4k-token context holds about 16 KB; one `run_command` can print megabytes. Cutting
//! keeps the turn alive; keeping the whole lets the model still reach what it needs.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use cairn_protocol::ToolSpec;
use serde::Deserialize;
use serde_json::json;

/// What opens the result of a call that failed, as the model reads it (and as the
/// engine tells such a result apart where it words it for the user).
pub(crate) const ERROR: &str = "Error: ";

pub const READ_TOOL_RESULT: &str = "read_tool_result";

/// The most of one result kept for paging; past it the rest is dropped, and said so.
pub const MAX_KEPT_BYTES: usize = 10 * 1024 * 1024;

/// The most kept across one turn; the oldest results go first past it.
const MAX_KEPT_PER_TURN: usize = 64 * 1024 * 1024;

/// Room left in a cut result for the marker between head and tail.
const MARKER_ROOM: usize = 240;

/// The least a result is cut to, however small the window: the marker and about 400
/// bytes of head and tail, enough for the model to see what the result is and page on.
pub(crate) const MIN_RESULT_BYTES: usize = MARKER_ROOM + 400;

/// The whole results of a turn's cut calls, by `tool_call_id`.
#[derive(Debug, Default)]
pub(crate) struct KeptResults {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_id: HashMap<String, Arc<str>>,
    order: VecDeque<String>,
    bytes: usize,
}

/// A tool result, as the model reads it and as the user sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sized {
    /// At most the per-result limit, with a marker when cut.
    pub for_model: String,
    /// The whole result (up to [`MAX_KEPT_BYTES`]): what the card shows.
    pub whole: String,
}

#[derive(Deserialize)]
pub(crate) struct ReadArgs {
    tool_call_id: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl KeptResults {
    /// Fits `content` into `max_bytes` for the model; a result that does not fit is
    /// kept whole so the model can read the rest.
    pub fn fit(&self, tool_call_id: &str, content: String, max_bytes: usize) -> Sized {
        if content.len() <= max_bytes {
            return Sized {
                for_model: content.clone(),
                whole: content,
            };
        }
        let total = content.len();
        let whole = if total > MAX_KEPT_BYTES {
            let mut kept = content;
            kept.truncate(floor_boundary(&kept, MAX_KEPT_BYTES));
            kept.push_str(&format!(
                "\n[… the result was {total} bytes; only the first {MAX_KEPT_BYTES} are kept]"
            ));
            kept
        } else {
            content
        };
        let for_model = cut_middle(tool_call_id, &whole, max_bytes);
        self.keep(tool_call_id, &whole);
        Sized { for_model, whole }
    }

    /// The model's copy of a result (`content`) cut again, to `max_bytes`: from the
    /// whole when it was cut before, so markers never nest.
    pub fn refit(&self, tool_call_id: &str, content: &str, max_bytes: usize) -> String {
        let whole = self.whole(tool_call_id);
        let whole = whole.map_or_else(|| content.to_owned(), |whole| whole.to_string());
        self.fit(tool_call_id, whole, max_bytes).for_model
    }

    fn whole(&self, tool_call_id: &str) -> Option<Arc<str>> {
        let kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        kept.by_id.get(tool_call_id).cloned()
    }

    fn keep(&self, tool_call_id: &str, whole: &str) {
        let mut kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.by_id.contains_key(tool_call_id) {
            // Cut again: the whole is kept already.
            return;
        }
        kept.bytes += whole.len();
        kept.by_id.insert(tool_call_id.to_owned(), Arc::from(whole));
        kept.order.push_back(tool_call_id.to_owned());
        while kept.bytes > MAX_KEPT_PER_TURN && kept.order.len() > 1 {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            if let Some(dropped) = kept.by_id.remove(&oldest) {
                kept.bytes -= dropped.len();
            }
        }
    }

    /// Whether any result of this turn was cut: only then is `read_tool_result` shown.
    pub fn any(&self) -> bool {
        !self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .is_empty()
    }

    /// `read_tool_result`: one page of a kept result, at most `max_bytes` long.
    pub fn read(&self, args: &ReadArgs, max_bytes: usize) -> Result<String, Unreadable> {
        let id = args.tool_call_id.clone();
        let whole = {
            let kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            match kept.by_id.get(&args.tool_call_id) {
                Some(whole) => Arc::clone(whole),
                None if kept.by_id.is_empty() => return Err(Unreadable::NothingCut { id }),
                None => {
                    let mut readable: Vec<String> = kept.by_id.keys().cloned().collect();
                    readable.sort_unstable();
                    return Err(Unreadable::NoSuchId { id, readable });
                }
            }
        };
        let total = whole.len();
        let offset = args.offset.unwrap_or(0);
        if offset >= total {
            return Err(Unreadable::PastTheEnd { id, offset, total });
        }
        let page = max_bytes.saturating_sub(MARKER_ROOM).max(1);
        let limit = args.limit.unwrap_or(page).clamp(1, page);
        let start = floor_boundary(&whole, offset);
        let end = floor_boundary(&whole, start.saturating_add(limit).min(total));
        // A limit smaller than the character at `start` still moves forward.
        let end = if end == start {
            ceil_boundary(&whole, start + 1)
        } else {
            end
        };
        let mut out = format!(
            "[bytes {start}–{end} of {total} of the result of {}]\n",
            args.tool_call_id
        );
        out.push_str(&whole[start..end]);
        if end < total {
            out.push_str(&format!(
                "\n[more: {READ_TOOL_RESULT} {{\"tool_call_id\": \"{}\", \"offset\": {end}}}]",
                args.tool_call_id
            ));
        }
        Ok(out)
    }
}

/// Why `read_tool_result` has no page to give; the model reads it as the call's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unreadable {
    #[error(
        "no result of this turn was cut, so there is nothing to read for `{id}`; results of \
         earlier turns are not kept"
    )]
    NothingCut { id: String },
    #[error("no cut result has the id `{id}`; the ones that can be read are: {}", .readable.join(", "))]
    NoSuchId { id: String, readable: Vec<String> },
    #[error("offset {offset} is past the end: the result of `{id}` is {total} bytes")]
    PastTheEnd {
        id: String,
        offset: usize,
        total: usize,
    },
}

/// `whole` cut to `max_bytes`: its head, a marker naming the call and how to read
/// what was cut, and its tail (the end of a log or a listing often matters most).
fn cut_middle(tool_call_id: &str, whole: &str, max_bytes: usize) -> String {
    let total = whole.len();
    // A cap too small for the marker still shows some of the result, and runs over
    // by the marker rather than show none.
    let room = max_bytes.saturating_sub(MARKER_ROOM).max(max_bytes / 2);
    let head_end = floor_boundary(whole, room * 2 / 3);
    let tail_start = ceil_boundary(whole, total - (room - room * 2 / 3));
    let tail_start = tail_start.max(head_end);
    let omitted = tail_start - head_end;
    format!(
        "{}\n[… {omitted} of {total} bytes cut here. Read them with {READ_TOOL_RESULT} \
         {{\"tool_call_id\": \"{tool_call_id}\", \"offset\": {head_end}}}]\n{}",
        &whole[..head_end],
        &whole[tail_start..]
    )
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The size of [`read_tool_result_spec`] in tokens, worked out once.
pub(crate) fn read_tool_result_tokens() -> u64 {
    static TOKENS: std::sync::LazyLock<u64> =
        std::sync::LazyLock::new(|| crate::history::spec_tokens(&[read_tool_result_spec()]));
    *TOKENS
}

pub(crate) fn read_tool_result_spec() -> ToolSpec {
    ToolSpec {
        name: READ_TOOL_RESULT.into(),
        description: "Read a part of a tool result that was cut because it was too long. \
                      The cut result names the call and the offset to start from."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "tool_call_id": {"type": "string", "description": "The id the cut result names"},
                "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most bytes to return"}
            },
            "required": ["tool_call_id"]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(id: &str, offset: Option<usize>, limit: Option<usize>) -> ReadArgs {
        ReadArgs {
            tool_call_id: id.into(),
            offset,
            limit,
        }
    }

    #[test]
    fn a_result_that_fits_is_neither_cut_nor_kept() {
        let kept = KeptResults::default();
        let sized = kept.fit("call_1", "short".into(), 1000);
        assert_eq!(sized.for_model, "short");
        assert_eq!(sized.whole, "short");
        assert!(!kept.any());
    }

    #[test]
    fn a_long_result_keeps_head_and_tail_and_names_the_call() {
        let kept = KeptResults::default();
        let whole: String = (0..2000).map(|n| format!("line {n}\n")).collect();
        let sized = kept.fit("call_7", whole.clone(), 1000);
        assert!(sized.for_model.len() <= 1000, "{}", sized.for_model.len());
        assert!(sized.for_model.starts_with("line 0\nline 1\n"));
        assert!(sized.for_model.ends_with("line 1999\n"));
        assert!(sized.for_model.contains(
            "Read them with read_tool_result {\"tool_call_id\": \"call_7\", \"offset\": "
        ));
        assert_eq!(sized.whole, whole);
        assert!(kept.any());
    }

    #[test]
    fn paging_from_the_marker_reaches_every_byte_of_the_result() {
        let kept = KeptResults::default();
        let whole: String = (0..3000).map(|n| format!("é{n} ")).collect();
        let sized = kept.fit("call_2", whole.clone(), 800);
        let marker = sized.for_model.split("\"offset\": ").nth(1).unwrap();
        let first: usize = marker.split('}').next().unwrap().parse().unwrap();
        let mut read = whole[..first].to_owned();
        let mut offset = first;
        while offset < whole.len() {
            let page = kept.read(&args("call_2", Some(offset), None), 800).unwrap();
            assert!(
                page.len() <= 800 + 100,
                "a page fits the limit with its notes"
            );
            let body = page.split_once('\n').unwrap().1;
            let body = body.split("\n[more: ").next().unwrap();
            read.push_str(body);
            offset += body.len();
        }
        assert_eq!(read, whole);
    }

    #[test]
    fn reading_what_is_not_there_says_what_is() {
        let kept = KeptResults::default();
        let nothing = kept.read(&args("call_1", None, None), 1000).unwrap_err();
        assert_eq!(
            nothing,
            Unreadable::NothingCut {
                id: "call_1".into()
            }
        );
        assert!(
            nothing
                .to_string()
                .starts_with("no result of this turn was cut"),
            "{nothing}"
        );
        kept.fit("call_3", "x".repeat(5000), 1000);
        let wrong = kept.read(&args("call_9", None, None), 1000).unwrap_err();
        assert_eq!(
            wrong.to_string(),
            "no cut result has the id `call_9`; the ones that can be read are: call_3"
        );
        let past = kept
            .read(&args("call_3", Some(5000), None), 1000)
            .unwrap_err();
        assert_eq!(
            past,
            Unreadable::PastTheEnd {
                id: "call_3".into(),
                offset: 5000,
                total: 5000
            }
        );
        let tiny = kept.read(&args("call_3", Some(10), Some(3)), 1000).unwrap();
        assert!(tiny.starts_with("[bytes 10–13 of 5000"), "{tiny}");
    }

    #[test]
    fn a_result_cut_again_is_cut_from_its_whole_and_kept_once() {
        let kept = KeptResults::default();
        let whole: String = (0..2000).map(|n| format!("line {n}\n")).collect();
        let first = kept.fit("call_1", whole.clone(), 4000).for_model;
        let again = kept.refit("call_1", &first, 1000);
        assert!(again.len() <= 1000, "{}", again.len());
        assert_eq!(again.matches("cut here").count(), 1, "{again}");
        assert!(again.ends_with("line 1999\n"), "the tail of the whole");
        assert_eq!(kept.inner.lock().unwrap().order.len(), 1);
        // A result that fitted before is cut from itself, and kept from then on.
        let small = "y".repeat(3000);
        let cut = kept.refit("call_2", &small, 1000);
        assert!(cut.len() <= 1000 && cut.contains("call_2"), "{cut}");
        assert_eq!(kept.whole("call_2").as_deref(), Some(small.as_str()));
    }

    #[test]
    fn a_huge_result_is_kept_up_to_the_bound_and_says_so() {
        let kept = KeptResults::default();
        let sized = kept.fit("call_1", "y".repeat(MAX_KEPT_BYTES + 10), 1000);
        assert!(sized.whole.len() < MAX_KEPT_BYTES + 200);
        assert!(sized.whole.ends_with("only the first 10485760 are kept]"));
    }
}
