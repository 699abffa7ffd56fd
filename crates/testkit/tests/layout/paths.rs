//! Which modules of a crate each module names: every `crate::`, `super::` and
//! `self::` path in its code (use groups expanded, `super::super::` climbed), followed
//! through the `pub use` re-exports it goes by, to the module that defines the item.

use std::collections::{BTreeMap, BTreeSet};

/// A module's path inside its crate (`[]` is the crate root).
pub type ModulePath = Vec<String>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Comma,
    Star,
    Semi,
    Other(char),
}

/// `code` as path tokens; comments and string literals left out (a path in a doc
/// comment or a message is no import).
fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            'r' if next == Some('"') || next == Some('#') => {
                let mut j = i + 1;
                let mut hashes = 0;
                while chars.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if chars.get(j) != Some(&'"') {
                    // An identifier starting with `r`.
                    i = ident(&chars, i, &mut out);
                    continue;
                }
                j += 1;
                let closing: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                while j < chars.len() && !chars[j..].starts_with(&closing) {
                    j += 1;
                }
                i = j + closing.len();
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            // A char literal ('"', '{'); a lifetime ('a) has no closing quote.
            '\'' if chars.get(i + 2) == Some(&'\'') => i += 3,
            '\'' if next == Some('\\') => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            // An arrow is not the end of generics.
            '-' if next == Some('>') => {
                out.push(Token::Other('-'));
                i += 2;
            }
            ':' if next == Some(':') => {
                out.push(Token::Sep);
                i += 2;
            }
            c if c.is_alphabetic() || c == '_' => i = ident(&chars, i, &mut out),
            c if c.is_whitespace() => i += 1,
            c => {
                out.push(match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    '*' => Token::Star,
                    ';' => Token::Semi,
                    c => Token::Other(c),
                });
                i += 1;
            }
        }
    }
    out
}

fn ident(chars: &[char], mut i: usize, out: &mut Vec<Token>) -> usize {
    let start = i;
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    out.push(Token::Ident(chars[start..i].iter().collect()));
    i
}

/// One path of a use tree, and the name it is brought in as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct UsePath {
    segments: Vec<String>,
    alias: Option<String>,
    glob: bool,
}

/// The paths of the tree starting at `at` (`a::b`, `a::{b, c::{d, self}}`, `a::*`,
/// `a as b`), each under `prefix`; and where the tree ends.
fn use_tree(tokens: &[Token], mut at: usize, mut prefix: Vec<String>) -> (Vec<UsePath>, usize) {
    while let Some(token) = tokens.get(at) {
        match token {
            Token::Ident(segment) => {
                // `self` in a group is the group's own path (`a::{self, b}`).
                if segment != "self" || prefix.is_empty() {
                    prefix.push(segment.clone());
                }
                at += 1;
                if tokens.get(at) == Some(&Token::Sep) {
                    at += 1;
                    continue;
                }
                let alias = match (tokens.get(at), tokens.get(at + 1)) {
                    (Some(Token::Ident(word)), Some(Token::Ident(alias))) if word == "as" => {
                        at += 2;
                        Some(alias.clone())
                    }
                    _ => None,
                };
                let path = UsePath {
                    segments: prefix,
                    alias,
                    glob: false,
                };
                return (vec![path], at);
            }
            Token::Star => {
                let path = UsePath {
                    segments: prefix,
                    alias: None,
                    glob: true,
                };
                return (vec![path], at + 1);
            }
            Token::Open => {
                at += 1;
                let mut paths = Vec::new();
                while let Some(token) = tokens.get(at) {
                    match token {
                        Token::Close => {
                            at += 1;
                            break;
                        }
                        Token::Comma => at += 1,
                        _ => {
                            let (found, end) = use_tree(tokens, at, prefix.clone());
                            paths.extend(found);
                            // A tree that reads nothing (stray token) must still move on.
                            at = end.max(at + 1);
                        }
                    }
                }
                return (paths, at);
            }
            _ => break,
        }
    }
    let path = UsePath {
        segments: prefix,
        alias: None,
        glob: false,
    };
    (vec![path], at)
}

