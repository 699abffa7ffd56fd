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

/// Every place the code cites the design (`docs/design.md, "Section"`) names a section
/// the design has: the design the code leans on is in the repository, and current.
#[test]
fn the_design_the_code_cites_is_in_the_repository() {
    let design = std::fs::read_to_string(root().join("docs/design.md"))
        .expect("docs/design.md, the design the code cites");
    let sections: BTreeSet<&str> = design
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .collect();
    let mut cited = 0;
    let mut missing = Vec::new();
    for path in source_dirs().iter().flat_map(|dir| rust_files(dir)) {
        let text = std::fs::read_to_string(&path).unwrap();
        // Spelled in two halves so that this file does not cite it.
        let outside = concat!("DESIGN", ".md");
        assert!(
            !text.contains(outside),
            "{} cites {outside}, which is not in the repository",
            path.display()
        );
        for citation in text.split("docs/design.md, \"").skip(1) {
            let section = citation.split('"').next().unwrap_or_default();
            cited += 1;
            if !sections.contains(section) {
                missing.push(format!("{}: {section}", path.display()));
            }
        }
    }
    assert!(cited > 0, "the code cites the design somewhere");
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "sections the design does not have"
    );
}

/// A crate's modules by path (`level`, `level::run`), each with its source.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for path in rust_files(src) {
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut name = relative.to_string_lossy().replace('/', "::");
        if let Some(parent) = name.strip_suffix("::mod") {
            name = parent.to_owned();
        }
        if name == "lib" || name == "main" || name == "build" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A file's own tests may reach anywhere; the module's code may not.
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default()
            .to_owned();
        found.insert(name, code);
    }
    found
}

/// The product's source folders: each crate's `src`, the desktop shell, the webview.
fn source_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("src"))
        .collect();
    dirs.extend([root().join("src-tauri"), root().join("ui/src")]);
    dirs
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The modules `code` (module `name`) names through `crate::` or `super::`.
fn imports(name: &str, code: &str, known: &BTreeMap<String, String>) -> BTreeSet<String> {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .filter(|path| !path.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut paths: Vec<String> = Vec::new();
    for (prefix, base) in [("crate::", String::new()), ("super::", parent(name))] {
        for piece in code.split(prefix).skip(1) {
            let listed = match piece.strip_prefix('{') {
                Some(group) => words(group.split('}').next().unwrap_or_default()),
                None => words(piece).into_iter().take(1).collect(),
            };
            for path in listed {
                let path = path.trim_start_matches("self::").to_owned();
                paths.push(if base.is_empty() {
                    path
                } else {
                    format!("{base}::{path}")
                });
            }
        }
    }
    paths
        .iter()
        .filter_map(|path| {
            // The longest known module the path starts with.
            let parts: Vec<&str> = path.split("::").collect();
            (1..=parts.len())
                .rev()
                .map(|n| parts[..n].join("::"))
                .find(|module| known.contains_key(module))
        })
        .filter(|module| module != name)
        .collect()
}

fn parent(name: &str) -> String {
    name.rsplit_once("::")
        .map(|(parent, _)| parent.to_owned())
        .unwrap_or_default()
}

/// The groups of modules that import each other in a loop.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(module) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|module| (module, reach(module))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for module in graph.keys() {
        if placed.contains(module) || !reached[module].contains(module) {
            continue;
        }
        let circle: Vec<String> = reached[module]
            .iter()
            .filter(|other| reached[*other].contains(module))
            .cloned()
            .collect();
        placed.extend(circle.iter().cloned());
        found.push(circle);
    }
    found
}

/// No crate has modules that import each other in a loop: each module can be read
/// (and changed) knowing only the ones below it.
#[test]
fn no_crate_has_a_circle_of_modules() {
    let mut found = Vec::new();
    for src in source_dirs() {
        let modules = modules(&src);
        let graph: BTreeMap<String, BTreeSet<String>> = modules
            .iter()
            .map(|(name, code)| (name.clone(), imports(name, code, &modules)))
            .collect();
        for circle in circles(&graph) {
            found.push(format!("{}: {}", src.display(), circle.join(" ↔ ")));
        }
    }
    assert_eq!(found, Vec::<String>::new(), "modules importing each other");
}

#[test]
fn a_circle_is_found_through_crate_and_super_paths() {
    let modules: BTreeMap<String, String> = [
        ("turn", "use crate::{level::Scope, budget};"),
        ("level", "use crate::dispatch::Dispatched;"),
        ("level::run", "use super::Level;\nuse crate::turn::Turn;"),
        ("dispatch", "fn f() { crate::turn::helper() }"),
        ("budget", ""),
    ]
    .into_iter()
    .map(|(name, code)| (name.to_owned(), code.to_owned()))
    .collect();
    let graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|(name, code)| (name.clone(), imports(name, code, &modules)))
        .collect();
    assert_eq!(
        graph["level::run"],
        BTreeSet::from(["level".into(), "turn".into()])
    );
    assert_eq!(circles(&graph), [["dispatch", "level", "turn"]]);
}

/// The `Result`s in `code` whose error is a bare `String`, their tests left out.
fn string_failures(code: &str) -> usize {
    let code = code
        .split_once("#[cfg(test)]\nmod tests")
        .map_or(code, |(product, _)| product);
    code.match_indices("Result<")
        .filter(|(at, _)| {
            let inner = &code[at + "Result<".len()..];
            let (mut depth, mut last_comma) = (1usize, None);
            for (i, c) in inner.char_indices() {
                match c {
                    '<' | '(' | '[' => depth += 1,
                    '>' | ')' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            return last_comma.is_some_and(|comma: usize| {
                                inner[comma + 1..i].trim() == "String"
                            });
                        }
                    }
                    ',' if depth == 1 => last_comma = Some(i),
                    ';' | '{' => return false,
                    _ => {}
                }
            }
            false
        })
        .count()
}

/// Failures are typed (thiserror), so that callers match on what went wrong, never
/// on a message: no `Result<_, String>` in the product's code (issue #44 counted 62).
#[test]
fn no_failure_is_a_string() {
    let found: Vec<String> = source_dirs()
        .iter()
        .flat_map(|dir| rust_files(dir))
        .filter(|file| string_failures(&std::fs::read_to_string(file).unwrap()) > 0)
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "`Result<_, String>` in the product's code: give each failure a type, in {found:?}"
    );
}

#[test]
fn a_string_failure_is_counted_however_it_is_nested() {
    let code = "fn a() -> Result<Vec<(u8, String)>, String> {}\n\
                fn b() -> Result<(), Error> {}\n\
                fn c() -> io::Result<String> {}\n\
                type D = Result<HashMap<String, String>, String>;\n\
                #[cfg(test)]\nmod tests { fn e() -> Result<(), String> {} }";
    assert_eq!(string_failures(code), 2);
}
