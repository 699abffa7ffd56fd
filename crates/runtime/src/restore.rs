//! Taking back an answer's changes to files. Each write an answer makes is kept with
//! it as it happens (the recorder's [`WriteLog`](cairn_core::workspace::WriteLog)):
//! what the file held before the answer first wrote it, and what the answer left.
//! Restore puts the first back, or removes a file the answer created, only where every
//! file still holds what the answer left: a later change, the user's or another
//! answer's, is never overwritten.

use std::path::Path;

use cairn_protocol::{FileRestore, RestoreAction, RestorePlan};
use cairn_store::FileCheckpoint;
use cairn_tools::{Workspace, WorkspaceError, unified_diff};

use crate::{Runtime, RuntimeError};

impl Runtime {
    /// What restoring the files of `answer` (the thread's last answer with files to
    /// put back, when `None`) would do, file by file, and what stops it. Changes
    /// nothing.
    pub async fn restore_plan(
        &self,
        thread_id: &str,
        answer: Option<&str>,
    ) -> Result<RestorePlan, RuntimeError> {
        let answer_id = match answer {
            Some(answer) => {
                if !self.store.message_in_thread(thread_id, answer).await? {
                    return Err(RuntimeError::NothingToRestore(format!(
                        "this chat has no answer `{answer}`"
                    )));
                }
                answer.to_owned()
            }
            None => self
                .store
                .last_restorable(thread_id)
                .await?
                .ok_or_else(|| {
                    RuntimeError::NothingToRestore(
                        "no answer in this chat changed files that can be put back".into(),
                    )
                })?,
        };
        let mut files = self.store.checkpoint(&answer_id).await?;
        files.retain(changed_across);
        if files.is_empty() {
            return Err(RuntimeError::NothingToRestore(
                "this answer changed no files that can be put back (or they were put back \
                 already)"
                    .into(),
            ));
        }
        let workspace = files[0].workspace.clone();
        let opened = Workspace::open(Path::new(&workspace));
        let files = files
            .iter()
            .map(|file| match &opened {
                Ok(opened) => plan_file(opened, file),
                Err(err) => FileRestore {
                    path: file.path.clone(),
                    action: action_of(file),
                    diff: String::new(),
                    problem: Some(format!("cannot be reached: {err}")),
                },
            })
            .collect();
        Ok(RestorePlan {
            thread_id: thread_id.to_owned(),
            answer_id,
            workspace,
            files,
        })
    }

    /// The files `answer_id` can put back, by path.
    pub async fn restorable(&self, answer_id: &str) -> Result<Vec<String>, RuntimeError> {
        let files = self.store.checkpoint(answer_id).await?;
        Ok(files
            .into_iter()
            .filter(changed_across)
            .map(|file| file.path)
            .collect())
    }

    /// Puts back the files of `answer_id` as they were before it, all of them or none:
    /// refused, with nothing changed, where a file changed since the answer wrote it,
    /// and while the chat is answering. Returns what was done.
    pub async fn restore(
        &self,
        thread_id: &str,
        answer_id: &str,
    ) -> Result<RestorePlan, RuntimeError> {
        self.ensure_quiet(thread_id, "restoring files in").await?;
        let plan = self.restore_plan(thread_id, Some(answer_id)).await?;
        if let Some(refusal) = plan.refusal() {
            return Err(RuntimeError::RestoreRefused(refusal));
        }
        let workspace = Workspace::open(Path::new(&plan.workspace))
            .map_err(|err| RuntimeError::Workspace(err.to_string()))?;
        let files = self.store.checkpoint(answer_id).await?;
        for file in &files {
            let put_back = match (&file.before, file.removed) {
                (Some(before), _) => workspace.write(&file.path, before).map(drop),
                // Made and removed again by the answer: nothing to put back.
                (None, true) => Ok(()),
                (None, false) => workspace.remove(&file.path),
            };
            put_back.map_err(|err| {
                RuntimeError::Workspace(format!(
                    "{err} (files before it in the list were put back: {})",
                    done_before(&files, file)
                ))
            })?;
        }
        self.store.mark_restored(answer_id).await?;
        Ok(plan)
    }
}

/// Whether `file`, in the folder `workspace`, still holds what its answer left: an
/// answer given again takes over only such writes (see `Store::redo_turn`).
pub(crate) fn still_as_left(workspace: &Workspace, file: &FileCheckpoint) -> bool {
    workspace.root().display().to_string() == file.workspace
        && match workspace.read(&file.path) {
            Ok(now) => !file.removed && now == file.after,
            Err(WorkspaceError::NotFound { .. }) => file.removed,
            Err(_) => false,
        }
}

/// Whether the answer left `file` otherwise than it found it: a file it made and then
/// removed (a command's build output) is not its change.
fn changed_across(file: &FileCheckpoint) -> bool {
    file.existed || !file.removed
}

fn action_of(file: &FileCheckpoint) -> RestoreAction {
    if file.existed {
        RestoreAction::PutBack
    } else {
        RestoreAction::Remove
    }
}

/// One file's part in a restore: its diff from now to then, or why it cannot be done.
fn plan_file(workspace: &Workspace, file: &FileCheckpoint) -> FileRestore {
    let action = action_of(file);
    let now = match workspace.read(&file.path) {
        Ok(bytes) => Some(bytes),
        Err(WorkspaceError::NotFound { .. }) => None,
        Err(err) => {
            return FileRestore {
                path: file.path.clone(),
                action,
                diff: String::new(),
                problem: Some(format!("cannot be read: {err}")),
            };
        }
    };
    let problem = match (&now, file.existed, &file.before) {
        (Some(_), ..) if file.removed => {
            Some("was made again after this answer removed it".to_owned())
        }
        (None, ..) if !file.removed => Some("was removed after this answer wrote it".to_owned()),
        (Some(now), ..) if *now != file.after => {
            Some("changed after this answer wrote it".to_owned())
        }
        (_, true, None) => Some("was too large to keep when the answer wrote it".to_owned()),
        _ => None,
    };
    let text = |bytes: &[u8]| std::str::from_utf8(bytes).ok().map(str::to_owned);
    let diff = match (now.as_deref().and_then(text), &file.before) {
        (Some(now), Some(before)) => text(before)
            .map(|before| unified_diff(&now, &before))
            .unwrap_or_default(),
        (Some(now), None) if !file.existed => unified_diff(&now, ""),
        // Removed by the answer: put back whole.
        (None, Some(before)) => text(before)
            .map(|before| unified_diff("", &before))
            .unwrap_or_default(),
        _ => String::new(),
    };
    FileRestore {
        path: file.path.clone(),
        action,
        diff,
        problem,
    }
}

/// The paths of `files` before `file`, for the rare failure halfway.
fn done_before(files: &[FileCheckpoint], file: &FileCheckpoint) -> String {
    let done: Vec<&str> = files
        .iter()
        .take_while(|other| other.path != file.path)
        .map(|other| other.path.as_str())
        .collect();
    if done.is_empty() {
        "none".to_owned()
    } else {
        done.join(", ")
    }
}
