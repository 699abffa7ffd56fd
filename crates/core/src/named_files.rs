//! The files a tiny model's user names, read with the request.
//!
//! request words → the ones that look like a file (`summary.txt`, `src/main.rs`) →
//! those the workspace holds, small and text, that the gate lets its file reader
//! read without asking → one block opening the request, as the thread's context
//! opens its first message.
//!
//! A tiny model asked about `summary.txt` first has to call a reader on it, and the
//! 0.5B named the folder, or a file it made up, far more often than the one it was
//! asked about; with the file in front of it, what is left is the answer or the
//! change (README "Small models"). A request that speaks of files and names none
//! ("which file mentions an animal?") in a folder of a few small text files is read
//! with all of them: the 0.5B, left to find it, read a file it made up
//! (`work/animal.txt`) and named one at random. In a larger folder the file is the
//! model's to find.

use std::fmt::Write as _;

use cairn_protocol::ChatMessage;
use serde_json::json;

use crate::gate::{self, GateRequest};
use crate::prompt::{CONTEXT_CLOSE, CONTEXT_OPEN, split_context};
use crate::toolbelt::Toolbelt;
use crate::workspace::Workspace;

/// The most files read with one request: a request naming more is a larger job than
/// one read can shortcut.
const MAX_FILES: usize = 3;

/// The largest file read with the request, in bytes; a larger one is read by the
/// model's own call, whose result is cut to the room it has.
const MAX_FILE_BYTES: u64 = 4096;

/// The block that opens `request` with the files it names, and their paths, or
/// `None` when it names none that can be read this way: in `workspace`, by a file
/// reader among `tools` (the level's) that the gate lets run unasked (`runs`).
fn block(
    workspace: &Workspace,
    tools: &Toolbelt,
    runs: &dyn Fn(&GateRequest<'_>) -> bool,
    request: &str,
) -> Option<(String, Vec<String>)> {
    let (reader, argument) = tools
        .tools()
        .iter()
        .find_map(|tool| Some((tool, tool.reads_file_at()?)))?;
    let may_read =
        |path: &str| gate::judge(workspace, reader.as_ref(), &json!({ argument: path }), runs);
    let read = |path: String| {
        if !may_read(&path) {
            return None;
        }
        let bytes = workspace.read_at_most(&path, MAX_FILE_BYTES).ok()?;
        Some((path, text(bytes)?))
    };
    let names: Vec<String> = named(request).map(str::to_owned).collect();
    let files: Vec<(String, String)> = if !names.is_empty() {
        names.into_iter().filter_map(read).take(MAX_FILES).collect()
    } else if speaks_of_files(request) {
        // All of a few, or none: a file left out could be the one asked about.
        small_folder(workspace)?
            .into_iter()
            .map(read)
            .collect::<Option<_>>()?
    } else {
        return None;
    };
    if files.is_empty() {
        return None;
    }
    tracing::info!(
        files = ?files.iter().map(|(path, _)| path).collect::<Vec<_>>(),
        "read the files the request names for a tiny model"
    );
    Some((
        render(&files),
        files.into_iter().map(|(path, _)| path).collect(),
    ))
}

/// The words of `request` that look like a file's path, each once, in order.
pub(crate) fn named(request: &str) -> impl Iterator<Item = &str> {
    let mut seen: Vec<&str> = Vec::new();
    request
        .split_whitespace()
        .map(|word| {
            // A sentence's full stop or a question mark ends the word, not the name;
            // a leading dot stays (`.env`).
            word.trim_start_matches(|c: char| QUOTES.contains(c))
                .trim_end_matches(|c: char| QUOTES.contains(c) || ".,;:!?".contains(c))
        })
        .filter(|word| looks_like_file(word))
        .filter(move |word| {
            let new = !seen.contains(word);
            seen.push(word);
            new
        })
}

/// Whether `request` speaks of a file or files.
fn speaks_of_files(request: &str) -> bool {
    request
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| word.eq_ignore_ascii_case("file") || word.eq_ignore_ascii_case("files"))
}

