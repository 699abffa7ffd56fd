//! The `Run` key: a value named `Cairn` under
//! `HKEY_CURRENT_USER\Software\Microsoft\Windows\CurrentVersion\Run`, the command
//! Windows starts when this user logs in.

use std::fmt;
use std::io;
use std::path::Path;

use super::HIDDEN;
use crate::registry;

const KEY: &str = r"Software\Microsoft\Windows\CurrentVersion\Run";
const VALUE: &str = "Cairn";

/// The current user's `Run` value for Cairn.
#[derive(Debug, Clone)]
pub struct Entry;

impl Entry {
    /// Every Windows user has a `Run` key.
    pub fn for_user() -> Option<Self> {
        Some(Self)
    }

    /// Sets the value that starts `exe` hidden at login, or deletes it.
    pub fn apply(&self, enabled: bool, exe: &Path) -> io::Result<()> {
        if enabled {
            registry::set_string(KEY, VALUE, &command(exe))
        } else {
            registry::delete_value(KEY, VALUE)
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, r"the login entry HKEY_CURRENT_USER\{KEY}\{VALUE}")
    }
}

/// The command line the value holds: the program quoted (its folder may have spaces).
fn command(exe: &Path) -> String {
    format!("\"{}\" {HIDDEN}", exe.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> Option<String> {
        registry::held(KEY, VALUE)
    }

    #[test]
    fn the_value_starts_the_app_hidden_and_goes_away_when_turned_off() {
        let exe =
            Path::new(r"C:\Users\Ada Lovelace\AppData\Local\Programs\Cairn\cairn-desktop.exe");
        Entry.apply(true, exe).unwrap();
        assert_eq!(
            held().as_deref(),
            Some(
                r#""C:\Users\Ada Lovelace\AppData\Local\Programs\Cairn\cairn-desktop.exe" --hidden"#
            )
        );
        Entry.apply(false, exe).unwrap();
        assert_eq!(held(), None);
        // Turning off what is already off is not an error.
        Entry.apply(false, exe).unwrap();
    }
}
