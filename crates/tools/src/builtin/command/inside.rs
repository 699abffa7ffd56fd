//! A command that names files from outside the workspace it already runs in
//! (`python work/say_hi.py` run inside `work`): small models copy the folder's name
//! into paths, and a file tool forgives it, but a shell cannot. When such a command
//! fails, its result says how to name the file instead, so the model can try again
//! (task benchmark, README "Small models": the 1.5B model then answered from the
//! "No such file" error).

use std::path::Path;

/// The hint for a failed `command` run in `root`, when one of its words starts with
/// the folder's own name and the workspace holds no such entry.
pub(super) fn hint(command: &str, root: &Path) -> Option<String> {
    let name = root.file_name()?.to_str()?;
    if root.join(name).exists() {
        return None;
    }
    let word = command
        .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ';' | '&' | '|'))
        .find_map(|word| {
            let rest = word.strip_prefix(name)?;
            let rest = rest.strip_prefix('/').or_else(|| rest.strip_prefix('\\'))?;
            (!rest.is_empty()).then_some((word, rest))
        });
    let (word, rest) = word?;
    Some(format!(
        "[hint] The command already runs inside `{name}`: name its files from there \
         (`{rest}`, not `{word}`).\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_starts_with_the_workspaces_own_name_is_pointed_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        assert_eq!(
            hint("python work/say_hi.py", &root).as_deref(),
            Some(
                "[hint] The command already runs inside `work`: name its files from there \
                 (`say_hi.py`, not `work/say_hi.py`).\n"
            )
        );
        assert!(
            hint("ls && cat \"work/notes.txt\"", &root)
                .is_some_and(|hint| hint.contains("(`notes.txt`, not `work/notes.txt`)")),
            "a quoted word after another command"
        );
        assert_eq!(hint("python say_hi.py", &root), None);
        assert_eq!(hint("ls workshop/x", &root), None);
        // A folder of that name inside the workspace is meant.
        std::fs::create_dir(root.join("work")).unwrap();
        assert_eq!(hint("python work/say_hi.py", &root), None);
    }
}
