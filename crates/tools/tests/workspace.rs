//! Confinement of the file tools to the workspace root, on a real directory tree.
//!
//! Unix only: its trees hold Unix symbolic links and file modes. (Windows' path
//! rules are `cairn-core`'s `workspace/windows.rs` tests.)

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::sync::Arc;

use cairn_tools::workspace::{EntryKind, WriteOutcome};
use cairn_tools::{ListDir, ReadFile, Tool, ToolContext, ToolError, Workspace, WriteFile};
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    outside: tempfile::TempDir,
    ws: Workspace,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    symlink(outside.path(), dir.path().join("escape_dir")).unwrap();
    symlink(
        outside.path().join("secret.txt"),
        dir.path().join("escape_file"),
    )
    .unwrap();
    symlink("src/main.rs", dir.path().join("inner_link")).unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    Fixture {
        _dir: dir,
        outside,
        ws,
    }
}

#[test]
fn reads_lists_and_writes_inside_the_root() {
    let f = fixture();
    assert_eq!(f.ws.read("src/main.rs").unwrap(), b"fn main() {}\n");
    assert_eq!(f.ws.read("./src//main.rs").unwrap(), b"fn main() {}\n");
    let names: Vec<_> =
        f.ws.list(".")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.kind))
            .collect();
    assert_eq!(
        names,
        [
            ("escape_dir".to_string(), EntryKind::Symlink),
            ("escape_file".to_string(), EntryKind::Symlink),
            ("inner_link".to_string(), EntryKind::Symlink),
            ("src".to_string(), EntryKind::Directory),
        ]
    );
    assert_eq!(
        f.ws.write("notes/deep/todo.md", b"- one").unwrap(),
        WriteOutcome::Created
    );
    assert_eq!(
        f.ws.write("notes/deep/todo.md", b"- two").unwrap(),
        WriteOutcome::Replaced
    );
    assert_eq!(
        std::fs::read(f.ws.root().join("notes/deep/todo.md")).unwrap(),
        b"- two"
    );
    // No temp files are left beside the result.
    let left: Vec<_> =
        f.ws.list("notes/deep")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
    assert_eq!(left, ["todo.md"]);
}

#[test]
fn a_replaced_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let mode_of = |path: &str| {
        std::fs::metadata(f.ws.root().join(path))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let script = f.ws.root().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho old\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    f.ws.write("run.sh", b"#!/bin/sh\necho new\n").unwrap();
    assert_eq!(std::fs::read(&script).unwrap(), b"#!/bin/sh\necho new\n");
    assert_eq!(mode_of("run.sh"), 0o750, "still executable, still private");

    // A read-only file stays read-only; a set-id bit is not handed to new contents.
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o4755)).unwrap();
    f.ws.write("run.sh", b"#!/bin/sh\n").unwrap();
    assert_eq!(mode_of("run.sh"), 0o755);
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o444)).unwrap();
    f.ws.write("run.sh", b"#!/bin/sh\necho again\n").unwrap();
    assert_eq!(mode_of("run.sh"), 0o444);
}

#[test]
fn refuses_paths_that_leave_the_root() {
    let f = fixture();
    let secret = f.outside.path().join("secret.txt");
    for path in [
        "../x",
        "src/../../x",
        "/etc/passwd",
        secret.to_str().unwrap(),
        "~/x",
        "C:/windows",
    ] {
        let err = f.ws.read(path).unwrap_err().to_string();
        assert!(err.contains("outside the workspace"), "{path}: {err}");
    }
    for path in ["escape_file", "escape_dir/secret.txt", "inner_link"] {
        let err = f.ws.read(path).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{path}: {err}");
    }
    assert!(
        f.ws.list("escape_dir")
            .unwrap_err()
            .to_string()
            .contains("symbolic link")
    );
    for path in ["escape_dir/new.txt", "escape_file", "../new.txt"] {
        assert!(f.ws.write(path, b"pwned").is_err(), "{path} was written");
    }
    assert_eq!(std::fs::read(&secret).unwrap(), b"top secret");
    assert_eq!(std::fs::read_dir(f.outside.path()).unwrap().count(), 1);
}

