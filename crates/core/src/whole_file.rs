//! A tiny model's change to one file, asked of it as that file's whole new text.
//!
//! request (a change, naming one file to create, or one file it was given whole) →
//! the model offered no tools and told to answer with the file's text in a fenced
//! block → that block runs as the workspace writer's call (gate, approval, card and
//! Restore as any call) → its result ends the level.
//!
//! Offered tools, the 0.5B asked for `hi.py` that prints a greeting ran `echo` with
//! the greeting, or wrote the greeting itself into a file named after the folder;
//! asked to change a word, it replaced the file with the word. Asked for the file's
//! text, it wrote the script right in 12 of 12 tries and the changed note in 8 of 8
//! (README "Small models"): code in a fence is what a coder model writes best.

use cairn_protocol::{ChatMessage, ToolCall};
use serde_json::json;

use crate::gate::{self, GateRequest};
use crate::named_files;
use crate::prompt;
use crate::toolbelt::Toolbelt;
use crate::workspace::{Workspace, WorkspaceError};

/// The file a level's model answers with, and the writer its answer runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WholeFile {
    /// The file, as the request names it.
    pub path: String,
    writer: String,
    path_arg: &'static str,
    content_arg: &'static str,
}

impl WholeFile {
    /// The whole-file change `history`'s request asks for, when it asks for one: a
    /// change (not a question) naming exactly one file the workspace does not hold, or
    /// naming only one, which was read with the request (`read`). `None` as well when
    /// no tool among `tools` writes whole files, or the gate would block its write
    /// (`blocked`).
    pub fn for_request(
        workspace: &Workspace,
        tools: &Toolbelt,
        history: &[ChatMessage],
        read: &[String],
        blocked: &dyn Fn(&GateRequest<'_>) -> bool,
    ) -> Option<Self> {
        let path = target(workspace, prompt::last_request(history)?, read)?;
        let (writer, (path_arg, content_arg)) = tools
            .tools()
            .iter()
            .find_map(|tool| Some((tool, tool.writes_file_at()?)))?;
        let args = json!({ path_arg: path, content_arg: "" });
        if gate::judge(workspace, writer.as_ref(), &args, blocked) {
            return None;
        }
        Some(Self {
            path,
            writer: writer.name().to_owned(),
            path_arg,
            content_arg,
        })
    }

    /// The level's system message: who it is, and the one thing to answer with.
    pub fn system_prompt(&self) -> String {
        format!(
            "{}Reply with the whole new text of `{}` in one fenced code block: it is saved \
             as that file.\n",
            prompt::IDENTITY,
            self.path
        )
    }

    /// The writer's call that saves the one fenced block of `answer` as the file,
    /// with `id`; `None` when the answer holds no block, or more than one.
    pub fn call(&self, answer: &str, id: String) -> Option<ToolCall> {
        let text = only_block(answer)?;
        let text = match text.split_once('\n') {
            Some((first, rest)) if !rest.trim().is_empty() && self.labels(first) => rest,
            _ => text,
        };
        Some(ToolCall {
            id,
            name: self.writer.clone(),
            arguments: json!({ self.path_arg: self.path, self.content_arg: text }).to_string(),
            written: None,
        })
    }

    /// What the user is told once the writer's call ended with `result`: what it did
    /// (`Created `hi.py` (22 bytes).`, a failed check under it), or why the file was
    /// not written, without the words meant for the model ("Do not retry it; …").
    pub fn answer(&self, result: &str, is_error: bool) -> String {
        let result = result.trim();
        match result.strip_prefix(crate::results::ERROR) {
            Some(why) if is_error => {
                let why = why.split_once(". ").map_or(why, |(first, _)| first);
                format!(
                    "`{}` was not written ({}).",
                    self.path,
                    why.trim_end_matches('.')
                )
            }
            _ => {
                let mut letters = result.chars();
                let first = letters.next().map(|c| c.to_uppercase().to_string());
                let end = if result.ends_with(['.', '!', '?']) {
                    ""
                } else {
                    "."
                };
                format!("{}{}{end}", first.unwrap_or_default(), letters.as_str())
            }
        }
    }

    /// Whether `line`, first in the block, labels it rather than being its text: the
    /// file's name (`hi.py`, `# hi.py`), or a language's put on a line of its own
    /// (the 0.5B opened one script with "```\npython\n", which then failed to run).
    fn labels(&self, line: &str) -> bool {
        let line = line.trim();
        line.trim_start_matches("# ") == self.path
            || LANGUAGES
                .iter()
                .any(|language| line.eq_ignore_ascii_case(language))
    }
}

/// The names a fence's language goes by, for the files a small model is asked for.
const LANGUAGES: [&str; 22] = [
    "python",
    "py",
    "markdown",
    "md",
    "text",
    "txt",
    "plaintext",
    "javascript",
    "js",
    "typescript",
    "ts",
    "rust",
    "bash",
    "sh",
    "shell",
    "json",
    "yaml",
    "toml",
    "html",
    "css",
    "csv",
    "go",
];

/// The file `request` asks to change as a whole: see [`WholeFile::for_request`].
fn target(workspace: &Workspace, request: &str, read: &[String]) -> Option<String> {
    // Only a request that asks nothing: a file written for a question is lost work.
    if prompt::asks_anything(request) || acts_on_files(request) {
        return None;
    }
    let names: Vec<&str> = named_files::named(request).collect();
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| {
            matches!(
                workspace.read_at_most(name, 0),
                Err(WorkspaceError::NotFound { .. })
            )
        })
        .collect();
    match (missing.as_slice(), names.as_slice()) {
        ([new], _) => Some((*new).to_owned()),
        ([], [given]) if read.iter().any(|path| path == given) => Some((*given).to_owned()),
        _ => None,
    }
}

