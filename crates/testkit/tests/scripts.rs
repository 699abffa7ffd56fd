//! The shell helpers the build scripts share, run on real folders.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

fn replace_changed(src: &Path, dest: &Path) {
    let status = Command::new("bash")
        .arg("-c")
        .arg(r#"set -euo pipefail; source "$1"; replace_changed "$2" "$3""#)
        .arg("bash")
        .arg(root().join("scripts/lib/files.sh"))
        .arg(src)
        .arg(dest)
        .status()
        .unwrap();
    assert!(status.success(), "replace_changed failed: {status}");
}

fn modified(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

/// An old time, set on every file of the built page before the rebuild, so that a file
/// the rebuild writes is seen as written whatever the clock's resolution.
fn age(path: &Path, old: SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
}

#[test]
fn a_rebuilt_page_writes_only_the_files_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (dist, staging) = (dir.path().join("dist"), dir.path().join("dist.new"));
    fs::create_dir_all(dist.join("snippets")).unwrap();
    let before = SystemTime::now() - Duration::from_secs(3600);
    for (name, text) in [
        ("index.html", "<p>same</p>"),
        ("app_bg.wasm", "old code"),
        ("stale.js", "gone next build"),
        ("snippets/a.js", "same too"),
    ] {
        fs::write(dist.join(name), text).unwrap();
        age(&dist.join(name), before);
    }
    fs::create_dir_all(staging.join("snippets")).unwrap();
    for (name, text) in [
        ("index.html", "<p>same</p>"),
        ("app_bg.wasm", "new code"),
        ("styles.css", "new file"),
        ("snippets/a.js", "same too"),
    ] {
        fs::write(staging.join(name), text).unwrap();
    }

    replace_changed(&staging, &dist);

    assert_eq!(
        modified(&dist.join("index.html")),
        before,
        "an unchanged file was rewritten"
    );
    assert_eq!(
        modified(&dist.join("snippets/a.js")),
        before,
        "an unchanged file in a folder was rewritten"
    );
    assert!(
        modified(&dist.join("app_bg.wasm")) > before,
        "a changed file kept its old time"
    );
    assert_eq!(
        fs::read_to_string(dist.join("app_bg.wasm")).unwrap(),
        "new code"
    );
    assert_eq!(
        fs::read_to_string(dist.join("styles.css")).unwrap(),
        "new file"
    );
    assert!(
        !dist.join("stale.js").exists(),
        "a file the build no longer makes was kept"
    );
    assert!(!staging.exists(), "the staging folder was left behind");
}
