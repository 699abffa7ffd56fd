//! Code in answers, coloured by a small lexer: comments, strings, numbers, keywords,
//! literals, types and called names, for the languages models write most. One
//! table per language and one pass over the text, so it adds kilobytes to the page,
//! not the megabytes a grammar-based highlighter would (see docs/highlighting.md).
//!
//! The output is escaped HTML: classes `hl-c` (comment), `hl-s` (string), `hl-n`
//! (number), `hl-k` (keyword), `hl-l` (literal), `hl-t` (type), `hl-f` (called
//! name), `hl-add` and `hl-del` (a diff's lines).

/// How one language reads.
struct Grammar {
    /// The names a fence may give it (`rust`, `rs`).
    names: &'static [&'static str],
    line_comments: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    /// Quote characters that open a string; `"""` and `'''` when `triple_quotes`.
    quotes: &'static [char],
    /// Quotes whose strings may run over several lines (other strings stop at the
    /// line's end, so a stray quote does not colour the rest of the block).
    multiline_quotes: &'static [char],
    triple_quotes: bool,
    /// `'a'` is a character but `'a` a lifetime.
    rust_chars: bool,
    /// A backslash in `'…'` is itself, not an escape (shell, SQL).
    raw_single_quotes: bool,
    /// `SELECT` and `select` are one keyword.
    keywords_ignore_case: bool,
    keywords: &'static [&'static str],
    literals: &'static [&'static str],
    /// A capitalised name is a type (`String`, `HashMap`).
    capitalised_types: bool,
}

const C_LIKE_COMMENTS: &[&str] = &["//"];
const C_BLOCK: Option<(&str, &str)> = Some(("/*", "*/"));