/// The workspace's files, when it holds a few (at most [`MAX_FILES`], in any folder).
fn small_folder(workspace: &Workspace) -> Option<Vec<String>> {
    match workspace.files("", MAX_FILES) {
        Ok((files, false)) if !files.is_empty() => Some(files),
        _ => None,
    }
}

/// What may wrap a file's name in a sentence.
const QUOTES: &str = "`\"'()[]<>*";

/// A name with an extension (`notes.md`, `.env`) or a path with a folder in it.
fn looks_like_file(word: &str) -> bool {
    if word.contains("://") || word.chars().any(char::is_whitespace) {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    let extension = name.rsplit_once('.').map(|(_, extension)| extension);
    let has_extension = extension.is_some_and(|extension| {
        (1..=10).contains(&extension.len())
            && extension.chars().all(|c| c.is_ascii_alphanumeric())
            && !extension.chars().all(|c| c.is_ascii_digit())
    });
    has_extension || (word.contains('/') && !name.is_empty())
}

/// The file's text, when it is text.
fn text(bytes: Vec<u8>) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The block: each file under its name, fenced so that nothing in it closes the fence.
fn render(files: &[(String, String)]) -> String {
    let mut block = String::from(CONTEXT_OPEN);
    for (path, text) in files {
        let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
        let text = text.trim_end_matches('\n');
        let _ = writeln!(block, "`{path}` holds:\n{fence}\n{text}\n{fence}");
    }
    block.push_str(CONTEXT_CLOSE);
    block
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Opens the last user message of `history` (the request the turn answers) with the
/// files it names, if it names any that can be read this way (see [`block`]), and
/// returns their paths. The thread's own context still goes first where that message
/// is also the thread's first (see `Level::sent_history`).
pub(crate) fn open_request(
    history: &mut [ChatMessage],
    workspace: &Workspace,
    tools: &Toolbelt,
    runs: &dyn Fn(&GateRequest<'_>) -> bool,
) -> Vec<String> {
    let Some(content) = history.iter_mut().rev().find_map(|message| match message {
        ChatMessage::User { content } => Some(content),
        _ => None,
    }) else {
        return Vec::new();
    };
    let Some((block, read)) = block(workspace, tools, runs, split_context(content).1) else {
        return Vec::new();
    };
    content.insert_str(0, &block);
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_of_files_are_read_off_a_sentence() {
        let names: Vec<&str> = named(
            "Read `draft.txt` and write its code word into notes.md. Then (see src/lib.rs), \
             \"people.csv\"? and .env, not 3.5 or https://example.org/a.html, draft.txt again",
        )
        .collect();
        assert_eq!(
            names,
            ["draft.txt", "notes.md", "src/lib.rs", "people.csv", ".env"]
        );
    }

    #[test]
    fn words_that_are_not_files_are_not_named() {
        for word in [
            "",
            ".",
            "...",
            "v1.2",
            "3.14",
            "a/",
            "hello",
            "https://x.org/a.html",
        ] {
            assert_eq!(named(word).next(), None, "{word}");
        }
    }

    #[test]
    fn a_file_is_fenced_beyond_its_own_backticks() {
        let block = render(&[("a.md".to_owned(), "```rust\nfn main() {}\n```\n".to_owned())]);
        assert_eq!(
            block,
            format!(
                "{CONTEXT_OPEN}`a.md` holds:\n````\n```rust\nfn main() {{}}\n```\n````\n{CONTEXT_CLOSE}"
            )
        );
    }

    #[test]
    fn only_text_is_read() {
        assert_eq!(text(b"plain\n".to_vec()).as_deref(), Some("plain\n"));
        assert_eq!(text(b"bin\0ary".to_vec()), None);
        assert_eq!(text(vec![0xff, 0xfe]), None);
    }
}
