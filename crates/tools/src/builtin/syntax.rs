//! Whether a file a call just wrote parses, for the languages Cairn can check without
//! installing anything: JSON in process, Python with the machine's own `python3`
//! (its parser alone: nothing runs, nothing is written). A file that does not parse
//! makes the write a failed call whose result says why, though the file stays written
//! (Restore takes it back as any write): told only that it was created, the 1.5B model
//! wrote `Hello, Esther!` as a Python script and said it was done; told the script
//! does not parse, it wrote `print('Hello, Esther!')` (task benchmark, README "Small
//! models"). Aider checks an edited file the same way.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The longest a check may take; a parser that takes longer is not waited for.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Parses a Python source from stdin, with the file's name in the error, and prints
/// the error's line and message.
const PYTHON_CHECK: &str = "import ast, sys
try:
    ast.parse(sys.stdin.read(), sys.argv[1])
except SyntaxError as err:
    print(f'line {err.lineno}: {err.msg}')
    sys.exit(1)
";

/// What is wrong with `content` as the language `path` names, or `None` when it
/// parses, or its language is not one checked, or no checker is at hand.
pub(super) async fn problem(path: &str, content: &str) -> Option<String> {
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    let wrong = match extension.as_str() {
        "json" => json(content),
        "py" => python(path, content).await,
        _ => None,
    }?;
    let language = if extension == "py" { "Python" } else { "JSON" };
    Some(format!("`{path}` is not valid {language}: {wrong}"))
}

fn json(content: &str) -> Option<String> {
    let err = serde_json::from_str::<serde_json::Value>(content).err()?;
    Some(format!("line {}: {err}", err.line()))
}

async fn python(path: &str, content: &str) -> Option<String> {
    let mut child = Command::new("python3")
        .args(["-I", "-c", PYTHON_CHECK, path])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let source = content.to_owned();
    // Written beside the wait: a source larger than the pipe would otherwise block.
    let feed = async move {
        let _ = stdin.write_all(source.as_bytes()).await;
    };
    let checked = async {
        let (_, output) = tokio::join!(feed, child.wait_with_output());
        output.ok()
    };
    let output = tokio::time::timeout(CHECK_TIMEOUT, checked).await.ok()??;
    // Exit 1 is the check's own verdict; anything else (no `ast`, a crash) says nothing.
    (output.status.code() == Some(1))
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|said| !said.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_that_does_not_parse_says_where() {
        assert_eq!(
            problem("data/config.json", "{\"a\": 1,\n}")
                .await
                .as_deref(),
            Some("`data/config.json` is not valid JSON: line 2: trailing comma at line 2 column 1")
        );
        assert_eq!(problem("config.json", "{\"a\": [1, 2]}").await, None);
        assert_eq!(problem("notes.md", "{ not json").await, None, "not checked");
        assert_eq!(problem("Makefile", "print(").await, None, "no extension");
    }

    #[tokio::test]
    async fn python_is_parsed_by_the_machines_own_python() {
        // The suite needs python3 (scripts/test installs it): no skipping here.
        let said = problem("hi.py", "Hello, Esther!\n").await.unwrap();
        assert!(
            said.starts_with("`hi.py` is not valid Python: line 1: "),
            "{said}"
        );
        assert_eq!(problem("hi.py", "print('Hello, Esther!')\n").await, None);
        let long = "x = 1\n".repeat(100_000);
        assert_eq!(problem("long.py", &long).await, None, "larger than a pipe");
        assert_eq!(
            problem("long.py", &format!("{long}def\n")).await.as_deref(),
            Some("`long.py` is not valid Python: line 100001: invalid syntax")
        );
    }
}
