//! The thread's workspace folder, and the only way tools reach the disk.
//!
//! path text → lexical check (relative, no `..`) → walk from the root's open directory
//! one component at a time with `O_NOFOLLOW` → act on the final directory handle.
//!
//! Because every step opens relative to a directory handle the walk already holds, a
//! symbolic link planted anywhere along the path between a check and a write cannot
//! redirect the write: the walk never follows links, it refuses them.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest file `read` loads; larger files are refused rather than exhausting memory.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("the workspace folder {root} cannot be used: {source}")]
    Root {
        root: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` is outside the workspace: {why}")]
    Escapes { path: String, why: &'static str },
    #[error("`{path}` goes through a symbolic link; links are never followed inside the workspace")]
    Symlink { path: String },
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}` is a directory, not a file")]
    IsDirectory { path: String },
    #[error("`{path}` is not a directory")]
    NotDirectory { path: String },
    #[error("`{path}` is {size} bytes; files over {limit} bytes are not read")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{op} `{path}` failed: {source}")]
    Io {
        op: &'static str,
        path: String,
        source: std::io::Error,
    },
}

/// What a directory entry is, without following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub kind: EntryKind,
}

/// Whether a write made a new file or replaced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    Replaced,
}

/// A workspace-relative path that passed the lexical checks: its normal components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelPath {
    text: String,
    parts: Vec<String>,
}

impl RelPath {
    /// Checks what the model wrote. Absolute paths, `..` and `~` are refused outright
    /// rather than resolved: a model that writes them has misunderstood where it is,
    /// and saying so teaches it more than silently re-rooting the path. (An absolute
    /// path inside the root is the one exception, and is made relative before it gets
    /// here: [`Workspace::relative`].)
    pub fn parse(text: &str) -> Result<Self, WorkspaceError> {
        Self::parse_for(text, cfg!(windows))
    }

    /// [`RelPath::parse`] as on Windows (`windows`) or unix: Windows also takes `\` as
    /// a separator, and refuses names it reads as something else (see
    /// [`windows_name_problem`]). Both are checked on every machine's tests.
    fn parse_for(text: &str, windows: bool) -> Result<Self, WorkspaceError> {
        let escapes = |why| WorkspaceError::Escapes {
            path: text.to_owned(),
            why,
        };
        if text.contains('\0') {
            return Err(escapes("paths cannot contain NUL bytes"));
        }
        if text.starts_with('/') || text.starts_with('\\') || looks_like_drive(text) {
            return Err(escapes(
                "absolute paths are refused; give a path relative to the workspace root",
            ));
        }
        if text == "~" || text.starts_with("~/") {
            return Err(escapes(
                "`~` is the home folder; give a path relative to the workspace root",
            ));
        }
        let mut parts = Vec::new();
        let separator = |c: char| c == '/' || (windows && c == '\\');
        for part in text.split(separator) {
            match part {
                "" | "." => {}
                ".." => return Err(escapes("`..` is refused; paths must stay inside the root")),
                normal => {
                    if windows && let Some(why) = windows_name_problem(normal) {
                        return Err(escapes(why));
                    }
                    parts.push(normal.to_owned());
                }
            }
        }
        Ok(Self {
            text: text.to_owned(),
            parts,
        })
    }

