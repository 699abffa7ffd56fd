//! The tree as a process group: the child leads a new one, and killing the group
//! kills everything in it that did not leave it on purpose.

use tokio::process::{Child, Command};

pub(super) fn prepare(command: &mut Command) {
    command.process_group(0);
}

pub(super) struct Tree(Option<rustix::process::Pid>);

impl Tree {
    pub(super) fn of(child: &Child) -> Self {
        Self(
            child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .and_then(rustix::process::Pid::from_raw),
        )
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // The group may be gone already; that is the goal.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}
