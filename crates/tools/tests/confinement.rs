//! Adversarial confinement: generated paths by the hundred thousand against a
//! workspace full of links that point out, and a link swapped in under a running
//! writer. The only acceptable number of escapes is zero.
//!
//! Unix only: its links are Unix symbolic links, made freely. (Windows refuses every
//! reparse point a path crosses; its path rules are `cairn-core`'s
//! `workspace/windows.rs` tests.)

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cairn_tools::Workspace;

const SECRET: &[u8] = b"the outside secret";
const CANARY: &str = "OUTSIDE_CANARY";

/// A deterministic generator (xorshift64*), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// base/root is the workspace, base/outside what it must never reach.
struct World {
    base: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        // A name the generator never produces: seeing it in a listing means a walk
        // went outside.
        std::fs::create_dir_all(outside.join(CANARY)).unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        std::fs::write(outside.join(CANARY).join("secret.txt"), SECRET).unwrap();
        std::fs::write(root.join("a/f.txt"), b"inside").unwrap();
        symlink(&outside, root.join("out_dir")).unwrap();
        symlink(outside.join("secret.txt"), root.join("out_file")).unwrap();
        symlink("../../outside", root.join("a/rel_out")).unwrap();
        symlink("..", root.join("a/up")).unwrap();
        symlink("a", root.join("in_link")).unwrap();
        symlink("/", root.join("abs_link")).unwrap();
        symlink("missing/target", root.join("dangling")).unwrap();
        Self { base }
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("root")
    }

    fn outside(&self) -> PathBuf {
        self.base.path().join("outside")
    }

    /// Every file under `dir` with its contents.
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut pending = vec![dir.to_owned()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    pending.push(entry.path());
                } else {
                    let content = std::fs::read(entry.path()).unwrap_or_default();
                    files.insert(entry.path(), content);
                }
            }
        }
        files
    }
}

const PARTS: [&str; 24] = [
    "a",
    "b",
    "f.txt",
    "..",
    ".",
    "",
    "out_dir",
    "out_file",
    "rel_out",
    "up",
    "in_link",
    "abs_link",
    "dangling",
    "secret.txt",
    "inner",
    "new",
    "~",
    "C:",
    "...",
    "%2e%2e",
    "a\\..\\..",
    ". .",
    "x\u{0}y",
    "é",
];

fn generate(rng: &mut Rng, outside: &Path) -> String {
    match rng.below(20) {
        0 => outside.join("secret.txt").to_string_lossy().into_owned(),
        1 => format!("/{}", PARTS[rng.below(PARTS.len())]),
        _ => {
            let count = 1 + rng.below(6);
            let mut path: Vec<&str> = (0..count).map(|_| PARTS[rng.below(PARTS.len())]).collect();
            if rng.below(10) == 0 {
                path.insert(0, "");
            }
            let separator = if rng.below(15) == 0 { "//" } else { "/" };
            path.join(separator)
        }
    }
}

#[test]
fn a_hundred_thousand_generated_paths_never_escape() {
    let world = World::new();
    let workspace = Workspace::open(world.root()).unwrap();
    let outside_before = World::snapshot(&world.outside());
    let mut rng = Rng(0x00C0_FFEE_D15E_A5E5);
    let mut escapes = Vec::new();
    const PATHS: usize = 100_000;
    for n in 0..PATHS {
        let path = generate(&mut rng, &world.outside());
        if let Ok(bytes) = workspace.read(&path)
            && bytes == SECRET
        {
            escapes.push(format!("read {path:?}"));
        }
        if let Ok(entries) = workspace.list(&path)
            && entries.iter().any(|e| e.name == CANARY)
        {
            escapes.push(format!("listed {path:?}"));
        }
        // Writes are rarer (each one creates a file), but every shape gets tried.
        if n % 4 == 0 {
            let _ = workspace.write(&path, format!("written by {n}").as_bytes());
        }
        if n % 4 == 1
            && let Ok((files, _)) = workspace.files(&path, 50)
            && files
                .iter()
                .any(|f| f.contains(CANARY) || workspace.read(f).is_ok_and(|b| b == SECRET))
        {
            escapes.push(format!("walked {path:?}"));
        }
    }
    assert_eq!(
        World::snapshot(&world.outside()),
        outside_before,
        "nothing outside changed"
    );
    let base: Vec<_> = std::fs::read_dir(world.base.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        base.len(),
        2,
        "nothing appeared beside the workspace: {base:?}"
    );
    assert!(
        escapes.is_empty(),
        "{} escapes, first: {:?}",
        escapes.len(),
        &escapes[..escapes.len().min(5)]
    );
    // The generator did reach inside: some writes succeeded and some reads found them.
    let inside = World::snapshot(&world.root());
    assert!(
        inside.len() > 10,
        "the paths were not all refused: {} files inside",
        inside.len()
    );
}

#[test]
fn a_link_swapped_in_under_a_running_writer_is_never_followed() {
    let world = World::new();
    let root = world.root();
    std::fs::create_dir(root.join("swap")).unwrap();
    let workspace = Arc::new(Workspace::open(&root).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (root, outside, stop) = (root.clone(), world.outside(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) {
                // Replace the folder with a link to the outside, then put it back.
                let _ = std::fs::rename(root.join("swap"), root.join("swap_real"));
                let _ = symlink(&outside, root.join("swap"));
                let _ = std::fs::remove_file(root.join("swap"));
                // The writer creates missing parents, so it may have made a fresh
                // `swap` while the real one was away; without clearing it the
                // real one could never come back and the race would stop.
                if std::fs::symlink_metadata(root.join("swap")).is_ok_and(|m| m.is_dir()) {
                    let _ = std::fs::remove_dir_all(root.join("swap"));
                }
                let _ = std::fs::rename(root.join("swap_real"), root.join("swap"));
                swaps += 1;
            }
            swaps
        })
    };
    let mut written = 0;
    let mut refused = 0;
    for n in 0..20_000 {
        match workspace.write(&format!("swap/victim-{}.txt", n % 7), b"should stay inside") {
            Ok(_) => written += 1,
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the race was run ({swaps} swaps)");
    assert!(
        written > 0 && refused > 0,
        "both sides of the race happened: {written} written, {refused} refused"
    );
    let outside: Vec<_> = World::snapshot(&world.outside()).into_keys().collect();
    assert!(
        outside
            .iter()
            .all(|p| !p.to_string_lossy().contains("victim")),
        "a write followed the swapped-in link: {outside:?}"
    );
}