    /// True for the workspace root itself (`.`, `""`, `./`).
    pub fn is_root(&self) -> bool {
        self.parts.is_empty()
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The path as rules match it: its normal components joined by `/` (`.` for the
    /// root).
    pub fn normalized(&self) -> String {
        if self.parts.is_empty() {
            ".".to_owned()
        } else {
            self.parts.join("/")
        }
    }

    fn split_last(&self) -> Option<(&[String], &str)> {
        self.parts
            .split_last()
            .map(|(last, parents)| (parents, last.as_str()))
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `path` relative to `root` where it is an absolute Windows path inside it, compared
/// as Windows compares them: either separator, any case, with or without the `\\?\`
/// prefix canonical paths have.
fn windows_inside(root: &str, path: &str) -> Option<String> {
    let plain = |text: &str| {
        let text = text.strip_prefix(r"\\?\").unwrap_or(text);
        text.replace('/', "\\").trim_end_matches('\\').to_owned()
    };
    let (root, path) = (plain(root), plain(path));
    if !looks_like_drive(&path) || path.len() < root.len() {
        return None;
    }
    let (head, rest) = path.split_at(root.len());
    if !head.eq_ignore_ascii_case(&root) {
        return None;
    }
    match rest.strip_prefix('\\') {
        Some(rest) => Some(rest.replace('\\', "/")),
        None if rest.is_empty() => Some(".".to_owned()),
        None => None,
    }
}

/// Why Windows would read `name` (one component of a path) as something other than a
/// file in its folder: `C:x` names a drive, `file:stream` a stream of `file`; `a.` and
/// `a ` are `a` (trailing dots and spaces are dropped, so `..` hides as `.. .`); `CON`,
/// `NUL`, `COM1` (with any extension) are devices.
fn windows_name_problem(name: &str) -> Option<&'static str> {
    if name.contains(':') {
        return Some(
            "`:` names a drive or a stream on Windows; give a plain path inside the workspace",
        );
    }
    if name.ends_with('.') || name.ends_with(' ') {
        return Some(
            "Windows drops a name's trailing dots and spaces; write the name without them",
        );
    }
    let stem = name
        .split('.')
        .next()
        .unwrap_or(name)
        .trim_end()
        .to_ascii_uppercase();
    let device = matches!(
        stem.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) || ((stem.starts_with("COM") || stem.starts_with("LPT"))
        && stem.len() == 4
        && stem.as_bytes()[3].is_ascii_digit());
    device.then_some("that name is a device on Windows, not a file")
}

fn looks_like_drive(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// What a file held before a write changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// There was no file: the write made it.
    Absent,
    Held(Vec<u8>),
    /// More than [`MAX_READ_BYTES`]: not kept.
    TooLarge,
}

/// Told of every file a workspace writes, with what the file held before, as the write
/// happens: how an answer's changes are kept so that they can be taken back (the
/// runtime stores them with the answer).
pub trait WriteLog: Send + Sync {
    /// `path` (relative to `root`, normalized) now holds `after`.
    fn wrote(&self, root: &Path, path: &str, before: Before, after: &[u8]);

    /// `path` is gone: a command removed it.
    fn removed(&self, root: &Path, path: &str, before: Before);
}

/// A workspace root, opened once; every file operation walks from this handle.
pub struct Workspace {
    root: PathBuf,
    dir: imp::RootDir,
    log: Option<Arc<dyn WriteLog>>,
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .finish()
    }
}

impl Workspace {
    /// Opens `root`, which must be an existing directory. The canonical path is kept
    /// for display; the open handle is what confines the operations.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let given = root.as_ref();
        let root_err = |source| WorkspaceError::Root {
            root: given.to_owned(),
            source,
        };
        let root = given.canonicalize().map_err(root_err)?;
        let dir = imp::RootDir::open(&root).map_err(root_err)?;
        Ok(Self {
            root,
            dir,
            log: None,
        })
    }

    /// The same workspace, telling `log` of every write.
    #[must_use]
    pub fn with_log(self, log: Arc<dyn WriteLog>) -> Self {
        Self {
            log: Some(log),
            ..self
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` relative to the root when it is an absolute path inside it (the root as
    /// the prompt shows it, `/home/me/proj/notes.md` → `notes.md`), else as written.
    /// Small models copy the folder they are shown into every path: refusing a path
    /// that names the right file taught them nothing (the task benchmark's runs sent
    /// it again word for word), so it is read as the file it names. An absolute path
    /// anywhere else is still refused by [`RelPath::parse`].
    ///
    /// The same for a path that starts with the root's own name where the root holds
    /// nothing of that name (`proj/notes.md` in `/home/me/proj`, and `proj` alone for
    /// the root itself): the prompt names the folder, and a small model put it before
    /// every path it wrote, or listed it to see the files.
    pub fn relative<'a>(&self, path: &'a str) -> std::borrow::Cow<'a, str> {
        // Windows compares paths without regard to case or separator.
        if cfg!(windows)
            && let Some(inside) = self
                .root
                .to_str()
                .and_then(|root| windows_inside(root, path))
        {
            return inside.into();
        }
        if !Path::new(path).is_absolute() {
            return self.without_own_name(path);
        }
        let Ok(inside) = Path::new(path).strip_prefix(&self.root) else {
            return path.into();
        };
        match inside.to_str() {
            Some("") => ".".into(),
            Some(inside) => inside.to_owned().into(),
            None => path.into(),
        }
    }

    /// `path` without the root's own name before it, when the root holds nothing of
    /// that name.
    fn without_own_name<'a>(&self, path: &'a str) -> std::borrow::Cow<'a, str> {
        let Some(name) = self.root.file_name().and_then(|name| name.to_str()) else {
            return path.into();
        };
        let Some(rest) = path.strip_prefix(name).and_then(|rest| {
            if rest.is_empty() || rest == "/" {
                Some(".")
            } else {
                rest.strip_prefix('/')
            }
        }) else {
            return path.into();
        };
        if self.dir.has_entry(name) {
            return path.into();
        }
        rest.to_owned().into()
    }

    /// `path` as a rule reads it: relative to the root and normalized (`./a//b` →
    /// `a/b`), or as written when it would leave the workspace (the call fails anyway,
    /// and deny rules still see it).
    pub fn subject(&self, path: &str) -> String {
        let relative = self.relative(path);
        RelPath::parse(&relative).map_or_else(|_| path.to_owned(), |rel| rel.normalized())
    }

    /// What the model wrote, checked as a path inside the workspace.
    fn parse(&self, path: &str) -> Result<RelPath, WorkspaceError> {
        RelPath::parse(&self.relative(path))
    }

    /// Reads a whole regular file.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, WorkspaceError> {
        self.read_at_most(path, MAX_READ_BYTES)
    }

    /// Reads a whole regular file of at most `limit` bytes; a larger one is refused
    /// before it is read.
    pub fn read_at_most(&self, path: &str, limit: u64) -> Result<Vec<u8>, WorkspaceError> {
        let rel = self.parse(path)?;
        let Some((parents, name)) = rel.split_last() else {
            return Err(WorkspaceError::IsDirectory { path: rel.text });
        };
        let parent = self.dir.walk(&rel, parents, false)?;
        let mut file = parent.open_file(&rel, name)?;
        let size = file
            .metadata()
            .map_err(|source| io_err("reading", &rel, source))?
            .len();
        if size > limit {
            return Err(WorkspaceError::TooLarge {
                path: rel.text,
                size,
                limit,
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.read_to_end(&mut bytes)
            .map_err(|source| io_err("reading", &rel, source))?;
        Ok(bytes)
    }

    /// The entries of a directory, sorted by name.
    pub fn list(&self, path: &str) -> Result<Vec<DirEntry>, WorkspaceError> {
        let rel = self.parse(path)?;
        let dir = self.dir.walk(&rel, &rel.parts, false)?;
        let mut entries = dir.entries(&rel)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// The files under `path`, as workspace-relative paths, at most `limit` of them
    /// (the flag says whether some were left out). Links are not followed; hidden
    /// folders and the usual dependency and build folders are skipped, as a search
    /// should.
    pub fn files(&self, path: &str, limit: usize) -> Result<(Vec<String>, bool), WorkspaceError> {
        let rel = self.parse(path)?;
        let start = self.dir.walk(&rel, &rel.parts, false)?;
        let prefix = if rel.is_root() {
            String::new()
        } else {
            format!("{}/", rel.normalized())
        };
        let mut found = Vec::new();
        let mut pending = vec![(start, prefix)];
        while let Some((dir, prefix)) = pending.pop() {
            let mut entries = dir.entries(&rel)?;
            entries.sort_by(|a, b| b.name.cmp(&a.name));
            for entry in entries {
                let child = format!("{prefix}{}", entry.name);
                match entry.kind {
                    EntryKind::File => {
                        if found.len() == limit {
                            return Ok((found, true));
                        }
                        found.push(child);
                    }
                    EntryKind::Directory if !skipped_folder(&entry.name) => {
                        // A folder swapped for a link since the listing is refused
                        // by the walk, and simply not searched.
                        if let Ok(inner) = dir.child(&rel, &entry.name) {
                            pending.push((inner, format!("{child}/")));
                        }
                    }
                    EntryKind::Directory | EntryKind::Symlink | EntryKind::Other => {}
                }
            }
        }
        found.sort();
        Ok((found, false))
    }

    /// Writes `contents` to `path`, creating missing parent directories. The file is
    /// written beside its destination and renamed over it, so a reader (or a crash)
    /// never sees half a file.
    pub fn write(&self, path: &str, contents: &[u8]) -> Result<WriteOutcome, WorkspaceError> {
        let rel = self.parse(path)?;
        let Some((parents, name)) = rel.split_last() else {
            return Err(WorkspaceError::IsDirectory { path: rel.text });
        };
        let parent = self.dir.walk(&rel, parents, true)?;
        let existing = parent.stat(&rel, name)?;
        match existing.map(|(kind, _)| kind) {
            Some(EntryKind::Directory) => {
                return Err(WorkspaceError::IsDirectory { path: rel.text });
            }
            Some(EntryKind::Symlink) => return Err(WorkspaceError::Symlink { path: rel.text }),
            Some(EntryKind::File | EntryKind::Other) | None => {}
        }
        let before = match (&self.log, existing) {
            (None, _) => None,
            (Some(_), None) => Some(Before::Absent),
            (Some(_), Some(_)) => Some(match self.read(&rel.text) {
                Ok(bytes) => Before::Held(bytes),
                Err(WorkspaceError::TooLarge { .. }) => Before::TooLarge,
                Err(err) => return Err(err),
            }),
        };
        let (temp_name, mut temp) = parent.create_temp(&rel, name)?;
        // The new file replaces the old one: it keeps the old one's permissions (an
        // edited script stays executable).
        let written = match existing {
            Some((EntryKind::File, mode)) => imp::set_permissions(&temp, mode),
            _ => Ok(()),
        }
        .and_then(|()| temp.write_all(contents))
        .and_then(|()| temp.sync_data())
        .map_err(|source| io_err("writing", &rel, source));
        drop(temp);
        if let Err(err) = written.and_then(|()| parent.rename(&rel, &temp_name, name)) {
            parent.remove_quietly(&temp_name);
            return Err(err);
        }
        if let (Some(log), Some(before)) = (&self.log, before) {
            log.wrote(&self.root, &rel.text, before, contents);
        }
        Ok(if existing.is_some() {
            WriteOutcome::Replaced
        } else {
            WriteOutcome::Created
        })
    }

    /// Tells the log of a change made to the workspace by something else than its own
    /// writes (a command): `path` (relative, normalized) held `before` and now holds
    /// `after`, or is gone.
    pub fn changed_by_others(&self, path: &str, before: Before, after: Option<&[u8]>) {
        let Some(log) = &self.log else {
            return;
        };
        match after {
            Some(after) => log.wrote(&self.root, path, before, after),
            None => log.removed(&self.root, path, before),
        }
    }

    /// Whether the workspace's changes are kept with an answer, to be taken back.
    pub fn is_logged(&self) -> bool {
        self.log.is_some()
    }

    /// Removes the regular file at `path` (never a folder or a link), as taking back
    /// a file an answer created does. Not told to the log.
    pub fn remove(&self, path: &str) -> Result<(), WorkspaceError> {
        let rel = self.parse(path)?;
        let Some((parents, name)) = rel.split_last() else {
            return Err(WorkspaceError::IsDirectory { path: rel.text });
        };
        let parent = self.dir.walk(&rel, parents, false)?;
        match parent.stat(&rel, name)?.map(|(kind, _)| kind) {
            None => Err(WorkspaceError::NotFound { path: rel.text }),
            Some(EntryKind::Directory) => Err(WorkspaceError::IsDirectory { path: rel.text }),
            Some(EntryKind::Symlink) => Err(WorkspaceError::Symlink { path: rel.text }),
            Some(EntryKind::File | EntryKind::Other) => parent.remove(&rel, name),
        }
    }
}

/// Folders a search walks past: hidden ones (`.git`) and dependency or build output.
fn skipped_folder(name: &str) -> bool {
    name.starts_with('.')
        || matches!(
            name,
            "node_modules" | "target" | "dist" | "build" | "__pycache__" | "venv"
        )
}

fn io_err(op: &'static str, rel: &RelPath, source: std::io::Error) -> WorkspaceError {
    WorkspaceError::Io {
        op,
        path: rel.text.clone(),
        source,
    }
}

#[cfg(unix)]
#[path = "unix.rs"]
mod imp;

#[cfg(windows)]
#[path = "windows.rs"]
mod imp;

#[cfg(not(any(unix, windows)))]
compile_error!("the workspace confinement is implemented for unix and Windows only");

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        matches!(
            RelPath::parse_for(text, true),
            Err(WorkspaceError::Escapes { .. })
        )
    }

    #[test]
    fn a_file_over_the_limit_asked_for_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "12345").unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        assert_eq!(workspace.read_at_most("a.txt", 5).unwrap(), b"12345");
        assert!(matches!(
            workspace.read_at_most("a.txt", 4),
            Err(WorkspaceError::TooLarge {
                size: 5,
                limit: 4,
                ..
            })
        ));
    }

    #[test]
    fn windows_escapes_are_refused_on_every_machine() {
        for escape in [
            r"C:\Windows\win.ini",
            "c:/windows/win.ini",
            r"C:secret.txt",
            r"\\server\share\file",
            r"\\?\C:\Windows",
            r"\\.\PhysicalDrive0",
            r"\Windows",
            r"..\outside.txt",
            r"docs\..\..\outside.txt",
            r"notes.md:hidden",
            "CON",
            "nul.txt",
            r"logs\COM1.log",
            "lpt9",
            "name.",
            "trailing ",
            ".. .",
        ] {
            assert!(refused(escape), "{escape} was let through");
        }
        let inside = RelPath::parse_for(r"docs\notes.md", true).unwrap();
        assert_eq!(inside.normalized(), "docs/notes.md");
        for fine in ["console.md", "COM10.txt", "a.b.c", ".gitignore", "notes.md"] {
            assert!(!refused(fine), "{fine} was refused");
        }
        // On unix a backslash is a character of a name, and `:` is too.
        assert_eq!(
            RelPath::parse_for(r"a\b:c", false).unwrap().normalized(),
            r"a\b:c"
        );
    }

    #[test]
    fn an_absolute_windows_path_inside_the_root_is_read_as_windows_compares_paths() {
        let root = r"\\?\C:\Users\me\proj";
        assert_eq!(
            windows_inside(root, r"C:\Users\me\proj\notes.md").as_deref(),
            Some("notes.md")
        );
        assert_eq!(
            windows_inside(root, "c:/users/ME/Proj/docs/a.md").as_deref(),
            Some("docs/a.md"),
            "either separator, any case"
        );
        assert_eq!(
            windows_inside(root, r"C:\Users\me\proj").as_deref(),
            Some(".")
        );
        assert_eq!(windows_inside(root, r"C:\Users\me\project\a.md"), None);
        assert_eq!(windows_inside(root, r"D:\Users\me\proj\a.md"), None);
        assert_eq!(windows_inside(root, "notes.md"), None);
    }
}
