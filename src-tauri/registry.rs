//! The current user's registry (`HKEY_CURRENT_USER`), for the few values the app keeps
//! there: the login entry and the name its notifications go under.

use std::io;

use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_SUCCESS, WIN32_ERROR};
use windows_sys::Win32::System::Registry::{
    HKEY_CURRENT_USER, REG_SZ, RegDeleteKeyValueW, RegSetKeyValueW,
};

/// Sets `name` under `key` (made if missing) to the string `data`.
#[allow(unsafe_code)]
pub fn set_string(key: &str, name: &str, data: &str) -> io::Result<()> {
    let (key, name, data) = (wide(key), wide(name), wide(data));
    let bytes = u32::try_from(data.len() * 2)
        .map_err(|_| io::Error::other("the value is too long for the registry"))?;
    // SAFETY: the names and the data are NUL-terminated UTF-16 that outlive the call;
    // `bytes` is the data's length, its NUL included, as REG_SZ asks.
    let status = unsafe {
        RegSetKeyValueW(
            HKEY_CURRENT_USER,
            key.as_ptr(),
            name.as_ptr(),
            REG_SZ,
            data.as_ptr().cast(),
            bytes,
        )
    };
    checked(status)
}

/// Deletes `name` under `key`; one that is not there is not an error.
#[allow(unsafe_code)]
pub fn delete_value(key: &str, name: &str) -> io::Result<()> {
    let (key, name) = (wide(key), wide(name));
    // SAFETY: both names are NUL-terminated UTF-16 that outlive the call.
    let status = unsafe { RegDeleteKeyValueW(HKEY_CURRENT_USER, key.as_ptr(), name.as_ptr()) };
    match status {
        ERROR_FILE_NOT_FOUND => Ok(()),
        status => checked(status),
    }
}

/// What `name` under `key` holds, read back through `reg.exe` as a user (or Windows
/// itself) would see it.
#[cfg(test)]
pub fn held(key: &str, name: &str) -> Option<String> {
    let out = std::process::Command::new("reg")
        .args(["query", &format!(r"HKCU\{key}"), "/v", name])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix(name)?
                .trim()
                .strip_prefix("REG_SZ")
        })
        .map(|value| value.trim().to_owned())
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
