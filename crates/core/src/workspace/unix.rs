//! The confinement on unix (Linux, macOS), on `openat` and friends.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{DirEntry, EntryKind, RelPath, WorkspaceError, io_err};

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

pub(super) struct RootDir(OwnedFd);

/// An open directory inside the workspace.
pub(super) struct Dir(OwnedFd);

impl RootDir {
    pub(super) fn open(root: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(root, DIR_FLAGS, Mode::empty())?;
        Ok(Self(fd))
    }

    /// Whether the root holds an entry named `name` (of any kind, links too).
    pub(super) fn has_entry(&self, name: &str) -> bool {
        !matches!(
            rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW),
            Err(Errno::NOENT)
        )
    }

    /// Opens the directory `parts` names, one component at a time, refusing links.
    pub(super) fn walk(
        &self,
        rel: &RelPath,
        parts: &[String],
        create: bool,
    ) -> Result<Dir, WorkspaceError> {
        let mut current = rustix::fs::openat(&self.0, ".", DIR_FLAGS, Mode::empty())
            .map_err(|e| io_err("opening", rel, e.into()))?;
        for part in parts {
            current = match rustix::fs::openat(&current, part.as_str(), DIR_FLAGS, Mode::empty()) {
                Ok(next) => next,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&current, part.as_str(), Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => {
                            return Err(io_err("creating a folder for", rel, e.into()));
                        }
                    }
                    rustix::fs::openat(&current, part.as_str(), DIR_FLAGS, Mode::empty())
                        .map_err(|e| walk_error(&current, part, rel, e))?
                }
                Err(e) => return Err(walk_error(&current, part, rel, e)),
            };
        }
        Ok(Dir(current))
    }
}

fn walk_error(dir: &OwnedFd, part: &str, rel: &RelPath, errno: Errno) -> WorkspaceError {
    let path = rel.as_str().to_owned();
    match errno {
        // O_NOFOLLOW|O_DIRECTORY on a link fails with ELOOP or ENOTDIR depending on
        // the link's target, so ENOTDIR alone does not say whether a link is in the
        // way: look at the entry itself.
        Errno::LOOP => WorkspaceError::Symlink { path },
        Errno::NOTDIR => match rustix::fs::statat(dir, part, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                WorkspaceError::Symlink { path }
            }
            _ => WorkspaceError::NotDirectory { path },
        },
        Errno::NOENT => WorkspaceError::NotFound {
            path: rel.as_str().to_owned(),
        },
        other => io_err("opening", rel, other.into()),
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Dir {
    pub(super) fn open_file(&self, rel: &RelPath, name: &str) -> Result<File, WorkspaceError> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::openat(&self.0, name, flags, Mode::empty()).map_err(|e| match e {
            Errno::LOOP => WorkspaceError::Symlink {
                path: rel.as_str().to_owned(),
            },
            Errno::NOENT => WorkspaceError::NotFound {
                path: rel.as_str().to_owned(),
            },
            other => io_err("opening", rel, other.into()),
        })?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_err("reading", rel, e.into()))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok(File::from(fd)),
            FileType::Directory => Err(WorkspaceError::IsDirectory {
                path: rel.as_str().to_owned(),
            }),
            _ => Err(io_err(
                "reading",
                rel,
                std::io::Error::other("not a regular file"),
            )),
        }
    }

    /// A folder inside this one, links refused.
    pub(super) fn child(&self, rel: &RelPath, name: &str) -> Result<Dir, WorkspaceError> {
        rustix::fs::openat(&self.0, name, DIR_FLAGS, Mode::empty())
            .map(Dir)
            .map_err(|e| walk_error(&self.0, name, rel, e))
    }

    /// What `name` is and its mode bits, without following a link.
    pub(super) fn stat(
        &self,
        rel: &RelPath,
        name: &str,
    ) -> Result<Option<(EntryKind, Mode)>, WorkspaceError> {
        match rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some((
                kind(FileType::from_raw_mode(stat.st_mode)),
                Mode::from_raw_mode(stat.st_mode),
            ))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_err("inspecting", rel, e.into())),
        }
    }

    pub(super) fn entries(&self, rel: &RelPath) -> Result<Vec<DirEntry>, WorkspaceError> {
        let mut dir =
            rustix::fs::Dir::read_from(&self.0).map_err(|e| io_err("listing", rel, e.into()))?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|e| io_err("listing", rel, e.into()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => self
                    .stat(rel, &name)?
                    .map_or(EntryKind::Other, |(kind, _)| kind),
                known => kind(known),
            };
            entries.push(DirEntry { name, kind });
        }
        Ok(entries)
    }

    pub(super) fn create_temp(
        &self,
        rel: &RelPath,
        name: &str,
    ) -> Result<(String, File), WorkspaceError> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        loop {
            let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let temp = format!(".{name}.cairn-{}-{n}.tmp", std::process::id());
            match rustix::fs::openat(&self.0, temp.as_str(), flags, Mode::from_raw_mode(0o644)) {
                Ok(fd) => return Ok((temp, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(io_err("writing", rel, e.into())),
            }
        }
    }

    pub(super) fn rename(&self, rel: &RelPath, from: &str, to: &str) -> Result<(), WorkspaceError> {
        rustix::fs::renameat(&self.0, from, &self.0, to)
            .map_err(|e| io_err("writing", rel, e.into()))
    }

    pub(super) fn remove(&self, rel: &RelPath, name: &str) -> Result<(), WorkspaceError> {
        rustix::fs::unlinkat(&self.0, name, AtFlags::empty())
            .map_err(|e| io_err("removing", rel, e.into()))
    }

    pub(super) fn remove_quietly(&self, name: &str) {
        // Best effort: the temp file is ours and harmless if it survives a failure.
        let _ = rustix::fs::unlinkat(&self.0, name, AtFlags::empty());
    }
}

/// Gives `file` the read, write and execute bits of `mode` (set-id and sticky
/// bits are not carried over to a file the model wrote).
pub(super) fn set_permissions(file: &File, mode: Mode) -> std::io::Result<()> {
    let bits = mode & (Mode::RWXU | Mode::RWXG | Mode::RWXO);
    Ok(rustix::fs::fchmod(file, bits)?)
}

fn kind(file_type: FileType) -> EntryKind {
    match file_type {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Directory,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}
