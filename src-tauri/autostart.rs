//! Starting Cairn at login, hidden in the tray: an XDG autostart entry
//! (`$XDG_CONFIG_HOME/autostart/cairn.desktop`), which every Linux desktop session
//! reads. The entry is the setting's effect; Settings keeps the choice.

use std::io;
use std::path::{Path, PathBuf};

const FILE: &str = "cairn.desktop";

/// The autostart entry's path for the user whose config folder is `config_home`.
pub fn path(config_home: &Path) -> PathBuf {
    config_home.join("autostart").join(FILE)
}

/// The user's config folder (`$XDG_CONFIG_HOME`, else `~/.config`), if known.
pub fn config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
}

/// Writes the entry that starts `exe` hidden at login, or removes it.
pub fn apply(enabled: bool, config_home: &Path, exe: &Path) -> io::Result<()> {
    let path = path(config_home);
    if enabled {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::write(&path, entry(exe))
    } else {
        match std::fs::remove_file(&path) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            done => done,
        }
    }
}

fn entry(exe: &Path) -> String {
    format!(
        "[Desktop Entry]\nType=Application\nName=Cairn\nComment=Cairn in the tray, ready for \
         the summon shortcut\nExec={} --hidden\nIcon=cairn\nTerminal=false\n\
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
    use super::{apply, exec_argument, path};

    #[test]
    fn the_entry_starts_the_app_hidden_and_goes_away_when_turned_off() {
        let home = tempfile::tempdir().unwrap();
        let exe = std::path::Path::new("/opt/My Apps/cairn-desktop");
        apply(true, home.path(), exe).unwrap();
        let written = std::fs::read_to_string(path(home.path())).unwrap();
        assert!(
            written.contains("\nExec=\"/opt/My Apps/cairn-desktop\" --hidden\n"),
            "{written}"
        );
        assert!(written.starts_with("[Desktop Entry]\nType=Application\n"));
        apply(false, home.path(), exe).unwrap();
        assert!(!path(home.path()).exists());
        // Turning off what is already off is not an error.
        apply(false, home.path(), exe).unwrap();
    }

    #[test]
    fn reserved_characters_in_the_path_are_escaped() {
        assert_eq!(exec_argument("/a/b"), "\"/a/b\"");
        assert_eq!(exec_argument("/a/100%"), "\"/a/100%%\"");
        assert_eq!(exec_argument("/a/$x\"y"), "\"/a/\\\\$x\\\\\"y\"");
    }
}
