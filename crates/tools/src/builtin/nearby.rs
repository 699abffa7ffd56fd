//! What is there, said when a call names what is not: a missing file's error lists
//! the nearest folder that exists, a folder given where a file goes lists that folder.
//! Small models guess names (`animal.txt` for "the file that mentions an animal") or
//! give the workspace's own name as a file, and told only "does not exist" they sent
//! the same call again; shown the real names, the next call can use one.

use cairn_core::tool::ToolError;
use cairn_core::workspace::{DirEntry, EntryKind, RelPath, Workspace, WorkspaceError};

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
            WorkspaceError::IsDirectory { .. } => Some(listed(ws, normalized(ws, path))),
            WorkspaceError::NotFound { .. } => nearest_existing(ws, path),
            _ => None,
        };
        match folder {
            Some((name, Ok(entries))) => {
                ToolError::Failed(format!("{err}. {}", holds(&name, &entries)))
            }
            _ => err.into(),
        }
    })
}

type Listing = (String, Result<Vec<DirEntry>, WorkspaceError>);

fn listed(ws: &Workspace, folder: String) -> Listing {
    let entries = ws.list(&folder);
    (folder, entries)
}

/// `path` as the workspace reads it (`./notes//a.md` → `notes/a.md`, the root as `.`).
fn normalized(ws: &Workspace, path: &str) -> String {
    RelPath::parse(&ws.relative(path)).map_or_else(|_| path.to_owned(), |rel| rel.normalized())
}

/// The closest folder above `path` that can be listed: its parent, or that one's, up
/// to the root.
fn nearest_existing(ws: &Workspace, path: &str) -> Option<Listing> {
    let mut folder = normalized(ws, path);
    loop {
        if folder == "." {
            return None;
        }
        folder = match folder.rsplit_once('/') {
            Some((parent, _)) => parent.to_owned(),
            None => ".".to_owned(),
        };
        let listing = listed(ws, folder.clone());
        if listing.1.is_ok() {
            return Some(listing);
        }
    }
}

/// "The folder `src` holds: a.rs, b/." in the listing's own marks (`/` a folder,
/// `@` a link), as `list_dir` writes them.
fn holds(folder: &str, entries: &[DirEntry]) -> String {
    let place = if folder == "." {
        "The workspace's top folder".to_owned()
    } else {
        format!("The folder `{folder}`")
    };
    if entries.is_empty() {
        return format!("{place} is empty.");
    }
    let mut names: Vec<String> = entries
        .iter()
        .take(NAMED)
        .map(|entry| {
            let mark = match entry.kind {
                EntryKind::Directory => "/",
                EntryKind::Symlink => "@",
                EntryKind::File | EntryKind::Other => "",
            };
            format!("{}{mark}", entry.name)
        })
        .collect();
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
