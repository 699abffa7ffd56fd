//! The workspace root's `.gitignore`, read as git reads its common patterns: a name
//! anywhere (`target`, `*.log`), a path from the root (`/dist`, `docs/*.pdf`), a
//! folder only (`build/`), `**` across folders, `!` taking a pattern back (the last
//! pattern that matches decides). Only the root's file: nested ones and git's global
//! excludes are not read, so what they ignore is noted like any file.

use std::path::Path;

#[derive(Debug, Default)]
pub(crate) struct Ignore {
    patterns: Vec<Pattern>,
}

#[derive(Debug)]
struct Pattern {
    glob: String,
    /// Matched against the whole path from the root, not only the last name.
    anchored: bool,
    folders_only: bool,
    negated: bool,
}

impl Ignore {
    /// The patterns of `root/.gitignore`; none when it is missing or unreadable.
    pub(crate) fn of(root: &Path) -> Self {
        std::fs::read_to_string(root.join(".gitignore"))
            .map(|text| Self::parse(&text))
            .unwrap_or_default()
    }

    pub(crate) fn parse(text: &str) -> Self {
        let patterns = text
            .lines()
            .map(str::trim_end)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| {
                let (negated, line) = match line.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, line),
                };
                let (folders_only, line) = match line.strip_suffix('/') {
                    Some(rest) => (true, rest),
                    None => (false, line),
                };
                let anchored = line.contains('/');
                Pattern {
                    glob: line.trim_start_matches('/').to_owned(),
                    anchored,
                    folders_only,
                    negated,
                }
            })
            .collect();
        Self { patterns }
    }

    /// Whether `path` (relative to the root, `/`-separated) is ignored.
    pub(crate) fn ignores(&self, path: &str, is_folder: bool) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let mut ignored = false;
        for pattern in &self.patterns {
            if pattern.folders_only && !is_folder {
                continue;
            }
            let subject = if pattern.anchored { path } else { name };
            if glob(pattern.glob.as_bytes(), subject.as_bytes()) {
                ignored = !pattern.negated;
            }
        }
        ignored
    }
}

/// `*` and `?` within one name, `**` across names.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => {
            let rest = rest.strip_prefix(b"/").unwrap_or(rest);
            (0..=text.len()).any(|skip| glob(rest, &text[skip..]))
        }
        [b'*', rest @ ..] => (0..=text.len())
            .take_while(|&skip| skip == 0 || text[skip - 1] != b'/')
            .any(|skip| glob(rest, &text[skip..])),
        [b'?', rest @ ..] => text.first().is_some_and(|&c| c != b'/') && glob(rest, &text[1..]),
        [c, rest @ ..] => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_patterns_read_as_git_reads_them() {
        let ignore = Ignore::parse(
            "# build output\ntarget\n*.log\n/dist\nbuild/\ndocs/**/*.pdf\n!keep.log\n\nnode_modules/\n",
        );
        let cases = [
            ("target", true, true),
            ("crates/x/target", true, true),
            ("app.log", false, true),
            ("deep/er/app.log", false, true),
            ("keep.log", false, false),
            ("dist", true, true),
            ("src/dist", true, false),
            ("build", true, true),
            ("build", false, false),
            ("docs/a/b/c.pdf", false, true),
            ("docs/c.pdf", false, true),
            ("other/c.pdf", false, false),
            ("web/node_modules", true, true),
            ("notes.md", false, false),
            ("logs/app.txt", false, false),
        ];
        for (path, folder, ignored) in cases {
            assert_eq!(ignore.ignores(path, folder), ignored, "{path}");
        }
    }

    #[test]
    fn a_star_stays_within_a_name() {
        assert!(glob(b"*.md", b"notes.md"));
        assert!(!glob(b"*.md", b"docs/notes.md"));
        assert!(glob(b"a/*/c", b"a/b/c"));
        assert!(!glob(b"a/*/c", b"a/b/x/c"));
        assert!(glob(b"a/**/c", b"a/b/x/c"));
        assert!(glob(b"file?.txt", b"file1.txt"));
    }
}