/// `path` (its first segment `crate`, `super` or `self`) from module `from` as a path
/// from the crate root; `None` when it climbs above the root.
fn absolute(from: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => from.to_vec(),
        Some("super") => from.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        base.pop()?;
        while rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The crate's modules (by path; the root included) and what each re-exports.
pub struct Crate {
    modules: BTreeMap<ModulePath, String>,
    /// `module → name → the path it re-exports`.
    exports: BTreeMap<ModulePath, BTreeMap<String, Vec<String>>>,
    /// `module → the modules it re-exports everything of`.
    globs: BTreeMap<ModulePath, Vec<ModulePath>>,
}

impl Crate {
    /// `modules`: each module's path and its code, the root's (`[]`) among them. A
    /// module declared `#[cfg(test)]` is the tests' own, and left out with its own.
    pub fn new(mut modules: BTreeMap<ModulePath, String>) -> Self {
        let for_tests: Vec<ModulePath> = modules
            .iter()
            .flat_map(|(module, code)| {
                test_modules(code).into_iter().map(move |name| {
                    let mut child = module.clone();
                    child.push(name);
                    child
                })
            })
            .collect();
        modules.retain(|module, _| !for_tests.iter().any(|test| module.starts_with(test)));
        let mut exports: BTreeMap<ModulePath, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let mut globs: BTreeMap<ModulePath, Vec<ModulePath>> = BTreeMap::new();
        for (module, code) in &modules {
            for path in reexports(code) {
                let Some(target) = Self::target(&modules, module, &path.segments) else {
                    continue;
                };
                if path.glob {
                    globs.entry(module.clone()).or_default().push(target);
                } else if let Some(name) = path.alias.or_else(|| target.last().cloned()) {
                    exports
                        .entry(module.clone())
                        .or_default()
                        .insert(name, target);
                }
            }
        }
        Self {
            modules,
            exports,
            globs,
        }
    }

    /// A re-exported path as a path from the root: `crate::`/`super::`/`self::` ones,
    /// and bare ones that start at a child module (`pub use turn::Turn`).
    fn target(
        modules: &BTreeMap<ModulePath, String>,
        module: &[String],
        segments: &[String],
    ) -> Option<Vec<String>> {
        if let Some(path) = absolute(module, segments) {
            return Some(path);
        }
        let mut child = module.to_vec();
        child.push(segments.first()?.clone());
        modules.contains_key(&child).then(|| {
            let mut path = module.to_vec();
            path.extend(segments.iter().cloned());
            path
        })
    }

    /// The module an absolute path's item is defined in, through re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> Option<ModulePath> {
        if depth > 16 {
            return None;
        }
        // The longest module the path starts with (the root at least).
        let n = (0..=path.len())
            .rev()
            .find(|n| self.modules.contains_key(&path[..*n]))?;
        let module = path[..n].to_vec();
        let Some(name) = path.get(n) else {
            return Some(module);
        };
        if let Some(target) = self.exports.get(&module).and_then(|names| names.get(name)) {
            let mut next = target.clone();
            next.extend(path[n + 1..].iter().cloned());
            return self.resolve(&next, depth + 1);
        }
        for glob in self.globs.get(&module).into_iter().flatten() {
            let mut next = glob.clone();
            next.extend(path[n..].iter().cloned());
            if let Some(found) = self.resolve(&next, depth + 1)
                && (found != *glob || self.defines(glob, name))
            {
                return Some(found);
            }
        }
        Some(module)
    }

    /// Whether `module`'s own code defines an item called `name`.
    fn defines(&self, module: &ModulePath, name: &str) -> bool {
        let Some(code) = self.modules.get(module) else {
            return false;
        };
        let tokens = tokens(code);
        tokens.windows(2).any(|pair| match pair {
            [Token::Ident(keyword), Token::Ident(item)] => {
                item == name
                    && matches!(
                        keyword.as_str(),
                        "struct" | "enum" | "fn" | "trait" | "type" | "const" | "static" | "mod"
                    )
            }
            _ => false,
        })
    }

    /// The other modules `module`'s code names.
    pub fn imports(&self, module: &ModulePath) -> BTreeSet<ModulePath> {
        let code = &self.modules[module];
        let tokens = tokens(code);
        let mut found = BTreeSet::new();
        for (at, token) in tokens.iter().enumerate() {
            let Token::Ident(first) = token else {
                continue;
            };
            let starts_path = at == 0 || tokens[at - 1] != Token::Sep;
            if !starts_path
                || !matches!(first.as_str(), "crate" | "super" | "self")
                || tokens.get(at + 1) != Some(&Token::Sep)
            {
                continue;
            }
            let (paths, _) = use_tree(&tokens, at, Vec::new());
            for path in paths {
                let Some(absolute) = absolute(module, &path.segments) else {
                    continue;
                };
                if let Some(target) = self.resolve(&absolute, 0)
                    && target != *module
                    && !target.is_empty()
                {
                    found.insert(target);
                }
            }
        }
        found
    }

    /// Every module but the root (which declares them all).
    pub fn modules(&self) -> impl Iterator<Item = &ModulePath> {
        self.modules.keys().filter(|module| !module.is_empty())
    }
}

