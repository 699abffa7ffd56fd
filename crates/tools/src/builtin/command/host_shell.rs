//! The shell a command line runs in: `sh -c` on unix, `cmd /C` on Windows (the line
//! passed as written: cmd parses its own quotes).

use tokio::process::Command;

/// A command running `line` in this system's shell.
pub(super) fn command(line: &str) -> Command {
    #[cfg(windows)]
    {
        let mut command = Command::new("cmd");
        command.arg("/C").raw_arg(line);
        command
    }
    #[cfg(not(windows))]
    {
        let mut command = Command::new("sh");
        command.arg("-c").arg(line);
        command
    }
}

/// The shell's name, as the model is told it.
pub(super) const NAME: &str = if cfg!(windows) { "cmd" } else { "sh" };