const GRAMMARS: &[Grammar] = &[
    Grammar {
        names: &["rust", "rs"],
        line_comments: C_LIKE_COMMENTS,
        block_comment: C_BLOCK,
        quotes: &['"', '\''],
        multiline_quotes: &['"'],
        triple_quotes: false,
        rust_chars: true,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[
            "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
            "extern", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
            "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
            "type", "unsafe", "use", "where", "while",
        ],
        literals: &["true", "false", "None", "Some", "Ok", "Err"],
        capitalised_types: true,
    },
    Grammar {
        names: &["python", "py", "python3"],
        line_comments: &["#"],
        block_comment: None,
        quotes: &['"', '\''],
        multiline_quotes: &[],
        triple_quotes: true,
        rust_chars: false,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[
            "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
            "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
            "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
            "with", "yield", "self",
        ],
        literals: &["True", "False", "None"],
        capitalised_types: true,
    },
    Grammar {
        names: &["javascript", "js", "jsx", "mjs", "typescript", "ts", "tsx"],
        line_comments: C_LIKE_COMMENTS,
        block_comment: C_BLOCK,
        quotes: &['"', '\'', '`'],
        multiline_quotes: &['`'],
        triple_quotes: false,
        rust_chars: false,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[
            "async",
            "await",
            "break",
            "case",
            "catch",
            "class",
            "const",
            "continue",
            "default",
            "delete",
            "do",
            "else",
            "export",
            "extends",
            "finally",
            "for",
            "from",
            "function",
            "if",
            "import",
            "in",
            "instanceof",
            "interface",
            "let",
            "new",
            "of",
            "return",
            "static",
            "switch",
            "this",
            "throw",
            "try",
            "type",
            "typeof",
            "var",
            "void",
            "while",
            "yield",
        ],
        literals: &["true", "false", "null", "undefined", "NaN"],
        capitalised_types: true,
    },
    Grammar {
        names: &["json", "jsonc", "json5"],
        line_comments: C_LIKE_COMMENTS,
        block_comment: C_BLOCK,
        quotes: &['"'],
        multiline_quotes: &[],
        triple_quotes: false,
        rust_chars: false,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[],
        literals: &["true", "false", "null"],
        capitalised_types: false,
    },
    Grammar {
        names: &["bash", "sh", "shell", "zsh", "console", "shellsession"],
        line_comments: &["#"],
        block_comment: None,
        quotes: &['"', '\''],
        multiline_quotes: &['"', '\''],
        triple_quotes: false,
        rust_chars: false,
        raw_single_quotes: true,
        keywords_ignore_case: false,
        keywords: &[
            "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
            "esac", "in", "function", "return", "export", "local", "set", "unset", "source",
            "exit",
        ],
        literals: &["true", "false"],
        capitalised_types: false,
    },
    Grammar {
        names: &[
            "c", "h", "cpp", "c++", "cc", "hpp", "cxx", "java", "kotlin", "kt", "cs", "csharp",
        ],
        line_comments: C_LIKE_COMMENTS,
        block_comment: C_BLOCK,
        quotes: &['"', '\''],
        multiline_quotes: &[],
        triple_quotes: false,
        rust_chars: false,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[
            "auto",
            "break",
            "case",
            "catch",
            "char",
            "class",
            "const",
            "continue",
            "default",
            "delete",
            "do",
            "double",
            "else",
            "enum",
            "extends",
            "extern",
            "final",
            "float",
            "for",
            "fun",
            "if",
            "implements",
            "import",
            "include",
            "int",
            "interface",
            "long",
            "namespace",
            "new",
            "package",
            "private",
            "protected",
            "public",
            "return",
            "short",
            "signed",
            "sizeof",
            "static",
            "struct",
            "switch",
            "template",
            "this",
            "throw",
            "throws",
            "try",
            "typedef",
            "typename",
            "union",
            "unsigned",
            "using",
            "val",
            "var",
            "virtual",
            "void",
            "volatile",
            "while",
        ],
        literals: &["true", "false", "null", "nullptr", "NULL"],
        capitalised_types: true,
    },
    Grammar {
        names: &["go", "golang"],
        line_comments: C_LIKE_COMMENTS,
        block_comment: C_BLOCK,
        quotes: &['"', '\'', '`'],
        multiline_quotes: &['`'],
        triple_quotes: false,
        rust_chars: false,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[
            "break",
            "case",
            "chan",
            "const",
            "continue",
            "default",
            "defer",
            "else",
            "fallthrough",
            "for",
            "func",
            "go",
            "goto",
            "if",
            "import",
            "interface",
            "map",
            "package",
            "range",
            "return",
            "select",
            "struct",
            "switch",
            "type",
            "var",
        ],
        literals: &["true", "false", "nil", "iota"],
        capitalised_types: true,
    },
    Grammar {
        names: &["toml", "ini", "yaml", "yml"],
        line_comments: &["#"],
        block_comment: None,
        quotes: &['"', '\''],
        multiline_quotes: &[],
        triple_quotes: true,
        rust_chars: false,
        raw_single_quotes: false,
        keywords_ignore_case: false,
        keywords: &[],
        literals: &["true", "false", "null", "yes", "no"],
        capitalised_types: false,
    },
    Grammar {
        names: &["sql", "sqlite", "postgresql", "mysql"],
        line_comments: &["--"],
        block_comment: C_BLOCK,
        quotes: &['\'', '"'],
        multiline_quotes: &['\''],
        triple_quotes: false,
        rust_chars: false,
        raw_single_quotes: true,
        keywords_ignore_case: true,
        keywords: &[
            "select",
            "from",
            "where",
            "insert",
            "into",
            "values",
            "update",
            "set",
            "delete",
            "create",
            "table",
            "index",
            "drop",
            "alter",
            "join",
            "left",
            "right",
            "inner",
            "outer",
            "on",
            "group",
            "by",
            "order",
            "having",
            "limit",
            "and",
            "or",
            "not",
            "as",
            "distinct",
            "primary",
            "key",
            "references",
            "begin",
            "commit",
            "with",
            "union",
            "case",
            "when",
            "then",
            "else",
            "end",
            "is",
            "in",
        ],
        literals: &["null", "true", "false"],
        capitalised_types: false,
    },
];

