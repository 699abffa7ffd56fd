//! The `Run` key: a value named `Cairn` under
//! `HKEY_CURRENT_USER\Software\Microsoft\Windows\CurrentVersion\Run`, the command
//! Windows starts when this user logs in.

use std::fmt;
use std::io;
use std::path::Path;

use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_SUCCESS, WIN32_ERROR};
use windows_sys::Win32::System::Registry::{
    HKEY_CURRENT_USER, REG_SZ, RegDeleteKeyValueW, RegSetKeyValueW,
};

use super::HIDDEN;

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
    #[allow(unsafe_code)]
    pub fn apply(&self, enabled: bool, exe: &Path) -> io::Result<()> {
        let (key, value) = (wide(KEY), wide(VALUE));
        if enabled {
            let command = wide(&command(exe));
            let bytes = u32::try_from(command.len() * 2)
                .map_err(|_| io::Error::other("the program's path is too long"))?;
            // SAFETY: the names and the data are NUL-terminated UTF-16 that outlive
            // the call; `bytes` is the data's length, its NUL included, as REG_SZ asks.
            let status = unsafe {
                RegSetKeyValueW(
                    HKEY_CURRENT_USER,
                    key.as_ptr(),
                    value.as_ptr(),
                    REG_SZ,
                    command.as_ptr().cast(),
                    bytes,
                )
            };
            checked(status)
        } else {
            // SAFETY: both names are NUL-terminated UTF-16 that outlive the call.
            let status =
                unsafe { RegDeleteKeyValueW(HKEY_CURRENT_USER, key.as_ptr(), value.as_ptr()) };
            match status {
                ERROR_FILE_NOT_FOUND => Ok(()),
                status => checked(status),
            }
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

fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(std::iter::once(0)).collect()
}

fn checked(status: WIN32_ERROR) -> io::Result<()> {
    match status {
        ERROR_SUCCESS => Ok(()),
        code => Err(io::Error::from_raw_os_error(code as i32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the `Run` value holds now, read back through `reg.exe` as a user (or
    /// Windows at login) would see it.
    fn held() -> Option<String> {
        let out = std::process::Command::new("reg")
            .args(["query", &format!(r"HKCU\{KEY}"), "/v", VALUE])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|line| {
                line.trim()
                    .strip_prefix(VALUE)?
                    .trim()
                    .strip_prefix("REG_SZ")
            })
            .map(|value| value.trim().to_owned())
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
