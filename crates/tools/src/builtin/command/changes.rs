//! What a command changed in the workspace, so that Restore can take it back as it
//! takes back a tool's writes. Before the command the workspace's files are noted
//! (size, modification time, inode, and the contents of the small ones); after it,
//! every file made, changed or removed is told to the workspace's log with what it
//! held before. The walk skips `.git` and what the root `.gitignore` ignores, never
//! follows a link, and gives up on a workspace too large to note quickly: then the
//! command's card says its changes cannot be restored, rather than pretending.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use cairn_core::workspace::{Before, MAX_READ_BYTES};

use super::ignore::Ignore;

/// More files than this, and noting them costs a command more than it is worth.
pub(crate) const MAX_FILES: usize = 20_000;
/// Noting the files may take this long at most.
pub(crate) const MAX_NOTING: Duration = Duration::from_secs(1);
/// Contents kept before a command: each file up to the first figure, all of them up
/// to the second; a larger file that changes cannot be put back.
const MAX_KEPT_FILE: u64 = 1 << 20;
const MAX_KEPT: u64 = 64 << 20;

/// Why a command's changes cannot be noted, as its card says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotingError {
    #[error("the workspace has over {MAX_FILES} files")]
    TooManyFiles,
    #[error("noting the workspace's files took over {} s", MAX_NOTING.as_secs())]
    TooSlow,
    /// The noting thread panicked or was cancelled.
    #[error("noting the files failed: {0}")]
    Failed(String),
}

/// One file as noted.
#[derive(Debug, PartialEq)]
struct Noted {
    size: u64,
    modified: Option<SystemTime>,
    inode: u64,
    contents: Option<Vec<u8>>,
}

/// The workspace's files before a command.
#[derive(Debug)]
pub(crate) struct Snapshot {
    files: BTreeMap<String, Noted>,
    ignore: Ignore,
}

/// One file a command made, changed or removed.
#[derive(Debug, PartialEq)]
pub(crate) struct Change {
    pub path: String,
    pub before: Before,
    /// What it holds now; `None` where it was removed.
    pub after: Option<Vec<u8>>,
}

/// What the command changed, as far as it could be told.
#[derive(Debug, PartialEq, Default)]
pub(crate) struct Changes {
    pub changes: Vec<Change>,
    /// Changed files too large to keep (more than the workspace reads).
    pub too_large: Vec<String>,
}

impl Snapshot {
    /// Notes the files under `root`; `Err` says why it could not be done quickly.
    pub(crate) fn take(root: &Path) -> Result<Self, NotingError> {
        let ignore = Ignore::of(root);
        let mut kept = 0;
        let files = walk(root, &ignore, |path, meta| {
            let size = meta.len();
            let contents = if size <= MAX_KEPT_FILE && kept + size <= MAX_KEPT {
                let contents = std::fs::read(root.join(path)).ok();
                kept += contents.as_ref().map_or(0, |bytes| bytes.len() as u64);
                contents
            } else {
                None
            };
            noted(meta, contents)
        })?;
        Ok(Self { files, ignore })
    }

    /// What changed under `root` since the snapshot.
    pub(crate) fn changes(&self, root: &Path) -> Result<Changes, NotingError> {
        let now = walk(root, &self.ignore, |_, meta| noted(meta, None))?;
        let mut found = Changes::default();
        let read_now = |path: &str| -> Option<Vec<u8>> {
            let bytes = std::fs::read(root.join(path)).ok()?;
            (bytes.len() as u64 <= MAX_READ_BYTES).then_some(bytes)
        };
        let before_of = |noted: &Noted| match &noted.contents {
            Some(bytes) => Before::Held(bytes.clone()),
            None => Before::TooLarge,
        };
        for (path, then) in &self.files {
            match now.get(path) {
                None => found.changes.push(Change {
                    path: path.clone(),
                    before: before_of(then),
                    after: None,
                }),
                Some(current) if same_file(then, current) => {}
                Some(_) => match read_now(path) {
                    // Touched, not changed.
                    Some(after) if then.contents.as_ref() == Some(&after) => {}
                    Some(after) => found.changes.push(Change {
                        path: path.clone(),
                        before: before_of(then),
                        after: Some(after),
                    }),
                    None => found.too_large.push(path.clone()),
                },
            }
        }
        for path in now.keys().filter(|path| !self.files.contains_key(*path)) {
            match read_now(path) {
                Some(after) => found.changes.push(Change {
                    path: path.clone(),
                    before: Before::Absent,
                    after: Some(after),
                }),
                None => found.too_large.push(path.clone()),
            }
        }
        found.changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }
}

fn noted(meta: &std::fs::Metadata, contents: Option<Vec<u8>>) -> Noted {
    Noted {
        size: meta.len(),
        modified: meta.modified().ok(),
        inode: identity(meta),
        contents,
    }
}

