//! Whether a process of this machine still runs, asked of the OS: on unix a signal 0
//! (delivered to nobody, refused only where there is nobody), on Windows the process's
//! exit code (`STILL_ACTIVE` while it runs). Where the OS cannot say, the process is
//! taken to run: a mark is then only lifted by its own process.

#[cfg(unix)]
pub(crate) fn still_running(pid: i64) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        // Someone else's process: it runs.
        Err(rustix::io::Errno::PERM) => true,
        Err(_) => false,
    }
}

#[cfg(windows)]
#[allow(unsafe_code)]
pub(crate) fn still_running(pid: i64) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    let Ok(pid) = u32::try_from(pid) else {
        return false;
    };
    // SAFETY: opens a handle to query only; checked for null and closed below.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        // No such process, or not ours to ask about: only the first is an answer.
        return std::io::Error::last_os_error().raw_os_error() == Some(5);
    }
    let mut code = 0u32;
    // SAFETY: `process` is open; `code` outlives the call.
    let asked = unsafe { GetExitCodeProcess(process, &raw mut code) };
    // SAFETY: closed once, here.
    unsafe { CloseHandle(process) };
    asked == 0 || code == STILL_ACTIVE as u32
}

#[cfg(not(any(unix, windows)))]
pub(crate) fn still_running(_: i64) -> bool {
    true
}
