//! The XDG autostart entry (`$XDG_CONFIG_HOME/autostart/cairn.desktop`), which every
//! Linux desktop session reads.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::HIDDEN;

const FILE: &str = "cairn.desktop";

/// Where the entry goes for one user.
#[derive(Debug, Clone)]
pub struct Entry {
    path: PathBuf,
}

impl Entry {
    /// The current user's, from `$XDG_CONFIG_HOME` (else `~/.config`); `None` when
    /// neither is set.
    pub fn for_user() -> Option<Self> {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
            .map(|config_home| Self::in_config(&config_home))
    }

    /// The entry of the user whose config folder is `config_home`.
    pub fn in_config(config_home: &Path) -> Self {
        Self {
            path: config_home.join("autostart").join(FILE),
        }
    }

    /// Writes the entry that starts `exe` hidden at login, or removes it.
    pub fn apply(&self, enabled: bool, exe: &Path) -> io::Result<()> {
        if enabled {
            if let Some(folder) = self.path.parent() {
                std::fs::create_dir_all(folder)?;
            }
            std::fs::write(&self.path, entry(exe))
        } else {
            match std::fs::remove_file(&self.path) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                done => done,
            }
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the autostart entry {}", self.path.display())
    }
}

fn entry(exe: &Path) -> String {
    format!(
        "[Desktop Entry]\nType=Application\nName=Cairn\nComment=Cairn in the tray, ready for \
         the summon shortcut\nExec={} {HIDDEN}\nIcon=cairn\nTerminal=false\n\
         X-GNOME-Autostart-enabled=true\n",
        exec_argument(&exe.to_string_lossy())
    )
}

/// A path as one argument of an `Exec` line: quoted, with what the desktop entry
/// specification reserves inside quotes escaped, and `%` doubled (a field code
/// otherwise).
fn exec_argument(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for c in path.chars() {
        match c {
            '"' | '`' | '$' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            other => out.push(other),
        }
    }
    out.push('"');
    // The entry is an INI-style file, where a backslash is itself escaped again.
    out.replace('\\', "\\\\")
}

#[cfg(test)]
mod tests {
    use super::{Entry, exec_argument};

    #[test]
    fn the_entry_starts_the_app_hidden_and_goes_away_when_turned_off() {
        let home = tempfile::tempdir().unwrap();
        let exe = std::path::Path::new("/opt/My Apps/cairn-desktop");
        let entry = Entry::in_config(home.path());
        let path = home.path().join("autostart/cairn.desktop");
        assert_eq!(
            entry.to_string(),
            format!("the autostart entry {}", path.display())
        );
        entry.apply(true, exe).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(
            written.contains("\nExec=\"/opt/My Apps/cairn-desktop\" --hidden\n"),
            "{written}"
        );
        assert!(written.starts_with("[Desktop Entry]\nType=Application\n"));
        entry.apply(false, exe).unwrap();
        assert!(!path.exists());
        // Turning off what is already off is not an error.
        entry.apply(false, exe).unwrap();
    }

    #[test]
    fn reserved_characters_in_the_path_are_escaped() {
        assert_eq!(exec_argument("/a/b"), "\"/a/b\"");
        assert_eq!(exec_argument("/a/100%"), "\"/a/100%%\"");
        assert_eq!(exec_argument("/a/$x\"y"), "\"/a/\\\\$x\\\\\"y\"");
    }
}
