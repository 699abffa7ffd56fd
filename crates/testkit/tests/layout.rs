//! The README's crate graph is the one the manifests declare: every arrow a
//! dependency, every dependency an arrow. (It lives here because the testkit is the
//! one crate that is about the repository rather than the product.)

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
    let text = std::fs::read_to_string(manifest).unwrap();
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
