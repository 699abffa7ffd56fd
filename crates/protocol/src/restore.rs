//! Taking back an answer's changes to files: what Restore would do to each file it
//! wrote, shown before it is done, and why it would refuse.

use serde::{Deserialize, Serialize};

/// What restoring the files of one answer does, file by file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestorePlan {
    pub thread_id: String,
    /// The answer (assistant message) whose files are put back.
    pub answer_id: String,
    /// The folder the answer wrote in.
    pub workspace: String,
    pub files: Vec<FileRestore>,
}

impl RestorePlan {
    /// The files that stop the restore, each with why: a restore puts back all of an
    /// answer's files or none.
    pub fn problems(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files
            .iter()
            .filter_map(|file| Some((file.path.as_str(), file.problem.as_deref()?)))
    }

    /// The refusal, in words, when any file stops the restore.
    pub fn refusal(&self) -> Option<String> {
        let problems: Vec<String> = self
            .problems()
            .map(|(path, problem)| format!("{path} {problem}"))
            .collect();
        (!problems.is_empty()).then(|| {
            format!(
                "nothing was restored: {}. Restore never overwrites a later change; undo \
                 it first or put the file back by hand",
                problems.join("; ")
            )
        })
    }
}

/// One file of a restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRestore {
    /// Workspace-relative.
    pub path: String,
    pub action: RestoreAction,
    /// The change restoring makes, from the file as it is now: a unified diff (`@@`
    /// hunks), empty where the file is not text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// Why this file cannot be restored (it changed since the answer wrote it, it is
    /// gone, it was too large to keep); `None` when it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreAction {
    /// The file existed: it gets back what it held before the answer.
    PutBack,
    /// The answer made the file: it is removed.
    Remove,
}

impl RestoreAction {
    /// In words, for a list of what Restore will do.
    pub fn said(self) -> &'static str {
        match self {
            Self::PutBack => "put back as it was",
            Self::Remove => "removed (the answer created it)",
        }
    }
}