/// The modules `code` declares for its tests only (`#[cfg(test)] mod name;`).
fn test_modules(code: &str) -> Vec<String> {
    code.split("#[cfg(test)]")
        .skip(1)
        .filter_map(|after| {
            let declared = after.trim_start().strip_prefix("mod ")?;
            let (name, rest) = declared.split_once(|c: char| !(c.is_alphanumeric() || c == '_'))?;
            (rest.is_empty() || declared[name.len()..].trim_start().starts_with(';'))
                .then(|| name.to_owned())
        })
        .collect()
}

/// The `pub use` (and `pub(crate) use`, …) paths of `code`.
fn reexports(code: &str) -> Vec<UsePath> {
    let tokens = tokens(code);
    let mut found = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        if tokens[at] != Token::Ident("pub".into()) {
            at += 1;
            continue;
        }
        let mut next = at + 1;
        // `pub(crate)`, `pub(super)`, `pub(in path)`: skip to `use`.
        if tokens.get(next) == Some(&Token::Other('(')) {
            while next < tokens.len() && tokens[next] != Token::Ident("use".into()) {
                if matches!(tokens[next], Token::Semi | Token::Open) {
                    break;
                }
                next += 1;
            }
        }
        if tokens.get(next) == Some(&Token::Ident("use".into())) {
            let (paths, end) = use_tree(&tokens, next + 1, Vec::new());
            found.extend(paths);
            at = end;
        } else {
            at = next;
        }
    }
    found
}

/// The types `code` has an inherent `impl` block for, once per block (`impl<T>
/// Name<T> where … {`; `impl Trait for Name` is not one).
pub fn inherent_impls(code: &str) -> Vec<String> {
    let tokens = tokens(code);
    let mut found = Vec::new();
    for (at, token) in tokens.iter().enumerate() {
        if *token != Token::Ident("impl".into()) {
            continue;
        }
        // `impl` in a type or an argument (`-> impl Future`, `&mut impl FnMut()`)
        // follows these.
        if at > 0
            && (matches!(
                tokens[at - 1],
                Token::Other('-' | '&' | '(' | '<' | ',' | ':')
            ) || tokens[at - 1] == Token::Ident("mut".into()))
        {
            continue;
        }
        let (mut depth, mut name, mut trait_impl) = (0usize, None, false);
        for token in &tokens[at + 1..] {
            match token {
                Token::Other('<') => depth += 1,
                Token::Other('>') => depth = depth.saturating_sub(1),
                Token::Ident(word) if depth == 0 && word == "for" => trait_impl = true,
                Token::Ident(word) if depth == 0 && word == "where" => break,
                Token::Ident(word) if depth == 0 && name.is_none() && word != "dyn" => {
                    name = Some(word.clone());
                }
                // The last segment of a path names the type (`impl fmt::Debug for …`).
                Token::Sep if depth == 0 => name = None,
                Token::Open | Token::Semi => break,
                _ => {}
            }
        }
        if let (Some(name), false) = (name, trait_impl) {
            found.push(name);
        }
    }
    found
}

