//! The README's crate graph is the one the manifests declare: every arrow a
//! dependency, every dependency an arrow; and the front ends come in through one
//! door, the runtime. (It lives here because the testkit is the one crate that is
//! about the repository rather than the product.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod manifest;
mod paths;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use paths::{Crate, ModulePath, circles, inherent_impls};

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
    // The root's workspace entries, read once for every manifest that names them.
    static WORKSPACE: OnceLock<manifest::Workspace> = OnceLock::new();
    let workspace = WORKSPACE.get_or_init(|| {
        manifest::workspace(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap())
    });
    manifest::building_deps(text, workspace)
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
    // Renamed, or written as a table of its own, it is still the store.
    let renamed = "[dependencies]\ndb = { package = \"cairn-store\", path = \"../store\" }\n";
    assert_eq!(bypasses(renamed), ["store"]);
    let table = "[dependencies.cairn-store]\nworkspace = true\n";
    assert_eq!(bypasses(table), ["store"]);
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

/// What the runtime's source `text` hands out of what it keeps inside: a kept name
/// re-exported (under its name or another), a glob or a whole crate of ours
/// re-exported (which hands out everything in it), a type alias of a kept name, or a
/// getter for the store or its sessions.
fn runtime_leaks(text: &str) -> Vec<String> {
    let mut leaks = Vec::new();
    let names = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect()
    };
    // A `pub use` may span lines: read each up to its `;`.
    for export in text.split("pub use ").skip(1) {
        let export = export.split(';').next().unwrap_or_default().trim();
        if !export.starts_with("cairn_") {
            continue;
        }
        let words = names(export);
        let whole_crate = words.len() == 1
            || words.get(1).is_some_and(|w| w == "as" || w == "self")
            || export.contains("{self");
        let kept = words
            .iter()
            .any(|word| KEPT_INSIDE.contains(&word.as_str()));
        if export.contains('*') || whole_crate || kept {
            leaks.push(format!("pub use {export}"));
        }
    }
    for alias in text.split("pub type ").skip(1) {
        let alias = alias.split(';').next().unwrap_or_default().trim();
        if names(alias)
            .iter()
            .any(|word| KEPT_INSIDE.contains(&word.as_str()))
        {
            leaks.push(format!("pub type {alias}"));
        }
    }
    for getter in ["pub fn store(", "pub fn sessions("] {
        if text.contains(getter) {
            leaks.push(getter.to_owned());
        }
    }
    leaks
}

#[test]
fn the_runtime_hands_out_no_store_sessions_or_server() {
    let mut leaks = Vec::new();
    for path in rust_files(&root().join("crates/runtime/src")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let text = product_code(&text);
        leaks.extend(
            runtime_leaks(text)
                .into_iter()
                .map(|leak| format!("{}: {leak}", path.display())),
        );
    }
    assert_eq!(
        leaks,
        Vec::<String>::new(),
        "the runtime hands out what it owns"
    );
}

