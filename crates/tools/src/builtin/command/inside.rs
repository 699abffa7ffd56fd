//! A command that names files from outside the workspace it already runs in
//! (`python work/say_hi.py` run inside `work`): small models copy the folder's name
//! into paths, and a file tool forgives it, but a shell cannot. When such a command
//! fails, its result gives the command as it should have been written, so the model
//! can run that instead (task benchmark, README "Small models": told only how to name
//! the file, the 1.5B model answered with the hint's own words; given the command, it
//! ran it).

use std::path::Path;

/// The hint for a failed `command` run in `root`, when one of its words starts with
/// the folder's own name and the workspace holds no such entry.
pub(super) fn hint(command: &str, root: &Path) -> Option<String> {
    let name = root.file_name()?.to_str()?;
    if root.join(name).exists() {
        return None;
    }
    let fixed = without_prefix(command, name)?;
    Some(format!(
        "[hint] The command already runs inside `{name}`. Run `{fixed}` instead.\n"
    ))
}

/// `command` with `name/` (or `name\`) taken off every word that starts with it, or
/// `None` when no word does (or only `name/` alone, which names the folder itself).
fn without_prefix(command: &str, name: &str) -> Option<String> {
    let starts_word = |before: Option<char>| {
        before.is_none_or(|c| c.is_whitespace() || matches!(c, '\'' | '"' | ';' | '&' | '|' | '('))
    };
    let mut fixed = String::with_capacity(command.len());
    let mut rest = command;
    let mut changed = false;
    while let Some(at) = rest.find(name) {
        fixed.push_str(&rest[..at]);
        let after = &rest[at + name.len()..];
        let tail = after.strip_prefix('/').or_else(|| after.strip_prefix('\\'));
        match tail {
            Some(tail)
                if starts_word(fixed.chars().last())
                    && tail.chars().next().is_some_and(|c| !c.is_whitespace()) =>
            {
                changed = true;
                rest = tail;
            }
            _ => {
                fixed.push_str(name);
                rest = after;
            }
        }
    }
    fixed.push_str(rest);
    changed.then_some(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_starts_with_the_workspaces_own_name_gets_the_command_as_it_should_be() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        assert_eq!(
            hint("python work/say_hi.py", &root).as_deref(),
            Some(
                "[hint] The command already runs inside `work`. Run `python say_hi.py` instead.\n"
            )
        );
        assert_eq!(
            hint("ls && cat \"work/notes.txt\" work/b.txt", &root).as_deref(),
            Some(
                "[hint] The command already runs inside `work`. Run \
                 `ls && cat \"notes.txt\" b.txt` instead.\n"
            ),
            "a quoted word after another command, and a second word"
        );
        assert_eq!(
            hint("cd work\\src && make", &root).as_deref(),
            Some("[hint] The command already runs inside `work`. Run `cd src && make` instead.\n")
        );
        assert_eq!(hint("python say_hi.py", &root), None);
        assert_eq!(hint("ls workshop/x homework/y", &root), None);
        assert_eq!(hint("ls work/ ", &root), None, "the folder itself");
        // A folder of that name inside the workspace is meant.
        std::fs::create_dir(root.join("work")).unwrap();
        assert_eq!(hint("python work/say_hi.py", &root), None);
    }
}
