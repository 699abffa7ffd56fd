//! A unified diff as the window draws it, wherever a change is shown: an approval, an
//! applied call's card, a restore.

use leptos::prelude::*;

/// A unified diff, its added and removed lines in their colours.
pub fn diff_view(diff: &str) -> impl IntoView + use<> {
    let lines = diff
        .lines()
        .map(|line| {
            let class = match line.as_bytes().first() {
                Some(b'+') => "diff-line added",
                Some(b'-') => "diff-line removed",
                Some(b'@') => "diff-line hunk",
                _ => "diff-line",
            };
            view! { <span class=class>{line.to_owned()}</span> }
        })
        .collect_view();
    view! { <pre class="approval-diff">{lines}</pre> }
}