/// The fence's language, if Cairn colours it (`Rust`, `rs` and `rust,ignore` all
/// read as Rust).
fn grammar(language: &str) -> Option<&'static Grammar> {
    let name = language
        .split([',', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    GRAMMARS
        .iter()
        .find(|grammar| grammar.names.contains(&name.as_str()))
}

/// `code` as escaped HTML, coloured when its language is known; plain escaped text
/// otherwise.
pub fn to_html(language: &str, code: &str) -> String {
    let mut out = String::with_capacity(code.len() * 2);
    if matches!(language.trim(), "diff" | "patch") {
        diff(code, &mut out);
    } else if let Some(grammar) = grammar(language) {
        Lexer {
            grammar,
            code,
            at: 0,
            out: &mut out,
        }
        .run();
    } else {
        escape_into(code, &mut out);
    }
    out
}

/// Where `code`, still being written, can be cut so that what comes before is coloured
/// the same whatever follows: the start of its last line that begins between tokens
/// (a comment or a string still open runs on, and so does the line being written).
/// Coloured apart, the part before and the part after give exactly the colouring of
/// the whole: a token never reaches back over a line start it did not cover, and the
/// lexer carries nothing else from one token to the next.
pub fn settled_len(language: &str, code: &str) -> usize {
    let last_line = code.rfind('\n').map_or(0, |at| at + 1);
    let Some(grammar) = grammar(language).filter(|_| !matches!(language.trim(), "diff" | "patch"))
    else {
        // Plain text and diffs are coloured line by line.
        return last_line;
    };
    let mut scratch = String::new();
    let mut lexer = Lexer {
        grammar,
        code,
        at: 0,
        out: &mut scratch,
    };
    let mut settled = 0;
    // Whether the last character was read as plain text (not inside a token).
    let mut plain = false;
    while let Some(c) = lexer.rest().chars().next() {
        let start = lexer.at;
        if start > 0 && code.as_bytes()[start - 1] == b'\n' {
            settled = start;
        }
        plain = lexer.token(c).is_none();
        if plain {
            lexer.at = start + c.len_utf8();
        }
    }
    // A last line ended outside any token is whole too.
    if plain && code.ends_with('\n') {
        settled = code.len();
    }
    settled
}

fn diff(code: &str, out: &mut String) {
    for line in code.split_inclusive('\n') {
        let class = match line.as_bytes().first() {
            Some(b'+') if !line.starts_with("+++") => Some("hl-add"),
            Some(b'-') if !line.starts_with("---") => Some("hl-del"),
            Some(b'@') => Some("hl-k"),
            _ => None,
        };
        match class {
            Some(class) => span(class, line, out),
            None => escape_into(line, out),
        }
    }
}

struct Lexer<'a> {
    grammar: &'static Grammar,
    code: &'a str,
    at: usize,
    out: &'a mut String,
}

impl<'a> Lexer<'a> {
    fn run(mut self) {
        // Plain text runs until the next token, and is written in one piece.
        let mut plain = 0;
        while let Some(c) = self.rest().chars().next() {
            let start = self.at;
            let token = self.token(c);
            match token {
                Some(class) => {
                    escape_into(&self.code[plain..start], self.out);
                    span(class, &self.code[start..self.at], self.out);
                    plain = self.at;
                }
                None => self.at = start + c.len_utf8(),
            }
        }
        escape_into(&self.code[plain..], self.out);
    }