/// Whether `request` asks for something done to files other than writing their text
/// (deleting, renaming, running them): asked for its text whole, a model would
/// rewrite the file instead.
fn acts_on_files(request: &str) -> bool {
    const ACTS: [&str; 8] = [
        "delete", "remove", "rename", "move", "copy", "execute", "install", "chmod",
    ];
    let mut words = request
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase);
    let first = words
        .by_ref()
        .find(|word| !["please", "now", "then", "also"].contains(&word.as_str()));
    // "Run hi.py.", but not "a script that prints Hi when I run it".
    first.as_deref() == Some("run")
        || first
            .into_iter()
            .chain(words)
            .any(|word| ACTS.contains(&word.as_str()))
}

/// The text of the one fenced code block in `answer` (its closing line break kept);
/// `None` for a block never closed (an answer cut short).
fn only_block(answer: &str) -> Option<&str> {
    let [_, block, _] = answer.split("```").collect::<Vec<_>>()[..] else {
        return None;
    };
    // The opening line names the language, or nothing.
    let (_, text) = block.split_once('\n')?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(path: &str) -> WholeFile {
        WholeFile {
            path: path.to_owned(),
            writer: "write_file".to_owned(),
            path_arg: "path",
            content_arg: "content",
        }
    }

    fn folder(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        let workspace = Workspace::open(dir.path()).expect("workspace");
        (dir, workspace)
    }

    #[test]
    fn a_change_naming_one_new_file_or_only_a_file_it_was_given_is_a_whole_file() {
        let (_dir, workspace) = folder(&[("notes.txt", "The code word is OSPREY.\n")]);
        let given = ["notes.txt".to_owned()];
        for (request, read, expected) in [
            (
                "Write a Python script hi.py that prints Hi!",
                &[][..],
                Some("hi.py"),
            ),
            (
                "Put the code word from notes.txt into a new file called a.txt.",
                &given[..],
                Some("a.txt"),
            ),
            (
                "In notes.txt, change OSPREY to HERON.",
                &given[..],
                Some("notes.txt"),
            ),
            // Not read with the request: the model would write it blind.
            ("In notes.txt, change OSPREY to HERON.", &[][..], None),
            // A question changes nothing.
            ("What is the code word in notes.txt?", &given[..], None),
            ("Count the lines of notes.txt.", &given[..], None),
            (
                "What is the code word in notes.txt? Not in gone.txt.",
                &given[..],
                None,
            ),
            // Two new files, or a change across two given ones: more than one file.
            ("Write a.py and b.py.", &[][..], None),
            (
                "Put the word in notes.txt into notes.txt.bak too",
                &given[..],
                Some("notes.txt.bak"),
            ),
            ("Fix the bug.", &[][..], None),
            // Done to the file, not to its text: the tools do it.
            ("Run notes.txt.", &given[..], None),
            ("Please run new.py now.", &[][..], None),
            ("Delete notes.txt.", &given[..], None),
            ("Now remove gone.txt.", &[][..], None),
            ("Rename notes.txt to b.txt.", &given[..], None),
            (
                "I need a script called hi.py: when I run it, it should print Hi!",
                &[][..],
                Some("hi.py"),
            ),
        ] {
            assert_eq!(
                target(&workspace, request, read).as_deref(),
                expected,
                "{request}"
            );
        }
    }

    #[test]
    fn the_one_fenced_block_of_an_answer_is_the_files_text() {
        let call = whole("hi.py")
            .call(
                "Here it is:\n```python\nprint(\"Hi!\")\n```\nRun it with python3.",
                "call_1".to_owned(),
            )
            .expect("a call");
        assert_eq!(call.name, "write_file");
        assert_eq!(call.id, "call_1");
        let args: serde_json::Value = serde_json::from_str(&call.arguments).expect("JSON");
        assert_eq!(
            args,
            json!({"path": "hi.py", "content": "print(\"Hi!\")\n"})
        );
    }

    #[test]
    fn a_first_line_naming_the_file_or_a_language_labels_the_block() {
        for answer in [
            "```\na.txt\nHERON\n```",
            "```python\n# a.txt\nHERON\n```",
            "```\ntext\nHERON\n```",
        ] {
            let call = whole("a.txt")
                .call(answer, "call_1".to_owned())
                .expect("a call");
            assert!(
                call.arguments.contains(r#""content":"HERON\n""#),
                "{answer}"
            );
        }
    }

    #[test]
    fn a_block_of_one_line_is_its_text_whatever_it_says() {
        let call = whole("a.txt")
            .call("```\ntext\n```", "call_1".to_owned())
            .expect("a call");
        assert!(call.arguments.contains(r#""content":"text\n""#));
    }

    #[test]
    fn the_user_is_told_what_the_writer_did_or_why_it_did_not() {
        let whole = whole("hi.py");
        assert_eq!(
            whole.answer("created `hi.py` (22 bytes)", false),
            "Created `hi.py` (22 bytes)."
        );
        assert_eq!(
            whole.answer(
                "Error: the user denied this call to `write_file`. Do not retry it; adapt, \
                 or ask the user what they want.",
                true
            ),
            "`hi.py` was not written (the user denied this call to `write_file`)."
        );
        // Written, and its check failed: the writer's words, check and all.
        assert_eq!(
            whole.answer(
                "created `hi.py` (9 bytes)\n[check] not valid Python: line 1\n",
                true
            ),
            "Created `hi.py` (9 bytes)\n[check] not valid Python: line 1."
        );
    }

    #[test]
    fn an_answer_without_one_block_is_an_answer() {
        for answer in [
            "I cannot do that.",
            "```\na\n```\nand\n```\nb\n```",
            "```python",
            "```python\nprint(\"cut short",
        ] {
            assert_eq!(
                whole("a.txt").call(answer, "call_1".to_owned()),
                None,
                "{answer}"
            );
        }
    }
}
