//! What a write or a command would do, as its approval shows it: the diff against the
//! file a write replaces (or the new file), the command as a shell line in its folder.
//! Best effort: when the file cannot be read as text, the approval shows the arguments.

use cairn_core::tool::ToolContext;
use cairn_core::workspace::WorkspaceError;
use cairn_protocol::ApprovalPreview;

use super::disk::on_disk;
use crate::diff;

/// The file at `path` as text: `Some(None)` when there is none yet, `None` when it
/// cannot be read as text.
async fn current_text(ctx: &ToolContext, path: &str) -> Option<Option<String>> {
    let path = path.to_owned();
    let read = on_disk(ctx, move |ws| match ws.read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(WorkspaceError::NotFound { .. }) => Ok(None),
        Err(err) => Err(err),
    })
    .await
    .ok()?;
    match read {
        Some(bytes) => String::from_utf8(bytes).ok().map(Some),
        None => Some(None),
    }
}

/// Writing `content` to `path`: its diff against the file there, or the new file.
pub(crate) async fn write(ctx: &ToolContext, path: &str, content: &str) -> Option<ApprovalPreview> {
    Some(match current_text(ctx, path).await? {
        Some(old) => ApprovalPreview::Diff {
            path: path.to_owned(),
            diff: diff::unified(&old, content),
        },
        None => ApprovalPreview::NewFile {
            path: path.to_owned(),
            content: content.to_owned(),
        },
    })
}

/// Replacing `old_text` by `new_text` in `path`, when it is there exactly once (else
/// the edit fails, and the approval shows its arguments).
pub(crate) async fn edit(
    ctx: &ToolContext,
    path: &str,
    old_text: &str,
    new_text: &str,
) -> Option<ApprovalPreview> {
    let text = current_text(ctx, path).await??;
    if old_text.is_empty() || text.matches(old_text).count() != 1 {
        return None;
    }
    Some(ApprovalPreview::Diff {
        path: path.to_owned(),
        diff: diff::unified(&text, &text.replacen(old_text, new_text, 1)),
    })
}

/// The most of a change a card keeps (a diff's or a new file's characters): the card
/// is stored with its answer, and a file rewritten whole can be large.
const CARD_CHANGE_MAX_CHARS: usize = 20_000;

/// A change as its card keeps it: whole up to [`CARD_CHANGE_MAX_CHARS`], else its
/// first lines and a last line saying how many more there were.
pub(crate) fn for_card(change: ApprovalPreview) -> ApprovalPreview {
    let cut = |text: String| {
        if text.len() <= CARD_CHANGE_MAX_CHARS {
            return text;
        }
        let mut kept = String::new();
        let mut lines = text.lines();
        for line in lines.by_ref() {
            if kept.len() + line.len() >= CARD_CHANGE_MAX_CHARS {
                let more = 1 + lines.count();
                kept.push_str("… and ");
                kept.push_str(&more.to_string());
                kept.push_str(" more lines\n");
                break;
            }
            kept.push_str(line);
            kept.push('\n');
        }
        kept
    };
    match change {
        ApprovalPreview::Diff { path, diff } => ApprovalPreview::Diff {
            path,
            diff: cut(diff),
        },
        ApprovalPreview::NewFile { path, content } => ApprovalPreview::NewFile {
            path,
            content: cut(content),
        },
        command @ ApprovalPreview::Command { .. } => command,
    }
}

/// `command` as the shell runs it, in the workspace's folder.
pub(crate) fn command(ctx: &ToolContext, command: &str) -> Option<ApprovalPreview> {
    let workspace = ctx.workspace().ok()?;
    Some(ApprovalPreview::Command {
        folder: workspace.root().display().to_string(),
        command: command.to_owned(),
    })
}
