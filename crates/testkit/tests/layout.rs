//! The README's crate graph is the one the manifests declare: every arrow a
//! dependency, every dependency an arrow; and the front ends come in through one
//! door, the runtime. (It lives here because the testkit is the one crate that is
//! about the repository rather than the product.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The repository root, two folders above this crate.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

/// `name → deps` lines of the README's graph block, names without `cairn-`.
fn readme_graph() -> BTreeMap<String, BTreeSet<String>> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find("one arrow per dependency")
        .expect("the README's layout section has the crate graph");
    let block = readme[start..]
        .split("```")
        .nth(1)
        .expect("the graph is a code block");
    block
        .lines()
        .filter_map(|line| line.split_once('→'))
        .map(|(name, deps)| {
            // A trailing remark in parentheses is not a dependency.
            let deps = deps.split("  (").next().unwrap_or(deps);
            let deps = deps
                .split(',')
                .map(str::trim)
                .filter(|dep| !dep.is_empty())
                .map(str::to_owned)
                .collect();
            (name.trim().to_owned(), deps)
        })
        .collect()
}

/// The `cairn-*` crates a manifest depends on to build (not its dev-dependencies).
fn manifest_deps(manifest: &Path) -> BTreeSet<String> {
    building_deps(&std::fs::read_to_string(manifest).unwrap())
}

fn building_deps(text: &str) -> BTreeSet<String> {
    let mut building = false;
    let mut deps = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            building = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if building && let Some(rest) = line.strip_prefix("cairn-") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            deps.insert(name);
        }
    }
    deps
}

#[test]
fn the_readme_crate_graph_is_the_manifests() {
    let mut declared = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        declared.insert(name, manifest_deps(&dir.join("Cargo.toml")));
    }
    declared.insert("desktop".into(), manifest_deps(&root().join("Cargo.toml")));
    declared.insert("ui".into(), manifest_deps(&root().join("ui/Cargo.toml")));
    // The protocol and the keychain depend on no other crate of ours: no arrow.
    declared.retain(|_, deps| !deps.is_empty());
    assert_eq!(
        readme_graph(),
        declared,
        "README.md's crate graph and the Cargo.toml files disagree"
    );
}

/// What a front end may build on: the runtime (the store, the turns, the model
/// servers, the tools and the profiles all come through it), the wire types, and the
/// keychain it hands the runtime.
const FRONT_DOOR: [&str; 3] = ["protocol", "runtime", "secrets"];

/// The crates of ours a front end's manifest builds on past the front door.
fn bypasses(manifest: &str) -> Vec<String> {
    building_deps(manifest)
        .into_iter()
        .filter(|dep| !FRONT_DOOR.contains(&dep.as_str()))
        .collect()
}

#[test]
fn the_front_ends_reach_everything_through_the_runtime() {
    for (front_end, manifest) in [
        ("the CLI", root().join("crates/cli/Cargo.toml")),
        ("the desktop shell", root().join("Cargo.toml")),
        ("the webview", root().join("ui/Cargo.toml")),
    ] {
        let manifest = std::fs::read_to_string(manifest).unwrap();
        assert_eq!(
            bypasses(&manifest),
            Vec::<String>::new(),
            "{front_end} builds on crates behind the runtime; reach them through \
             cairn-runtime (tests and benchmarks may, as dev-dependencies)"
        );
    }
}

#[test]
fn a_front_end_that_builds_on_the_store_is_a_bypass() {
    let manifest = "[dependencies]\ncairn-runtime = { workspace = true }\n\
                    cairn-store = { workspace = true }\n\n[dev-dependencies]\n\
                    cairn-core = { workspace = true }\n";
    assert_eq!(bypasses(manifest), ["store"]);
}

/// The handles the runtime keeps to itself: re-exporting one (or a getter for it)
/// would open a second door beside it.
const KEPT_INSIDE: [&str; 8] = [
    "Store",
    "Sessions",
    "Server",
    "Engine",
    "OllamaClient",
    "OpenAiClient",
    "Toolbelt",
    "Catalog",
];

#[test]
fn the_runtime_hands_out_no_store_sessions_or_server() {
    let mut leaks = Vec::new();
    for entry in std::fs::read_dir(root().join("crates/runtime/src")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // A `pub use` may span lines: read each up to its `;`.
        for export in text.split("pub use ").skip(1) {
            let export = export.split(';').next().unwrap_or_default();
            if !export.starts_with("cairn_") {
                continue;
            }
            for name in KEPT_INSIDE {
                let named = export
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| word == name);
                if named {
                    leaks.push(format!("{}: pub use {export}", path.display()));
                }
            }
        }
        for getter in ["pub fn store(", "pub fn sessions("] {
            if text.contains(getter) {
                leaks.push(format!("{}: {getter}", path.display()));
            }
        }
    }
    assert_eq!(
        leaks,
        Vec::<String>::new(),
        "the runtime hands out what it owns"
    );
}
