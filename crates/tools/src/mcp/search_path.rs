//! Where a stdio server's command is looked for. An app started from its desktop
//! entry does not get the PATH the user's shell sets up (nvm, uv, Homebrew, ~/.local/bin),
//! so `npx` or `uvx` would not be found: the login shell is asked for its PATH once, and
//! its folders come first, then the app's own.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::OnceCell;

use super::wire::NotStarted;

/// How long the login shell may take to say its PATH: rc files can be slow, but a
/// server's start must not wait on a shell that hangs.
const SHELL_PATIENCE: Duration = Duration::from_secs(4);
/// Marks the PATH in the shell's output, which rc files may clutter.
const MARK: &str = "__CAIRN_PATH__";

/// The folders a command is looked for in, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPath {
    dirs: Vec<PathBuf>,
}

impl SearchPath {
    /// The login shell's folders, then this process's, each once.
    pub async fn for_servers() -> &'static SearchPath {
        static FOUND: OnceCell<SearchPath> = OnceCell::const_new();
        FOUND
            .get_or_init(|| async {
                let own = std::env::var_os("PATH").unwrap_or_default();
                let login = login_shell_path().await;
                Self::merged(login.as_deref(), &own)
            })
            .await
    }

    /// `first`'s folders, then those of `then` not already there.
    pub fn merged(first: Option<&OsStr>, then: &OsStr) -> Self {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for dir in first
            .into_iter()
            .flat_map(std::env::split_paths)
            .chain(std::env::split_paths(then))
        {
            if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        Self { dirs }
    }

    /// As the value of a `PATH` variable.
    pub fn joined(&self) -> OsString {
        std::env::join_paths(&self.dirs).unwrap_or_default()
    }

    /// The program `command` names: a path as it is, a bare name from the first folder
    /// that has it as an executable file. The error names the folders searched.
    pub fn resolve(&self, command: &str) -> Result<PathBuf, NotStarted> {
        if command.contains(std::path::MAIN_SEPARATOR) {
            return Ok(PathBuf::from(command));
        }
        self.dirs
            .iter()
            .map(|dir| dir.join(command))
            .find(|candidate| is_executable(candidate))
            .ok_or_else(|| NotStarted::NotOnPath {
                command: command.to_owned(),
                searched: self.joined().to_string_lossy().into_owned(),
            })
    }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The PATH an interactive login shell of the user's sets up, if it says in time.
async fn login_shell_path() -> Option<OsString> {
    let shell = std::env::var_os("SHELL").filter(|shell| !shell.is_empty())?;
    ask_shell(Path::new(&shell)).await
}

/// Runs `shell` as an interactive login shell that prints its PATH between marks.
pub(crate) async fn ask_shell(shell: &Path) -> Option<OsString> {
    let script = format!("printf '%s%s%s' '{MARK}' \"$PATH\" '{MARK}'");
    let run = tokio::process::Command::new(shell)
        .args(["-i", "-l", "-c", &script])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(SHELL_PATIENCE, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(err)) => {
            tracing::warn!(shell = %shell.display(), error = %err, "the login shell did not run");
            return None;
        }
        Err(_) => {
            tracing::warn!(shell = %shell.display(), "the login shell did not say its PATH in time");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let path = text.split(MARK).nth(1)?;
    Some(OsString::from(path))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_login_folders_come_first_and_each_folder_once() {
        let merged = SearchPath::merged(
            Some(OsStr::new("/home/u/.nvm/bin:/usr/bin")),
            OsStr::new("/usr/bin:/bin::"),
        );
        assert_eq!(
            merged.joined(),
            OsString::from("/home/u/.nvm/bin:/usr/bin:/bin")
        );
    }

    #[test]
    fn a_bare_name_is_found_in_the_first_folder_that_has_it_as_a_program() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        // Not executable in the first folder: skipped.
        std::fs::write(first.join("npx"), "#!/bin/sh\n").unwrap();
        std::fs::write(second.join("npx"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(second.join("npx"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let joined = std::env::join_paths([&first, &second]).unwrap();
        let search = SearchPath::merged(None, &joined);
        assert_eq!(search.resolve("npx").unwrap(), second.join("npx"));
        assert_eq!(
            search.resolve("uvx").unwrap_err(),
            NotStarted::NotOnPath {
                command: "uvx".into(),
                searched: joined.to_string_lossy().into_owned(),
            }
        );
        assert_eq!(search.resolve("./npx").unwrap(), PathBuf::from("./npx"));
    }

    #[tokio::test]
    async fn the_login_shell_is_asked_for_its_path_past_what_its_rc_files_print() {
        // A stand-in shell whose start-up talks before the answer.
        let dir = tempfile::tempdir().unwrap();
        let shell = dir.path().join("fake-shell");
        std::fs::write(
            &shell,
            "#!/bin/sh\necho 'Welcome back!'\nPATH=/opt/tools/bin:/usr/bin\nexport PATH\n\
             shift 3\nexec /bin/sh -c \"$1\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = ask_shell(&shell).await;
        assert_eq!(path, Some(OsString::from("/opt/tools/bin:/usr/bin")));
    }
}
