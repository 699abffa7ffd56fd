//! The crates of ours a manifest builds on, read as Cargo reads it: however the
//! dependency is written (a renamed key with `package = "cairn-…"`, a
//! `[dependencies.cairn-…]` table, `{ workspace = true }` naming a workspace entry),
//! it is the package it names.

use std::collections::{BTreeMap, BTreeSet};

use toml::{Table, Value};

/// The workspace's dependency keys and the packages they name.
pub type Workspace = BTreeMap<String, String>;

/// The `[workspace.dependencies]` of the root manifest `text`.
pub fn workspace(text: &str) -> Workspace {
    let manifest: Table = text.parse().expect("the root manifest is TOML");
    let deps = manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(Value::as_table);
    deps.into_iter()
        .flatten()
        .map(|(key, spec)| (key.clone(), named_package(key, spec)))
        .collect()
}

/// The `cairn-*` crates (without `cairn-`) that manifest `text` builds on: its
/// `[dependencies]` and every `[target.….dependencies]`; not its dev- or
/// build-dependencies.
pub fn building_deps(text: &str, workspace: &Workspace) -> BTreeSet<String> {
    let manifest: Table = text.parse().expect("a manifest is TOML");
    let mut tables = vec![manifest.get("dependencies")];
    if let Some(targets) = manifest.get("target").and_then(Value::as_table) {
        tables.extend(targets.values().map(|target| target.get("dependencies")));
    }
    tables
        .into_iter()
        .flatten()
        .filter_map(Value::as_table)
        .flatten()
        .map(|(key, spec)| package(key, spec, workspace))
        .filter_map(|name| name.strip_prefix("cairn-").map(str::to_owned))
        .collect()
}

/// The package a dependency entry names, its workspace entry followed.
fn package(key: &str, spec: &Value, workspace: &Workspace) -> String {
    let inherited = spec
        .get("workspace")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match workspace.get(key) {
        Some(package) if inherited => package.clone(),
        _ => named_package(key, spec),
    }
}

fn named_package(key: &str, spec: &Value) -> String {
    spec.get("package")
        .and_then(Value::as_str)
        .unwrap_or(key)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_is_its_package_however_it_is_written() {
        let workspace = workspace(
            "[workspace.dependencies]\ncairn-core = { path = \"crates/core\" }\n\
             db = { package = \"cairn-store\", path = \"crates/store\" }\n",
        );
        let manifest = "[dependencies]\nserde = \"1\"\n\
                        store = { package = \"cairn-runtime\", path = \"../runtime\" }\n\
                        db = { workspace = true }\n\n\
                        [dependencies.cairn-agents]\npath = \"../agents\"\n\n\
                        [target.'cfg(windows)'.dependencies]\ncairn-core = { workspace = true }\n\n\
                        [dev-dependencies]\ncairn-testkit = { workspace = true }\n\n\
                        [build-dependencies]\ncairn-protocol = { workspace = true }\n\n\
                        [target.'cfg(unix)'.dev-dependencies]\ncairn-tools = \"0.1\"\n";
        assert_eq!(
            building_deps(manifest, &workspace),
            BTreeSet::from(["runtime", "store", "agents", "core"].map(str::to_owned))
        );
    }
}