/// The groups of modules that import each other in a loop.
pub fn circles(graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &ModulePath| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(module) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&ModulePath, BTreeSet<ModulePath>> =
        graph.keys().map(|module| (module, reach(module))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for module in graph.keys() {
        if placed.contains(module) || !reached[module].contains(module) {
            continue;
        }
        let circle: Vec<ModulePath> = reached[module]
            .iter()
            .filter(|other| reached[*other].contains(module))
            .cloned()
            .collect();
        placed.extend(circle.iter().cloned());
        found.push(circle);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> ModulePath {
        text.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn krate(modules: &[(&str, &str)]) -> Crate {
        Crate::new(
            modules
                .iter()
                .map(|(name, code)| (path(name), (*code).to_owned()))
                .collect(),
        )
    }

    fn graph(krate: &Crate) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
        krate
            .modules()
            .map(|module| (module.clone(), krate.imports(module)))
            .collect()
    }

    fn names(circles: Vec<Vec<ModulePath>>) -> Vec<Vec<String>> {
        circles
            .into_iter()
            .map(|circle| circle.iter().map(|m| m.join("::")).collect())
            .collect()
    }

    #[test]
    fn a_circle_is_found_through_crate_and_super_paths() {
        let krate = krate(&[
            ("", "mod turn; mod level; mod dispatch; mod budget;"),
            ("turn", "use crate::{level::Scope, budget};"),
            ("level", "mod run;\nuse crate::dispatch::Dispatched;"),
            ("level::run", "use super::Level;\nuse crate::turn::Turn;"),
            ("dispatch", "fn f() { crate::turn::helper() }"),
            ("budget", ""),
        ]);
        assert_eq!(
            krate.imports(&path("level::run")),
            BTreeSet::from([path("level"), path("turn")])
        );
        assert_eq!(
            names(circles(&graph(&krate))),
            [["dispatch", "level", "turn"]]
        );
    }

    #[test]
    fn a_circle_through_the_roots_reexport_is_found() {
        let krate = krate(&[
            (
                "",
                "mod a; mod b;\npub use a::Alpha;\npub(crate) use b::{Beta as B};",
            ),
            ("a", "pub struct Alpha; fn f(_: crate::B) {}"),
            ("b", "pub struct Beta; use crate::Alpha;"),
        ]);
        assert_eq!(krate.imports(&path("a")), BTreeSet::from([path("b")]));
        assert_eq!(names(circles(&graph(&krate))), [["a", "b"]]);
    }

    #[test]
    fn a_circle_through_a_parents_reexport_and_super_super_is_found() {
        let krate = krate(&[
            ("", "mod turn; mod tools;"),
            ("turn", "mod parts;\npub use self::parts::Accounts;"),
            (
                "turn::parts",
                "pub struct Accounts; use super::super::tools::Tool;",
            ),
            (
                "tools",
                "pub struct Tool; fn f(_: &crate::turn::Accounts) {}",
            ),
        ]);
        assert_eq!(
            krate.imports(&path("turn::parts")),
            BTreeSet::from([path("tools")])
        );
        assert_eq!(
            krate.imports(&path("tools")),
            BTreeSet::from([path("turn::parts")])
        );
        assert_eq!(names(circles(&graph(&krate))), [["tools", "turn::parts"]]);
    }

    #[test]
    fn a_glob_reexport_leads_to_the_module_that_defines_the_name() {
        let krate = krate(&[
            ("", "mod a; mod b; mod c;\npub use a::*;\npub use b::*;"),
            ("a", "pub enum Left {}"),
            ("b", "pub(crate) fn right() {}"),
            ("c", "use crate::{Left, right};"),
        ]);
        assert_eq!(
            krate.imports(&path("c")),
            BTreeSet::from([path("a"), path("b")])
        );
    }

    #[test]
    fn a_module_declared_for_tests_is_left_out() {
        let krate = krate(&[
            (
                "",
                "mod a; mod b;\n#[cfg(test)]\nmod probe;\n#[cfg(test)]\nmod tests {}",
            ),
            ("a", "pub struct A; use crate::b::B;"),
            ("b", "pub struct B; #[cfg(test)] use crate::probe::P;"),
            ("probe", "pub struct P; use crate::a::A;"),
        ]);
        assert_eq!(krate.modules().count(), 2);
        assert_eq!(krate.imports(&path("b")), BTreeSet::new());
        assert_eq!(circles(&graph(&krate)), Vec::<Vec<ModulePath>>::new());
    }

    #[test]
    fn only_inherent_impl_blocks_are_counted() {
        let code = "impl Turn {}\nimpl<'a> Here<'a> where 'a: 'static {}\n\
                    impl fmt::Debug for Turn {}\nimpl<T: Into<String>> From<T> for Name {}\n\
                    fn f() -> impl Future<Output = ()> {}\nimpl dyn Journal {}\n\
                    fn g(say: &mut impl FnMut(String)) {}\n\
                    impl super::Turn {}";
        assert_eq!(inherent_impls(code), ["Turn", "Here", "Journal", "Turn"]);
    }

    #[test]
    fn paths_in_comments_and_strings_are_not_imports() {
        let krate = krate(&[
            ("", "mod a; mod b;"),
            (
                "a",
                "// see crate::b::X\n/* crate::b */ const S: &str = \"crate::b::X\";\n\
                 const R: &str = r#\"crate::b\"#; const C: char = '\"';",
            ),
            ("b", ""),
        ]);
        assert_eq!(krate.imports(&path("a")), BTreeSet::new());
    }
}
