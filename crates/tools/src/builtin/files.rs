//! The file tools: `read_file`, `list_dir`, `search_files`, `write_file`,
//! `edit_file`, all through the workspace's confinement.

use async_trait::async_trait;
use cairn_protocol::describe::{CallAbout, folder, quote, size, text_arg};
use cairn_protocol::{ApprovalPreview, ToolCategory};
use serde::Deserialize;
use serde_json::{Value, json};

use cairn_core::tool::parse_args;
use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};
use cairn_core::workspace::{RelPath, Workspace, WorkspaceError, WriteOutcome};

use super::disk::on_disk;
use super::nearby::{marked, or_whats_there};

/// Lines `read_file` returns when the model gives no `limit`.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Entries `list_dir` shows before saying how many more there are.
pub const MAX_LIST_ENTRIES: usize = 1000;

/// The lock every workspace-writing tool holds, so parallel subtasks never interleave
/// their writes.
pub const WORKSPACE_WRITE_LOCK: &str = "workspace_write";

/// The path argument `key` as a rule subject. A path that would leave the workspace
/// is kept as written: the call fails anyway, and deny rules still see it.
pub(crate) fn path_subject(args: &Value, key: &str) -> Vec<Subject> {
    let Some(text) = args.get(key).and_then(Value::as_str) else {
        return Vec::new();
    };
    let path = RelPath::parse(text).map_or_else(|_| text.to_owned(), |rel| rel.normalized());
    vec![Subject::Path(path)]
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    path: String,
    /// 1-based line to start from.
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let path = text_arg(args, "path").unwrap_or_default();
        CallAbout::new(format!("read {}", quote(path)), Some(path.to_owned()))
    }

    fn description(&self) -> &str {
        "Read a text file in the workspace. A large one comes in pieces: offset and limit \
         read more."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line, 1-based"},
                "limit": {"type": "integer", "minimum": 1, "description": "Lines to read"}
            },
            "required": ["path"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    fn reads_file_at(&self) -> Option<&'static str> {
        Some("path")
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ReadFileArgs = parse_args(args)?;
        let path = args.path.clone();
        let bytes = on_disk(ctx, move |ws| Ok(or_whats_there(ws, &path, ws.read(&path)))).await??;
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::Failed(format!(
                "`{}` is not UTF-8 text; read_file reads text files only",
                args.path
            ))
        })?;
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_READ_LINES).max(1);
        Ok(ToolOutput::text(window(&text, offset, limit)))
    }
}