#[test]
fn an_absolute_path_inside_the_root_names_its_file_and_nothing_else() {
    let f = fixture();
    let root = f.ws.root().to_owned();
    let inside = |rel: &str| root.join(rel).to_str().unwrap().to_owned();
    assert_eq!(
        f.ws.read(&inside("src/main.rs")).unwrap(),
        b"fn main() {}\n"
    );
    assert_eq!(f.ws.list(root.to_str().unwrap()).unwrap().len(), 4);
    f.ws.write(&inside("notes/new.md"), b"hi").unwrap();
    assert_eq!(std::fs::read(root.join("notes/new.md")).unwrap(), b"hi");
    assert_eq!(f.ws.subject(&inside("./notes//new.md")), "notes/new.md");
    // Inside by its prefix, outside by what it names: still refused, each for its
    // own reason.
    let climbs = f.ws.read(&inside("../x")).unwrap_err().to_string();
    assert!(climbs.contains("outside the workspace"), "{climbs}");
    let linked = f.ws.read(&inside("escape_dir/secret.txt")).unwrap_err();
    assert!(linked.to_string().contains("symbolic link"), "{linked}");
    // A sibling whose name starts like the root is not inside it.
    let sibling = format!("{}-other/x", root.display());
    let err = f.ws.read(&sibling).unwrap_err().to_string();
    assert!(err.contains("absolute paths are refused"), "{err}");
    assert_eq!(f.ws.subject(&sibling), sibling);
}

#[test]
fn a_path_that_starts_with_the_roots_own_name_names_the_file_inside() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("notes.md"), "hi").unwrap();
    let ws = Workspace::open(&root).unwrap();
    assert_eq!(ws.read("proj/notes.md").unwrap(), b"hi");
    ws.write("proj/src/new.rs", b"x").unwrap();
    assert_eq!(std::fs::read(root.join("src/new.rs")).unwrap(), b"x");
    assert_eq!(ws.subject("proj/src/new.rs"), "src/new.rs");
    // The name alone is the root itself.
    let names = |path| -> Vec<String> {
        ws.list(path)
            .unwrap()
            .into_iter()
            .map(|entry| entry.name)
            .collect()
    };
    assert_eq!(names("proj"), ["notes.md", "src"]);
    assert_eq!(names("proj/"), names("."));
    assert_eq!(ws.subject("proj"), ".");
    // Where the root holds something of its own name, that is what the path names.
    std::fs::create_dir(root.join("proj")).unwrap();
    std::fs::write(root.join("proj/notes.md"), "inner").unwrap();
    assert_eq!(ws.read("proj/notes.md").unwrap(), b"inner");
    // It does not climb out: `proj/../x` is still `..`.
    let err = ws.read("proj/../../x").unwrap_err().to_string();
    assert!(err.contains("outside the workspace"), "{err}");
}

#[test]
fn reports_missing_files_and_directories_plainly() {
    let f = fixture();
    assert_eq!(
        f.ws.read("nope.txt").unwrap_err().to_string(),
        "`nope.txt` does not exist"
    );
    assert_eq!(
        f.ws.read("src").unwrap_err().to_string(),
        "`src` is a directory, not a file"
    );
    assert_eq!(
        f.ws.read(".").unwrap_err().to_string(),
        "`.` is a directory, not a file"
    );
    assert_eq!(
        f.ws.list("src/main.rs").unwrap_err().to_string(),
        "`src/main.rs` is not a directory"
    );
}

fn ctx(ws: Workspace) -> ToolContext {
    ToolContext {
        workspace: Some(Arc::new(ws)),
        ..ToolContext::default()
    }
}

#[tokio::test]
async fn tools_take_the_contract_argument_names() {
    let f = fixture();
    let root = f.ws.root().to_owned();
    let ctx = ctx(f.ws);
    let out = WriteFile
        .call(
            json!({"path": "a/b.txt", "content": "one\ntwo\nthree\n"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.content, "created `a/b.txt` (14 bytes)");
    let out = ReadFile
        .call(json!({"path": "a/b.txt", "offset": 2, "limit": 1}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "two\n[lines 2-2 of 3; read on with offset 3]");
    let out = ListDir.call(json!({"path": "."}), &ctx).await.unwrap();
    assert_eq!(
        out.content,
        "a/\nescape_dir@\nescape_file@\ninner_link@\nsrc/\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a/b.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
}

#[tokio::test]
async fn bad_arguments_become_errors_the_model_can_read() {
    let f = fixture();
    let ctx = ctx(f.ws);
    let err = ReadFile.call(json!({}), &ctx).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::InvalidArguments("missing field `path`".into())
    );
    let err = ReadFile.call(json!({"path": 7}), &ctx).await.unwrap_err();
    assert!(
        matches!(err, ToolError::InvalidArguments(ref m) if m.contains("expected a string")),
        "{err}"
    );
    let err = WriteFile.call(json!("a.txt"), &ctx).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::InvalidArguments(
            "expected a JSON object of named arguments, got a string".into()
        )
    );
    let err = ReadFile
        .call(json!({"path": "../etc/passwd"}), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Refused(_)), "{err}");
}

#[tokio::test]
async fn file_tools_need_a_workspace() {
    let err = ReadFile
        .call(json!({"path": "a.txt"}), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::Refused(ref m) if m.contains("no workspace folder")),
        "{err}"
    );
}
