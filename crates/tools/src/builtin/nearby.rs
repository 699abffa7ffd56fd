//! What is there, said when a call names what is not: a missing file's error lists
//! the nearest folder that exists, a folder given where a file goes lists that folder.
//! Small models guess names (`animal.txt` for "the file that mentions an animal") or
//! give the workspace's own name as a file, and told only "does not exist" they sent
//! the same call again; shown the real names, the next call can use one.

use cairn_core::tool::ToolError;
use cairn_core::workspace::{DirEntry, EntryKind, Workspace, WorkspaceError};

/// Entries a listing names before it counts the rest: enough for a small folder whole,
/// short enough not to crowd a small window.
const NAMED: usize = 20;

/// `result`'s error with the listing of the folder nearest to `path` when the error is
/// a missing path or a folder; anything else as it is.
pub(crate) fn or_whats_there<T>(
    ws: &Workspace,
    path: &str,
    result: Result<T, WorkspaceError>,
) -> Result<T, ToolError> {
    result.map_err(|err| {
        let folder = match &err {
            WorkspaceError::IsDirectory { .. } => listing(ws, ws.subject(path)),
            WorkspaceError::NotFound { .. } => nearest_existing(ws, &ws.subject(path)),
            _ => None,
        };
        match folder {
            Some((name, entries)) => {
                ToolError::Failed(format!("{err}. {}", holds(&name, &entries)))
            }
            None => err.into(),
        }
    })
}

/// `folder` and its entries, when it can be listed.
fn listing(ws: &Workspace, folder: String) -> Option<(String, Vec<DirEntry>)> {
    ws.list(&folder).ok().map(|entries| (folder, entries))
}

/// The closest folder above `path` (as rules read it: `.` the root) that can be
/// listed: its parent, or that one's, up to the root.
fn nearest_existing(ws: &Workspace, path: &str) -> Option<(String, Vec<DirEntry>)> {
    let mut folder = path;
    while folder != "." {
        folder = folder.rsplit_once('/').map_or(".", |(parent, _)| parent);
        if let Some(found) = listing(ws, folder.to_owned()) {
            return Some(found);
        }
    }
    None
}

/// An entry's name with the mark listings give it: `/` a folder, `@` a link.
pub(crate) fn marked(entry: &DirEntry) -> String {
    let mark = match entry.kind {
        EntryKind::Directory => "/",
        EntryKind::Symlink => "@",
        EntryKind::File | EntryKind::Other => "",
    };
    format!("{}{mark}", entry.name)
}

/// "The folder `src` holds: a.rs, b/." in the marks `list_dir` writes.
fn holds(folder: &str, entries: &[DirEntry]) -> String {
    let place = if folder == "." {
        "The workspace's top folder".to_owned()
    } else {
        format!("The folder `{folder}`")
    };
    if entries.is_empty() {
        return format!("{place} is empty.");
    }
    let mut names: Vec<String> = entries.iter().take(NAMED).map(marked).collect();
    if entries.len() > NAMED {
        names.push(format!("and {} more", entries.len() - NAMED));
    }
    format!("{place} holds: {}.", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, kind: EntryKind) -> DirEntry {
        DirEntry {
            name: name.to_owned(),
            kind,
        }
    }

    #[test]
    fn a_listing_marks_folders_and_links_and_counts_what_it_leaves_out() {
        let few = [
            entry("a.rs", EntryKind::File),
            entry("b", EntryKind::Directory),
            entry("c", EntryKind::Symlink),
        ];
        assert_eq!(holds("src", &few), "The folder `src` holds: a.rs, b/, c@.");
        assert_eq!(
            holds(".", &few[..1]),
            "The workspace's top folder holds: a.rs."
        );
        assert_eq!(holds("empty", &[]), "The folder `empty` is empty.");
        let many: Vec<DirEntry> = (0..NAMED + 3)
            .map(|i| entry(&format!("f{i:02}"), EntryKind::File))
            .collect();
        let said = holds(".", &many);
        assert!(said.ends_with(", f19, and 3 more."), "{said}");
        assert!(!said.contains("f20"), "{said}");
    }
}