/// Lines `offset..offset+limit` of `text`, with a note when that is not all of it.
fn window(text: &str, offset: usize, limit: usize) -> String {
    let total = text.lines().count();
    if offset == 1 && total <= limit {
        return text.to_owned();
    }
    if offset > total {
        return format!("[the file has {total} lines; offset {offset} is past the end]");
    }
    let last = (offset - 1 + limit).min(total);
    let mut out = String::new();
    for line in text.lines().skip(offset - 1).take(limit) {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("[lines {offset}-{last} of {total}"));
    if last < total {
        out.push_str(&format!("; read on with offset {}", last + 1));
    }
    out.push(']');
    out
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirArgs {
    path: String,
}

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let path = text_arg(args, "path").unwrap_or(".");
        CallAbout::new(format!("list {}", quote(path)), Some(folder(path)))
    }

    fn description(&self) -> &str {
        "List a directory in the workspace. Folders end with `/`, links with `@`. \
         Use \".\" for the workspace root."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"}
            },
            "required": ["path"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ListDirArgs = parse_args(args)?;
        let path = args.path.clone();
        let entries = on_disk(ctx, move |ws| {
            Ok(match ws.list(&path) {
                // Small models list a file they were asked about: point them on.
                Err(err @ WorkspaceError::NotDirectory { .. }) => Err(ToolError::Failed(format!(
                    "{err} (to see a file's contents, use read_file)"
                ))),
                other => or_whats_there(ws, &path, other),
            })
        })
        .await??;
        if entries.is_empty() {
            return Ok(ToolOutput::text(format!("`{}` is empty", args.path)));
        }
        let mut out = String::new();
        for entry in entries.iter().take(MAX_LIST_ENTRIES) {
            out.push_str(&marked(entry));
            out.push('\n');
        }
        if entries.len() > MAX_LIST_ENTRIES {
            out.push_str(&format!(
                "[{} more entries not shown]\n",
                entries.len() - MAX_LIST_ENTRIES
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn streams(&self) -> Option<&'static str> {
        Some("content")
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let path = text_arg(args, "path").unwrap_or_default();
        let action = match text_arg(args, "content") {
            Some(content) => format!("write {} ({})", quote(path), size(content)),
            None => format!("write {}", quote(path)),
        };
        CallAbout::new(action, Some(path.to_owned()))
    }

    fn description(&self) -> &str {
        "Create or replace a file in the workspace with the given content. Missing \
         parent folders are created."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string", "description": "The whole new content"}
            },
            "required": ["path", "content"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn parallel_safe(&self) -> bool {
        false
    }

    fn exclusive_lock(&self) -> Option<&'static str> {
        Some(WORKSPACE_WRITE_LOCK)
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    fn writes_file_at(&self) -> Option<(&'static str, &'static str)> {
        Some(("path", "content"))
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Option<ApprovalPreview> {
        let args: WriteFileArgs = parse_args(args.clone()).ok()?;
        super::preview::write(ctx, &args.path, &args.content).await
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WriteFileArgs = parse_args(args)?;
        let bytes = args.content.len();
        // Read before the write: what the card shows it changed.
        let change = super::preview::write(ctx, &args.path, &args.content).await;
        let path = args.path.clone();
        let problem = super::syntax::problem(&args.path, &args.content).await;
        let outcome = on_disk(ctx, move |ws| ws.write(&path, args.content.as_bytes())).await?;
        let verb = match outcome {
            WriteOutcome::Created => "created",
            WriteOutcome::Replaced => "replaced",
        };
        Ok(checked(
            ToolOutput::text(format!("{verb} `{}` ({bytes} bytes)", args.path))
                .with_change(change.map(super::preview::for_card)),
            problem,
        ))
    }
}

/// A write's output, failed with the reason when what it wrote does not parse.
fn checked(output: ToolOutput, problem: Option<String>) -> ToolOutput {
    match problem {
        Some(problem) => ToolOutput {
            content: format!("{}\n[check] {problem}\n", output.content),
            failed: true,
            ..output
        },
        None => output,
    }
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn window_returns_small_files_whole_and_marks_partial_reads() {
        assert_eq!(window("a\nb\n", 1, 10), "a\nb\n");
        assert_eq!(
            window("a\nb\nc\n", 2, 1),
            "b\n[lines 2-2 of 3; read on with offset 3]"
        );
        assert_eq!(window("a\nb\nc\n", 3, 5), "c\n[lines 3-3 of 3]");
        assert_eq!(
            window("a\n", 4, 5),
            "[the file has 1 lines; offset 4 is past the end]"
        );
    }
}

/// Matches `search_files` reports at most.
pub const MAX_MATCHES: usize = 200;
/// Files `search_files` looks through at most.
pub const MAX_SEARCHED_FILES: usize = 20_000;
/// Files larger than this are not searched.
const MAX_SEARCHED_BYTES: usize = 2 * 1024 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct SearchFiles;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchFilesArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[async_trait]
impl Tool for SearchFiles {
    fn name(&self) -> &str {
        "search_files"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let pattern = quote(text_arg(args, "pattern").unwrap_or_default());
        match text_arg(args, "path").filter(|path| !path.trim().is_empty()) {
            Some(path) => CallAbout::new(
                format!("search {} for “{pattern}”", quote(path)),
                Some(match path.trim() {
                    "." | "./" => format!("“{pattern}”"),
                    _ => format!("“{pattern}” in {}", folder(path)),
                }),
            ),
            None => CallAbout::new(
                format!("search for “{pattern}”"),
                Some(format!("“{pattern}”")),
            ),
        }
    }

    fn description(&self) -> &str {
        "Search the workspace's files for a regular expression or plain text: \
         `path:line: text` for each match."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "Only this folder"}
            },
            "required": ["pattern"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        let mut subjects = path_subject(args, "path");
        if subjects.is_empty() {
            subjects.push(Subject::Path(".".into()));
        }
        subjects
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: SearchFilesArgs = parse_args(args)?;
        if args.pattern.is_empty() {
            return Err(ToolError::InvalidArguments("`pattern` is empty".into()));
        }
        // Small models write `foo(` or `a.b[0]` meaning the text itself: a pattern
        // that is not a valid expression is searched for literally.
        let matcher = regex::Regex::new(&args.pattern)
            .or_else(|_| regex::Regex::new(&regex::escape(&args.pattern)))
            .map_err(|err| {
                ToolError::InvalidArguments(format!("`pattern` cannot be searched: {err}"))
            })?;
        let folder = args.path.clone().unwrap_or_else(|| ".".into());
        let report = on_disk(ctx, move |ws| search(ws, &folder, &matcher)).await?;
        Ok(ToolOutput::text(report))
    }
}

/// The files named in a "no matches" report: enough to pick the next one to read.
const NAMED_WHEN_NO_MATCH: usize = 20;
/// A search that matched nothing among at most this many text files, this short
/// together, shows them whole: asked which file mentions an animal, the 1.5B model
/// searched for the word `animal`, was told the three files' names, and named one at
/// random rather than read them (task benchmark, README "Small models").
const SHOWN_WHEN_NO_MATCH: usize = 5;
const SHOWN_BYTES_WHEN_NO_MATCH: usize = 2048;

fn search(ws: &Workspace, folder: &str, matcher: &regex::Regex) -> Result<String, WorkspaceError> {
    // A file is searched as grep searches one: small models searched the file they
    // were asked about (`people.csv`), and were told it was not a directory.
    let (files, more_files) = match ws.files(folder, MAX_SEARCHED_FILES) {
        Err(WorkspaceError::NotDirectory { .. }) if ws.read(folder).is_ok() => {
            (vec![ws.subject(folder)], false)
        }
        listed => listed?,
    };
    let mut out = String::new();
    let mut matches = 0;
    // The texts searched, while they are few and short enough to show (see above).
    let mut texts: Option<Vec<(&String, String)>> = Some(Vec::new());
    let mut texts_bytes = 0;
    'files: for file in &files {
        let Ok(bytes) = ws.read(file) else { continue };
        if bytes.len() > MAX_SEARCHED_BYTES || bytes.iter().take(8192).any(|&b| b == 0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        texts_bytes += text.len();
        texts = texts.filter(|shown| {
            shown.len() < SHOWN_WHEN_NO_MATCH && texts_bytes <= SHOWN_BYTES_WHEN_NO_MATCH
        });
        if let Some(shown) = texts.as_mut() {
            shown.push((file, text.clone().into_owned()));
        }
        for (number, line) in text.lines().enumerate() {
            if !matcher.is_match(line) {
                continue;
            }
            if matches == MAX_MATCHES {
                out.push_str(&format!(
                    "[stopped at {MAX_MATCHES} matches; narrow the pattern or the path]\n"
                ));
                break 'files;
            }
            matches += 1;
            let shown: String = line.trim().chars().take(200).collect();
            out.push_str(&format!("{file}:{}: {shown}\n", number + 1));
        }
    }
    if more_files {
        out.push_str(&format!(
            "[only the first {MAX_SEARCHED_FILES} files were searched]\n"
        ));
    }
    if matches == 0 {
        // Named, so that a model searching for a word the files do not use (`animal`
        // where one says `fox`) can read them instead.
        let mut named = files
            .iter()
            .take(NAMED_WHEN_NO_MATCH)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        if files.len() > NAMED_WHEN_NO_MATCH {
            named.push_str(", …");
        }
        let files_word = if files.len() == 1 { "file" } else { "files" };
        let head = match texts.filter(|shown| !shown.is_empty()) {
            _ if files.is_empty() => "no matches: no files to search\n".to_owned(),
            Some(shown) => shown_whole(&files, &shown),
            None => format!(
                "no matches in {} {files_word}: {named}\n(a search finds the text as \
                 written; to find what it means, read the files)\n",
                files.len()
            ),
        };
        out.insert_str(0, &head);
    }
    Ok(out)
}

/// A "no matches" report that shows the few short files searched, for the model to
/// judge by meaning: every line, as a match is shown. Their names are not listed first:
/// replayed at temperature 0 on four sets of files, the 1.5B model named the first
/// file listed three times in four with the list, and the right one four in four
/// without it.
fn shown_whole(files: &[String], shown: &[(&String, String)]) -> String {
    let one = files.len() == 1;
    let mut report = format!(
        "no matches in {} {} (a search finds the text as written; {} short, so here is \
         every line, to judge by what {}):\n",
        files.len(),
        if one { "file" } else { "files" },
        if one { "it is" } else { "they are" },
        if one { "it says" } else { "they say" },
    );
    for (file, text) in shown {
        for (number, line) in text.lines().enumerate() {
            report.push_str(&format!("{file}:{}: {}\n", number + 1, line.trim()));
        }
    }
    report
}

#[derive(Debug, Clone, Copy, Default)]
pub struct EditFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditFileArgs {
    path: String,
    old_text: String,
    new_text: String,
}

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn streams(&self) -> Option<&'static str> {
        Some("new_text")
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let path = text_arg(args, "path").unwrap_or_default();
        CallAbout::new(format!("edit {}", quote(path)), Some(path.to_owned()))
    }

    fn description(&self) -> &str {
        "Replace one exact piece of a file's text. old_text must appear exactly once: \
         copy it from read_file, with enough surrounding lines to be unique."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"}
            },
            "required": ["path", "old_text", "new_text"]
        })
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn parallel_safe(&self) -> bool {
        false
    }

    fn exclusive_lock(&self) -> Option<&'static str> {
        Some(WORKSPACE_WRITE_LOCK)
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        path_subject(args, "path")
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Option<ApprovalPreview> {
        let args: EditFileArgs = parse_args(args.clone()).ok()?;
        super::preview::edit(ctx, &args.path, &args.old_text, &args.new_text).await
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: EditFileArgs = parse_args(args)?;
        if args.old_text.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`old_text` is empty; to create or replace a whole file use write_file".into(),
            ));
        }
        if args.old_text == args.new_text {
            // Reported as an edit, a no-op told a small model it had done something
            // (the task benchmark saw one "edit" a password it was asked to read).
            // Short, with nothing in it to copy as an answer: told what to give
            // instead and when to answer, the 1.5B wrote those words back as its reply.
            return Err(ToolError::InvalidArguments(format!(
                "old_text and new_text are the same, so `{}` was not changed: new_text \
                 must be the text that replaces old_text",
                args.path
            )));
        }
        let path = args.path.clone();
        let bytes = on_disk(ctx, move |ws| Ok(or_whats_there(ws, &path, ws.read(&path)))).await??;
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::Failed(format!(
                "`{}` is not UTF-8 text; edit_file edits text files only",
                args.path
            ))
        })?;
        let found = text.matches(&args.old_text).count();
        if found != 1 {
            return Err(ToolError::Failed(if found == 0 {
                format!(
                    "old_text was not found in `{}`; read the file and copy the text exactly, \
                     spaces and line breaks included",
                    args.path
                )
            } else {
                format!(
                    "old_text appears {found} times in `{}`; include more of the lines around it \
                     so it appears once",
                    args.path
                )
            }));
        }
        let edited = text.replacen(&args.old_text, &args.new_text, 1);
        let change = ApprovalPreview::Diff {
            path: args.path.clone(),
            diff: crate::diff::unified(&text, &edited),
        };
        let path = args.path.clone();
        let problem = super::syntax::problem(&args.path, &edited).await;
        on_disk(ctx, move |ws| ws.write(&path, edited.as_bytes())).await?;
        Ok(checked(
            ToolOutput::text(format!(
                "edited `{}`: {} lines replaced with {}",
                args.path,
                args.old_text.lines().count().max(1),
                args.new_text.lines().count()
            ))
            .with_change(Some(super::preview::for_card(change))),
            problem,
        ))
    }
}
