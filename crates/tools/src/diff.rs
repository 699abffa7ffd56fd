//! A unified line diff, for showing the change a write would make before the user
//! allows it: `@@ -a,b +c,d @@` hunks of ` `, `-` and `+` lines, three lines of
//! context around each change.
//!
//! Lines common to both ends are set aside first; what remains between them is
//! matched by a longest common subsequence when it is small enough, else shown as
//! all removed and all added (still a correct diff, only a coarser one).

/// Lines of unchanged text kept around each change.
const CONTEXT: usize = 3;
/// The most cells the common-subsequence table may have (rows × columns).
const MAX_CELLS: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Remove,
    Add,
}

/// The diff from `old` to `new`; empty when they are the same.
pub fn unified(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = edit_script(&a, &b);
    if ops.iter().all(|op| *op == Op::Keep) {
        return String::new();
    }
    render(&a, &b, &ops)
}

/// One op per line of the walk through both texts.
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Keep; head];
    if mid_a.len().saturating_mul(mid_b.len()) <= MAX_CELLS {
        ops.extend(common_subsequence(mid_a, mid_b));
    } else {
        ops.extend(std::iter::repeat_n(Op::Remove, mid_a.len()));
        ops.extend(std::iter::repeat_n(Op::Add, mid_b.len()));
    }
    ops.extend(std::iter::repeat_n(Op::Keep, tail));
    ops
}

fn common_subsequence(a: &[&str], b: &[&str]) -> Vec<Op> {
    let width = b.len() + 1;
    // lengths[i * width + j]: the longest common subsequence of a[i..] and b[j..].
    let mut lengths = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lengths[i * width + j] = if a[i] == b[j] {
                lengths[(i + 1) * width + j + 1] + 1
            } else {
                lengths[(i + 1) * width + j].max(lengths[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(a.len() + b.len());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            ops.push(Op::Keep);
            i += 1;
            j += 1;
        } else if lengths[(i + 1) * width + j] >= lengths[i * width + j + 1] {
            ops.push(Op::Remove);
            i += 1;
        } else {
            ops.push(Op::Add);
            j += 1;
        }
    }
    ops.extend(std::iter::repeat_n(Op::Remove, a.len() - i));
    ops.extend(std::iter::repeat_n(Op::Add, b.len() - j));
    ops
}

/// The ops as hunks: each change with its context, changes closer than twice the
/// context sharing one hunk.
fn render(a: &[&str], b: &[&str], ops: &[Op]) -> String {
    // Where each op stands in `a` and `b` before it applies.
    let mut at = Vec::with_capacity(ops.len());
    let (mut i, mut j) = (0, 0);
    for op in ops {
        at.push((i, j));
        match op {
            Op::Keep => (i, j) = (i + 1, j + 1),
            Op::Remove => i += 1,
            Op::Add => j += 1,
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k] != Op::Keep).collect();
    let mut out = String::new();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k + 1 < changed.len() && changed[k + 1] <= end + 2 * CONTEXT + 1 {
            k += 1;
            end = changed[k];
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (old_start, new_start) = at[start];
        let old_len = ops[start..end].iter().filter(|op| **op != Op::Add).count();
        let new_len = ops[start..end]
            .iter()
            .filter(|op| **op != Op::Remove)
            .count();
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_start, old_len),
            range(new_start, new_len)
        ));
        for (op, &(i, j)) in ops[start..end].iter().zip(&at[start..end]) {
            let (mark, line) = match op {
                Op::Keep => (' ', a[i]),
                Op::Remove => ('-', a[i]),
                Op::Add => ('+', b[j]),
            };
            out.push(mark);
            out.push_str(line);
            out.push('\n');
        }
        k += 1;
    }
    out
}

/// A hunk's range as unified diffs write it: 1-based, `start,len` unless one line.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_has_no_diff() {
        assert_eq!(unified("a\nb\n", "a\nb\n"), "");
    }

    #[test]
    fn a_changed_line_shows_with_its_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified(old, new),
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn far_apart_changes_are_separate_hunks_and_near_ones_share_one() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        let diff = unified(&old, &new);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        let near = old.replace("5\n", "five\n").replace("9\n", "nine\n");
        assert_eq!(unified(&old, &near).matches("@@ -").count(), 1);
    }

    #[test]
    fn added_and_removed_lines_at_either_end() {
        assert_eq!(unified("", "a\nb\n"), "@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!(unified("a\nb\n", "b\n"), "@@ -1,2 +1 @@\n-a\n b\n");
        assert_eq!(unified("a\n", "a\nb\n"), "@@ -1 +1,2 @@\n a\n+b\n");
    }

    #[test]
    fn applying_the_diff_gives_the_new_text() {
        let old = "fn main() {\n    println!(\"hi\");\n}\n\nfn other() {}\n";
        let new = "use std::io;\n\nfn main() {\n    println!(\"hello\");\n}\n";
        let diff = unified(old, new);
        // Every old line is kept or removed, every new line kept or added, in order.
        let olds: Vec<&str> = diff
            .lines()
            .filter(|l| !l.starts_with("@@") && !l.starts_with('+'))
            .map(|l| &l[1..])
            .collect();
        let news: Vec<&str> = diff
            .lines()
            .filter(|l| !l.starts_with("@@") && !l.starts_with('-'))
            .map(|l| &l[1..])
            .collect();
        assert_eq!(olds, old.lines().collect::<Vec<_>>());
        assert_eq!(news, new.lines().collect::<Vec<_>>());
    }
}