/// What tells a file from another written over it at the same path: its inode on
/// unix; on Windows, its creation time (a new file has its own).
#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(windows)]
fn identity(meta: &std::fs::Metadata) -> u64 {
    std::os::windows::fs::MetadataExt::creation_time(meta)
}

/// The same file, unchanged: a write changes its modification time, a rename its
/// inode (`sed -i` writes a new file over the old).
fn same_file(then: &Noted, now: &Noted) -> bool {
    then.size == now.size && then.modified == now.modified && then.inode == now.inode
}

/// The regular files under `root`, by workspace-relative path, each as `note` makes
/// it; `Err` past [`MAX_FILES`] files or [`MAX_NOTING`].
fn walk(
    root: &Path,
    ignore: &Ignore,
    mut note: impl FnMut(&str, &std::fs::Metadata) -> Noted,
) -> Result<BTreeMap<String, Noted>, NotingError> {
    let started = Instant::now();
    let mut files = BTreeMap::new();
    let mut pending = vec![String::new()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let path = if folder.is_empty() {
                name.clone()
            } else {
                format!("{folder}/{name}")
            };
            // Links are not followed, and never restored: `file_type` does not follow.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if name != ".git" && !ignore.ignores(&path, true) {
                    pending.push(path);
                }
            } else if kind.is_file() && !ignore.ignores(&path, false) {
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                if files.len() == MAX_FILES {
                    return Err(NotingError::TooManyFiles);
                }
                let noted = note(&path, &meta);
                files.insert(path, noted);
            }
            if started.elapsed() > MAX_NOTING {
                return Err(NotingError::TooSlow);
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn made_changed_and_removed_files_are_found_with_what_they_held() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "notes.md", "draft\n");
        write(root, "old.txt", "old\n");
        write(root, "same.txt", "same\n");
        write(root, "touched.txt", "touched\n");
        write(root, "deep/er/file.txt", "deep\n");
        let snapshot = Snapshot::take(root).unwrap();

        // As `sed -i` does: a new file renamed over the old one.
        write(root, "notes.md.tmp", "final\n");
        std::fs::rename(root.join("notes.md.tmp"), root.join("notes.md")).unwrap();
        write(root, "made.txt", "made");
        std::fs::remove_file(root.join("old.txt")).unwrap();
        std::fs::remove_file(root.join("deep/er/file.txt")).unwrap();
        // Same bytes, a new modification time.
        std::fs::write(root.join("touched.txt"), "touched\n").unwrap();

        let found = snapshot.changes(root).unwrap();
        assert_eq!(
            found.changes,
            [
                Change {
                    path: "deep/er/file.txt".into(),
                    before: Before::Held(b"deep\n".to_vec()),
                    after: None,
                },
                Change {
                    path: "made.txt".into(),
                    before: Before::Absent,
                    after: Some(b"made".to_vec()),
                },
                Change {
                    path: "notes.md".into(),
                    before: Before::Held(b"draft\n".to_vec()),
                    after: Some(b"final\n".to_vec()),
                },
                Change {
                    path: "old.txt".into(),
                    before: Before::Held(b"old\n".to_vec()),
                    after: None,
                },
            ]
        );
        assert!(found.too_large.is_empty());
    }

    #[test]
    fn git_ignored_files_and_links_are_not_noted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", "target/\n*.log\n");
        write(root, "src/main.rs", "fn main() {}\n");
        let snapshot = Snapshot::take(root).unwrap();
        write(root, ".git/objects/ab/cdef", "object");
        write(root, "target/debug/app", "binary");
        write(root, "run.log", "log");
        #[cfg(unix)]
        let link = std::os::unix::fs::symlink;
        #[cfg(windows)]
        let link = std::os::windows::fs::symlink_file;
        link(root.join("src/main.rs"), root.join("link.rs")).unwrap();
        let found = snapshot.changes(root).unwrap();
        assert_eq!(found, Changes::default(), "{found:?}");
    }

    #[test]
    fn a_workspace_with_too_many_files_is_not_noted() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..=MAX_FILES {
            std::fs::write(dir.path().join(n.to_string()), "").unwrap();
        }
        let err = Snapshot::take(dir.path()).unwrap_err();
        assert_eq!(err, NotingError::TooManyFiles);
        assert_eq!(err.to_string(), "the workspace has over 20000 files");
    }

    #[test]
    fn a_large_file_changed_is_said_not_restorable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let large = "x".repeat(usize::try_from(MAX_KEPT_FILE).unwrap() + 1);
        write(root, "large.bin", &large);
        let snapshot = Snapshot::take(root).unwrap();
        write(root, "large.bin", &format!("{large}y"));
        let found = snapshot.changes(root).unwrap();
        assert_eq!(found.changes.len(), 1);
        assert_eq!(
            found.changes[0].before,
            Before::TooLarge,
            "its contents were not kept"
        );
    }
}
