//! Ctrl-C, listened for from the moment `cairn run` starts. A listener made only once
//! the turn is under way leaves a window in which the signal's default action ends the
//! process, with no `done` printed and the partial answer not said.

use std::io;

/// Ctrl-C presses, each one seen once, queued from the moment this is made.
pub struct Interrupts(imp::Listener);

impl Interrupts {
    pub fn listen() -> io::Result<Self> {
        imp::listen().map(Self)
    }

    /// The next press (one made before this is awaited counts); `None` once no more
    /// can come.
    pub async fn next(&mut self) -> Option<()> {
        self.0.recv().await
    }
}

#[cfg(unix)]
mod imp {
    use tokio::signal::unix::{Signal, SignalKind, signal};

    pub type Listener = Signal;

    pub fn listen() -> std::io::Result<Listener> {
        signal(SignalKind::interrupt())
    }
}

#[cfg(windows)]
mod imp {
    use tokio::signal::windows::{CtrlC, ctrl_c};

    pub type Listener = CtrlC;

    pub fn listen() -> std::io::Result<Listener> {
        ctrl_c()
    }
}