    fn rest(&self) -> &'a str {
        &self.code[self.at..]
    }

    /// Consumes the token starting at `c` and names its class, or consumes nothing
    /// (plain text).
    fn token(&mut self, c: char) -> Option<&'static str> {
        let grammar = self.grammar;
        let rest = self.rest();
        if let Some(marker) = grammar.line_comments.iter().find(|m| rest.starts_with(**m)) {
            // `#` inside a shell word (`a#b`, `$#`, `${#list}`) is not a comment.
            if *marker != "#" || self.at == 0 || self.previous().is_whitespace() {
                self.at += rest.find('\n').unwrap_or(rest.len());
                return Some("hl-c");
            }
        }
        if let Some((open, close)) = grammar.block_comment
            && rest.starts_with(open)
        {
            let end = rest[open.len()..]
                .find(close)
                .map_or(rest.len(), |at| open.len() + at + close.len());
            self.at += end;
            return Some("hl-c");
        }
        if grammar.quotes.contains(&c) {
            return self.string(c);
        }
        if c.is_ascii_digit() && (self.at == 0 || !is_word(self.previous())) {
            self.number();
            return Some("hl-n");
        }
        if c.is_alphabetic() || c == '_' {
            return Some(self.word()).flatten();
        }
        None
    }

    fn previous(&self) -> char {
        self.code[..self.at].chars().next_back().unwrap_or(' ')
    }

    fn string(&mut self, quote: char) -> Option<&'static str> {
        let grammar = self.grammar;
        let rest = self.rest();
        if grammar.triple_quotes && quote != '`' {
            let triple: String = [quote; 3].iter().collect();
            if let Some(body) = rest.strip_prefix(triple.as_str()) {
                self.at += 3 + body.find(&triple).map_or(body.len(), |at| at + 3);
                return Some("hl-s");
            }
        }
        if grammar.rust_chars && quote == '\'' {
            // `'x'` and `'\n'` are characters; `'a` in `&'a str` is a lifetime.
            let mut chars = rest[1..].chars();
            let is_char = match chars.next() {
                Some('\\') => true,
                Some(_) => chars.next() == Some('\''),
                None => false,
            };
            if !is_char {
                return None;
            }
        }
        let multiline = grammar.multiline_quotes.contains(&quote);
        let mut escaped = false;
        let mut end = rest.len();
        for (at, c) in rest.char_indices().skip(1) {
            if escaped {
                escaped = false;
            } else if c == '\\' && !(quote == '\'' && grammar.raw_single_quotes) {
                escaped = true;
            } else if c == quote {
                end = at + c.len_utf8();
                break;
            } else if c == '\n' && !multiline {
                end = at;
                break;
            }
        }
        self.at += end;
        Some("hl-s")
    }

    fn number(&mut self) {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let mut end = 0;
        while end < bytes.len() {
            let b = bytes[end];
            let decimal_point =
                b == b'.' && bytes.get(end + 1).is_some_and(|next| next.is_ascii_digit());
            if b.is_ascii_alphanumeric() || b == b'_' || decimal_point {
                end += 1;
            } else {
                break;
            }
        }
        self.at += end;
    }

    fn word(&mut self) -> Option<&'static str> {
        let rest = self.rest();
        let end = rest
            .char_indices()
            .find(|&(_, c)| !is_word(c))
            .map_or(rest.len(), |(at, _)| at);
        let word = &rest[..end];
        self.at += end;
        let after = self.rest().chars().next();
        let grammar = self.grammar;
        let is = |list: &[&str]| {
            if grammar.keywords_ignore_case {
                list.iter().any(|known| known.eq_ignore_ascii_case(word))
            } else {
                list.contains(&word)
            }
        };
        if is(grammar.literals) {
            Some("hl-l")
        } else if is(grammar.keywords) {
            Some("hl-k")
        } else if after == Some('(') || grammar.rust_chars && after == Some('!') {
            Some("hl-f")
        } else if grammar.capitalised_types && word.starts_with(|c: char| c.is_uppercase()) {
            Some("hl-t")
        } else {
            None
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn span(class: &str, text: &str, out: &mut String) {
    out.push_str("<span class=\"");
    out.push_str(class);
    out.push_str("\">");
    escape_into(text, out);
    out.push_str("</span>");
}

/// `text` made safe for HTML text and quoted attributes alike.
pub fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::to_html;

    /// The code's tokens with their classes, as `class:text`, plain text left out.
    fn classes(html: &str) -> Vec<String> {
        html.split("<span class=\"")
            .skip(1)
            .map(|piece| {
                let (class, rest) = piece.split_once("\">").unwrap();
                let text = rest.split_once("</span>").unwrap().0;
                format!("{class}:{text}")
            })
            .collect()
    }

    #[test]
    fn rust_reads_as_rust() {
        let html = to_html(
            "rust",
            "// greet\nfn main() {\n    let name: &'a str = \"Ada \\\"L\\\"\";\n    println!(\"{}\", 'x', 42, 1.5e3, None::<String>);\n}\n",
        );
        assert_eq!(
            classes(&html),
            [
                "hl-c:// greet",
                "hl-k:fn",
                "hl-f:main",
                "hl-k:let",
                "hl-s:&quot;Ada \\&quot;L\\&quot;&quot;",
                "hl-f:println",
                "hl-s:&quot;{}&quot;",
                "hl-s:&#39;x&#39;",
                "hl-n:42",
                "hl-n:1.5e3",
                "hl-l:None",
                "hl-t:String",
            ]
        );
        // The lifetime is plain text, and nothing is lost or added.
        assert!(html.contains("&amp;&#39;a str"), "{html}");
    }

    #[test]
    fn every_character_survives_escaped() {
        let code = "if a < b && c > \"d\" { x = '<'; } /* <end> */ # ünïcödé 🎉";
        for language in [
            "rust", "python", "js", "bash", "c", "go", "toml", "sql", "diff", "nope",
        ] {
            let html = to_html(language, code);
            let text = html
                .split('<')
                .map(|piece| piece.split_once('>').map_or(piece, |(_, text)| text))
                .collect::<String>()
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&");
            assert_eq!(text, code, "{language}: {html}");
        }
    }

    #[test]
    fn python_triple_quotes_and_comments() {
        let html = to_html(
            "py",
            "def f(x):\n    \"\"\"Doc\n    more\"\"\"\n    return x # done\n",
        );
        assert_eq!(
            classes(&html),
            [
                "hl-k:def",
                "hl-f:f",
                "hl-s:&quot;&quot;&quot;Doc\n    more&quot;&quot;&quot;",
                "hl-k:return",
                "hl-c:# done",
            ]
        );
    }

    #[test]
    fn shell_comments_need_a_word_break_and_strings_span_lines() {
        let html = to_html("sh", "echo $# a#b 'one\ntwo' # note\n");
        assert_eq!(classes(&html), ["hl-s:&#39;one\ntwo&#39;", "hl-c:# note"]);
    }

    #[test]
    fn an_unclosed_string_stops_at_its_line() {
        let html = to_html("js", "let s = \"oops\nconst t = 1;\n");
        assert_eq!(
            classes(&html),
            ["hl-k:let", "hl-s:&quot;oops", "hl-k:const", "hl-n:1"]
        );
    }

    #[test]
    fn sql_keywords_ignore_case_and_diffs_colour_lines() {
        assert_eq!(
            classes(&to_html("SQL", "SELECT name FROM t -- all\n")),
            ["hl-k:SELECT", "hl-k:FROM", "hl-c:-- all"]
        );
        assert_eq!(
            classes(&to_html(
                "diff",
                "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same\n"
            )),
            ["hl-k:@@ -1 +1 @@\n", "hl-del:-old\n", "hl-add:+new\n"]
        );
    }

    #[test]
    fn unknown_languages_are_escaped_text() {
        assert_eq!(to_html("brainfuck", "<+>"), "&lt;+&gt;");
        assert_eq!(to_html("", "a & b"), "a &amp; b");
    }

    #[test]
    fn code_settles_at_line_starts_outside_tokens() {
        use super::settled_len;
        let code = "let a = 1;\n/* open\nstill\n";
        assert_eq!(
            settled_len("rust", code),
            "let a = 1;\n".len(),
            "a comment runs on"
        );
        let code = "let a = 1; // done\nlet b";
        assert_eq!(settled_len("rust", code), "let a = 1; // done\n".len());
        assert_eq!(
            settled_len("rust", "x\ny\n"),
            4,
            "a last line ended outside tokens"
        );
        assert_eq!(settled_len("text", "a\nb"), 2, "plain text by lines");
    }
}
