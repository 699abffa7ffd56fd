//! The confinement on Windows, on paths: a path is walked from the root one component
//! at a time, and each is looked at before it is used. A symbolic link or a junction
//! (any reparse point) is refused, as on unix a link is; names Windows reads as
//! something else (a drive, a stream, a device) never get here (`RelPath::parse`).
//!
//! Unlike unix's `openat` walk, the look and the use are two steps: a junction planted
//! between them by another process is not caught. The model's own calls cannot plant
//! one (no tool makes links), but a command run outside the sandbox could.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::windows::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{DirEntry, EntryKind, RelPath, WorkspaceError, io_err};

/// `FILE_ATTRIBUTE_REPARSE_POINT`: a symbolic link, a junction, or another reparse
/// point; never followed.
const REPARSE_POINT: u32 = 0x400;

/// What a write keeps of the file it replaces: whether it was read-only.
pub(super) type Mode = bool;

pub(super) struct RootDir(PathBuf);

/// A folder inside the workspace, by its path from the root.
pub(super) struct Dir(PathBuf);

fn kind(meta: &std::fs::Metadata) -> EntryKind {
    kind_of(
        meta.file_attributes(),
        meta.file_type().is_symlink(),
        meta.is_dir(),
        meta.is_file(),
    )
}

/// What an entry is by its attributes: a reparse point is a link whatever else it is
/// (a junction is a folder that is one).
fn kind_of(attributes: u32, symlink: bool, dir: bool, file: bool) -> EntryKind {
    if attributes & REPARSE_POINT != 0 || symlink {
        EntryKind::Symlink
    } else if dir {
        EntryKind::Directory
    } else if file {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

/// What `path` is, never following it.
fn look(path: &Path) -> std::io::Result<EntryKind> {
    std::fs::symlink_metadata(path).map(|meta| kind(&meta))
}

impl RootDir {
    pub(super) fn open(root: &Path) -> std::io::Result<Self> {
        match look(root)? {
            EntryKind::Directory => Ok(Self(root.to_owned())),
            _ => Err(std::io::Error::new(
                ErrorKind::NotADirectory,
                "not a folder",
            )),
        }
    }

    /// Whether the root holds an entry named `name` (of any kind, links too).
    pub(super) fn has_entry(&self, name: &str) -> bool {
        look(&self.0.join(name)).is_ok()
    }

    /// The folder `parts` names, one component at a time, refusing links.
    pub(super) fn walk(
        &self,
        rel: &RelPath,
        parts: &[String],
        create: bool,
    ) -> Result<Dir, WorkspaceError> {
        let mut current = Dir(self.0.clone());
        for part in parts {
            current = match current.child(rel, part) {
                Err(WorkspaceError::NotFound { .. }) if create => {
                    match std::fs::create_dir(current.0.join(part)) {
                        Ok(()) => {}
                        Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
                        Err(err) => return Err(io_err("creating a folder for", rel, err)),
                    }
                    current.child(rel, part)?
                }
                other => other?,
            };
        }
        Ok(current)
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Dir {
    pub(super) fn open_file(&self, rel: &RelPath, name: &str) -> Result<File, WorkspaceError> {
        let path = self.0.join(name);
        match self.stat(rel, name)?.map(|(kind, _)| kind) {
            None => Err(WorkspaceError::NotFound {
                path: rel.as_str().to_owned(),
            }),
            Some(EntryKind::Symlink) => Err(WorkspaceError::Symlink {
                path: rel.as_str().to_owned(),
            }),
            Some(EntryKind::Directory) => Err(WorkspaceError::IsDirectory {
                path: rel.as_str().to_owned(),
            }),
            Some(EntryKind::Other) => Err(io_err(
                "reading",
                rel,
                std::io::Error::other("not a regular file"),
            )),
            Some(EntryKind::File) => File::open(&path).map_err(|err| io_err("opening", rel, err)),
        }
    }

    /// A folder inside this one, links refused.
    pub(super) fn child(&self, rel: &RelPath, name: &str) -> Result<Dir, WorkspaceError> {
        let path = rel.as_str().to_owned();
        match self.stat(rel, name)?.map(|(kind, _)| kind) {
            Some(EntryKind::Directory) => Ok(Dir(self.0.join(name))),
            Some(EntryKind::Symlink) => Err(WorkspaceError::Symlink { path }),
            Some(EntryKind::File | EntryKind::Other) => Err(WorkspaceError::NotDirectory { path }),
            None => Err(WorkspaceError::NotFound { path }),
        }
    }

    /// What `name` is and whether it is read-only, without following a link.
    pub(super) fn stat(
        &self,
        rel: &RelPath,
        name: &str,
    ) -> Result<Option<(EntryKind, Mode)>, WorkspaceError> {
        match std::fs::symlink_metadata(self.0.join(name)) {
            Ok(meta) => Ok(Some((kind(&meta), meta.permissions().readonly()))),
            Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
            Err(err) => Err(io_err("inspecting", rel, err)),
        }
    }

    pub(super) fn entries(&self, rel: &RelPath) -> Result<Vec<DirEntry>, WorkspaceError> {
        let listing = std::fs::read_dir(&self.0).map_err(|err| io_err("listing", rel, err))?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|err| io_err("listing", rel, err))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = look(&entry.path()).unwrap_or(EntryKind::Other);
            entries.push(DirEntry { name, kind });
        }
        Ok(entries)
    }

    pub(super) fn create_temp(
        &self,
        rel: &RelPath,
        name: &str,
    ) -> Result<(String, File), WorkspaceError> {
        loop {
            let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let temp = format!(".{name}.cairn-{}-{n}.tmp", std::process::id());
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.0.join(&temp))
            {
                Ok(file) => return Ok((temp, file)),
                Err(err) if err.kind() == ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(io_err("writing", rel, err)),
            }
        }
    }

    /// Moves `from` over `to` (replacing it, as `MoveFileEx` with
    /// `MOVEFILE_REPLACE_EXISTING` does).
    pub(super) fn rename(&self, rel: &RelPath, from: &str, to: &str) -> Result<(), WorkspaceError> {
        std::fs::rename(self.0.join(from), self.0.join(to))
            .map_err(|err| io_err("writing", rel, err))
    }

    pub(super) fn remove(&self, rel: &RelPath, name: &str) -> Result<(), WorkspaceError> {
        std::fs::remove_file(self.0.join(name)).map_err(|err| io_err("removing", rel, err))
    }

    pub(super) fn remove_quietly(&self, name: &str) {
        // Best effort: the temp file is ours and harmless if it survives a failure.
        let _ = std::fs::remove_file(self.0.join(name));
    }
}

/// Keeps a replaced file read-only if it was.
pub(super) fn set_permissions(file: &File, readonly: Mode) -> std::io::Result<()> {
    let mut permissions = file.metadata()?.permissions();
    permissions.set_readonly(readonly);
    file.set_permissions(permissions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wine 8.0 cannot make a junction or a symbolic link (`mklink /J` fails, and
    /// `CreateSymbolicLinkW` succeeds making nothing), so what one looks like is
    /// given here: a junction is a folder whose attributes mark a reparse point.
    #[test]
    fn a_junction_or_any_reparse_point_is_a_link() {
        const DIRECTORY: u32 = 0x10;
        assert_eq!(
            kind_of(DIRECTORY | REPARSE_POINT, false, true, false),
            EntryKind::Symlink,
            "a junction"
        );
        assert_eq!(
            kind_of(0x20 | REPARSE_POINT, false, false, true),
            EntryKind::Symlink
        );
        assert_eq!(kind_of(DIRECTORY, true, true, false), EntryKind::Symlink);
        assert_eq!(kind_of(DIRECTORY, false, true, false), EntryKind::Directory);
        assert_eq!(kind_of(0x20, false, false, true), EntryKind::File);
    }
}