#[test]
fn every_way_of_handing_out_the_store_is_a_leak() {
    for (code, leaked) in [
        ("pub use cairn_store::Store;", true),
        ("pub use cairn_store::{Redo, Store as Db};", true),
        ("pub use cairn_store::*;", true),
        ("pub use cairn_store;", true),
        ("pub use cairn_store as store;", true),
        ("pub use cairn_store::{self, Redo};", true),
        ("pub type Db = cairn_store::Store;", true),
        ("pub fn store(&self) -> &Store { &self.store }", true),
        ("pub use cairn_store::Redo;", false),
        ("pub use cairn_providers::{Endpoint, Sampling};", false),
        ("pub use crate::named::Store;", false),
    ] {
        assert_eq!(!runtime_leaks(code).is_empty(), leaked, "{code}");
    }
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

/// The crate under `src`: each module's code (its tests left out), by path; the root
/// is `lib.rs`, or `main.rs` where there is no library.
fn crate_at(src: &Path) -> Crate {
    let root_file = if src.join("lib.rs").exists() {
        "lib"
    } else {
        "main"
    };
    let mut found = BTreeMap::new();
    for path in rust_files(src) {
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut name: ModulePath = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if name.last().is_some_and(|last| last == "mod") {
            name.pop();
        }
        match name.as_slice() {
            [only] if only == root_file => name.clear(),
            // The other crate roots beside it (a binary's main, a build script).
            [only] if only == "lib" || only == "main" || only == "build" => continue,
            _ => {}
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A file's own tests may reach anywhere; the module's code may not.
        let code = product_code(&text).to_owned();
        found.insert(name, code);
    }
    Crate::new(found)
}

/// A source file's code without its `#[cfg(test)] mod tests` (a file's own tests may
/// do what its code may not).
fn product_code(text: &str) -> &str {
    text.split_once("#[cfg(test)]\nmod tests")
        .map_or(text, |(product, _)| product)
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

/// No crate has modules that import each other in a loop: each module can be read
/// (and changed) knowing only the ones below it.
#[test]
fn no_crate_has_a_circle_of_modules() {
    let mut found = Vec::new();
    for src in source_dirs() {
        let krate = crate_at(&src);
        let graph: BTreeMap<ModulePath, BTreeSet<ModulePath>> = krate
            .modules()
            .map(|module| (module.clone(), krate.imports(module)))
            .collect();
        for circle in circles(&graph) {
            let names: Vec<String> = circle.iter().map(|module| module.join("::")).collect();
            found.push(format!("{}: {}", src.display(), names.join(" ↔ ")));
        }
    }
    assert_eq!(found, Vec::<String>::new(), "modules importing each other");
}

/// The engine's types each have one inherent `impl` block, so that a type's methods
/// are read in one place and no file adds to another's type: `Turn` once had six, in
/// six files that called each other around a loop no import showed. A type written
/// once per platform (`unix.rs`, `windows.rs`) has one block per platform.
#[test]
fn each_engine_type_has_one_impl_block() {
    let src = root().join("crates/core/src");
    // type → platform ("" for every platform) → blocks.
    let mut blocks: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for file in rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = product_code(&text);
        let stem = file.file_stem().unwrap().to_string_lossy();
        let platform = match stem.as_ref() {
            "unix" | "windows" | "linux" | "macos" => stem.into_owned(),
            _ => String::new(),
        };
        for name in inherent_impls(code) {
            *blocks
                .entry(name)
                .or_default()
                .entry(platform.clone())
                .or_default() += 1;
        }
    }
    let mut split = Vec::new();
    for (name, by_platform) in &blocks {
        let everywhere = by_platform.get("").copied().unwrap_or(0);
        let most = by_platform
            .iter()
            .map(|(platform, n)| {
                if platform.is_empty() {
                    *n
                } else {
                    n + everywhere
                }
            })
            .max()
            .unwrap_or(0);
        if most > 1 {
            split.push(format!("{name}: {most} blocks"));
        }
    }
    assert!(!blocks.is_empty(), "the engine has types with methods");
    assert_eq!(
        split,
        Vec::<String>::new(),
        "types whose methods are spread"
    );
}

/// The `Result`s in `code` whose error is a bare `String`, their tests left out.
fn string_failures(code: &str) -> usize {
    let code = product_code(code);
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

/// The functions in `code` longer than `limit` lines (signature to closing brace), by
/// name, its tests left out. A function ends at the first `}` at its own indentation,
/// as rustfmt writes them.
fn long_functions(code: &str, limit: usize) -> Vec<(String, usize)> {
    let code = product_code(code);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let signature = ["async ", "const ", "unsafe "]
            .iter()
            .fold(without_visibility(body), |rest, word| {
                rest.strip_prefix(word).unwrap_or(rest)
            });
        let Some(name) = signature.strip_prefix("fn ") else {
            continue;
        };
        let name: String = name
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if body.ends_with(';') || body.ends_with('}') {
            continue;
        }
        let closing = format!("{indent}}}");
        let Some(end) = lines[at + 1..].iter().position(|line| *line == closing) else {
            continue;
        };
        let length = end + 2;
        if length > limit {
            found.push((name, length));
        }
    }
    found
}

/// `line` without the visibility it opens with (`pub`, `pub(crate)`, `pub(super)`,
/// `pub(in path)`).
fn without_visibility(line: &str) -> &str {
    let Some(rest) = line.strip_prefix("pub") else {
        return line;
    };
    let rest = match rest.strip_prefix('(') {
        Some(scoped) => scoped.split_once(')').map_or(rest, |(_, after)| after),
        None => rest,
    };
    rest.strip_prefix(' ').unwrap_or(line)
}

/// The webview's code is read a component at a time: no function in it runs past 80
/// lines (issue #44 found five of 96–221), so a view that grows is split into the
/// parts it shows.
#[test]
fn no_ui_function_is_longer_than_80_lines() {
    let found: Vec<String> = rust_files(&root().join("ui/src"))
        .into_iter()
        .filter(|file| !file.ends_with("tests.rs"))
        .flat_map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            long_functions(&text, 80)
                .into_iter()
                .map(move |(name, lines)| format!("{} {name}: {lines} lines", file.display()))
        })
        .collect();
    assert_eq!(
        found,
        Vec::<String>::new(),
        "split these into the parts they show"
    );
}

#[test]
fn a_long_function_is_found_at_any_depth_and_a_short_one_is_not() {
    let body = "    let x = 1;\n".repeat(80);
    let code = format!(
        "pub fn long() {{\n{body}}}\n\
         fn short() {{\n    let y = 2;\n}}\n\
         fn one_line() {{}}\n\
         impl A {{\n    pub(crate) async fn nested(\n        a: u8,\n    ) {{\n{body}    }}\n}}\n\
         pub(super) fn scoped() {{\n{body}}}\n\
         #[cfg(test)]\nmod tests {{\n    fn test_long() {{\n{body}    }}\n}}\n"
    );
    assert_eq!(
        long_functions(&code, 80),
        vec![
            ("long".to_owned(), 82),
            ("nested".to_owned(), 84),
            ("scoped".to_owned(), 82)
        ]
    );
}
