//! What an approval question shows above itself: the change a write would make (a
//! diff, or the new file) or the command as the shell would run it, in its folder;
//! the same preview the window's approval card draws. One line is not enough to judge
//! a change: the question's own line says which call asks, these lines say what it
//! would do.

use cairn_protocol::ApprovalPreview;

use crate::paint::painted;

/// The most lines of a preview printed; the rest are counted, not shown. Enough for
/// a typical edit's hunks without scrolling a long new file past the question.
const MOST_LINES: usize = 40;

/// The preview's lines, indented under the question; coloured like `git diff` when
/// `color`.
pub fn lines(preview: &ApprovalPreview, color: bool) -> Vec<String> {
    let paint = |code: &str, text: &str| painted(color, code, text);
    let (title, body): (String, Vec<String>) = match preview {
        ApprovalPreview::Diff { path, .. } if preview.changes_nothing() => {
            return vec![format!(
                "  no change to {path}: it already holds exactly this"
            )];
        }
        ApprovalPreview::Diff { path, diff } => (
            format!("change to {path}:"),
            diff.lines()
                .map(|line| match line.chars().next() {
                    Some('+') => paint("32", line),
                    Some('-') => paint("31", line),
                    Some('@') => paint("36", line),
                    _ => line.to_owned(),
                })
                .collect(),
        ),
        ApprovalPreview::NewFile { path, content } => (
            format!("new file {path}:"),
            content
                .lines()
                .map(|line| paint("32", &format!("+{line}")))
                .collect(),
        ),
        ApprovalPreview::Command { folder, command } => (
            format!("in {folder}:"),
            command
                .lines()
                .enumerate()
                .map(|(at, line)| {
                    if at == 0 {
                        format!("$ {line}")
                    } else {
                        format!("  {line}")
                    }
                })
                .collect(),
        ),
    };
    let mut out = vec![format!("  {title}")];
    let hidden = body.len().saturating_sub(MOST_LINES);
    out.extend(
        body.into_iter()
            .take(MOST_LINES)
            .map(|line| format!("    {line}")),
    );
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        out.push(format!("    … {hidden} more line{s}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_is_shown_line_by_line_and_coloured_on_a_terminal() {
        let diff = ApprovalPreview::Diff {
            path: "notes.md".into(),
            diff: "@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n".into(),
        };
        assert_eq!(
            lines(&diff, false),
            [
                "  change to notes.md:",
                "    @@ -1,2 +1,2 @@",
                "     alpha",
                "    -beta",
                "    +BETA",
            ]
        );
        let painted = lines(&diff, true);
        assert_eq!(painted[3], "    \x1b[31m-beta\x1b[0m");
        assert_eq!(painted[4], "    \x1b[32m+BETA\x1b[0m");
        assert_eq!(painted[2], "     alpha", "context lines are not painted");
    }

    #[test]
    fn a_new_file_and_a_command_read_as_they_would_land() {
        let file = ApprovalPreview::NewFile {
            path: "todo.md".into(),
            content: "- one\n- two\n".into(),
        };
        assert_eq!(
            lines(&file, false),
            ["  new file todo.md:", "    +- one", "    +- two"]
        );
        let command = ApprovalPreview::Command {
            folder: "/home/ada/notes".into(),
            command: "cargo build &&\n  cargo test".into(),
        };
        assert_eq!(
            lines(&command, false),
            [
                "  in /home/ada/notes:",
                "    $ cargo build &&",
                "        cargo test"
            ]
        );
    }

    #[test]
    fn a_long_preview_is_cut_and_says_how_much_is_left() {
        let content: String = (1..=45).map(|n| format!("line {n}\n")).collect();
        let file = ApprovalPreview::NewFile {
            path: "long.txt".into(),
            content,
        };
        let shown = lines(&file, false);
        assert_eq!(shown.len(), 1 + MOST_LINES + 1);
        assert_eq!(shown[MOST_LINES], "    +line 40");
        assert_eq!(shown.last().unwrap(), "    … 5 more lines");
    }

    #[test]
    fn writing_what_the_file_holds_says_so_instead_of_an_empty_diff() {
        let same = ApprovalPreview::Diff {
            path: "notes.md".into(),
            diff: String::new(),
        };
        assert_eq!(
            lines(&same, false),
            ["  no change to notes.md: it already holds exactly this"]
        );
    }
}
