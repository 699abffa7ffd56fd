//! A child's whole process tree, so that what it started ends with it (a shell's
//! pipeline, `npx`'s node): on unix its own process group, on Windows a Job Object
//! that kills every process in it when it is closed.

use tokio::process::{Child, Command};

#[cfg(unix)]
#[path = "process_tree/unix.rs"]
mod imp;

#[cfg(windows)]
#[path = "process_tree/windows.rs"]
mod imp;

/// The tree of one child, ended when dropped.
pub(crate) struct Tree {
    _ended_when_dropped: imp::Tree,
}

impl Tree {
    /// Readies `command` so that everything its child starts can be ended with it.
    pub(crate) fn prepare(command: &mut Command) {
        imp::prepare(command);
    }

    /// The tree of `child`, just spawned from a prepared command.
    pub(crate) fn of(child: &Child) -> Self {
        Self {
            _ended_when_dropped: imp::Tree::of(child),
        }
    }
}
