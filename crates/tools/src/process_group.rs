//! A child's whole process group, so that what it started ends with it (a shell's
//! pipeline, `npx`'s node).

/// A process group, killed when dropped.
pub(crate) struct Group(Option<rustix::process::Pid>);

impl Group {
    pub(crate) fn of(pid: Option<u32>) -> Self {
        Self(
            pid.and_then(|pid| i32::try_from(pid).ok())
                .and_then(rustix::process::Pid::from_raw),
        )
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // The group may be gone already; that is the goal.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}
