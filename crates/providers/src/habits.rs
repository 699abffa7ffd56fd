//! What Cairn learned of a model by trying it (`crate::checkup`), as opposed to what
//! its server says of it (`crate::windows`): whether it answers from a tool's result
//! as its chat template shows one, or only once the result is put to it in words with
//! the request said again. Shared by every client in the process; a front end that
//! keeps them across runs hands them in ([`learn`]).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use cairn_core::prompt::is_question;

/// How the results of a round are put to the model after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restate {
    /// "With this result, answer in one sentence, or make the change: …": for a model
    /// that must also go on to change something once it has read.
    AnswerOrChange,
    /// "With this result, answer in one sentence: …": for a model that calls again
    /// when it is offered the change as well.
    Answer,
}

/// What a round of results came to, as far as what the model is asked next goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Something was read or found.
    Read,
    /// One of its calls changed a file.
    Changed,
    /// Every call in it failed.
    Failed,
}

impl Restate {
    /// What the model is asked after a round's results. A request that is a question
    /// is only ever asked to be answered: offered the change as well, the 0.5B wrote
    /// the code word it was asked for over the file it had read. After a round that
    /// changed a file, it is asked what it did, or for what is still missing. After a
    /// round whose every call failed, it is asked to try again: asked only to answer,
    /// the 1.5B answered with the error's own words; and for a change, only to try
    /// again: offered an answer too, it said in words how its script should be fixed.
    /// It is pointed at the error's own words, which say what to do (read the file
    /// first, a tool that exists, a call the user denied left alone): told only to
    /// "try again with the fix", the 1.5B wrote its refused call again.
    pub(crate) fn words(self, request: &str, outcome: Outcome) -> String {
        match (self, outcome) {
            (_, Outcome::Changed) => {
                format!("With this result, say in one sentence what you did: {request}")
            }
            (_, Outcome::Failed) if !is_question(request) => {
                format!("It failed. Do what the error says, then: {request}")
            }
            (_, Outcome::Failed) => {
                format!("It failed. Do what the error says, or answer in one sentence: {request}")
            }
            (Self::AnswerOrChange, Outcome::Read) if !is_question(request) => {
                format!(
                    "With this result, answer in one sentence, or make the change with the next tool: {request}"
                )
            }
            (Self::AnswerOrChange | Self::Answer, Outcome::Read) => {
                format!("With this result, answer in one sentence: {request}")
            }
        }
    }
}

/// How a model is shown the results of its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Results {
    /// As its chat template's tool messages (what the server does with `tool`
    /// messages): every model until it is found to need more.
    #[default]
    Native,
    /// In words, after its calls as it wrote them, with the request said again.
    Restated(Restate),
    /// Folded into the user's turn, its calls not shown as its own: for a model that
    /// otherwise writes its previous call again, whatever follows it.
    Folded,
}

impl Results {
    /// How the store keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Restated(Restate::AnswerOrChange) => "restated",
            Self::Restated(Restate::Answer) => "restated_answer",
            Self::Folded => "folded",
        }
    }

    /// The stored form read back; `None` for one a later Cairn wrote.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "native" => Self::Native,
            "restated" => Self::Restated(Restate::AnswerOrChange),
            "restated_answer" => Self::Restated(Restate::Answer),
            "folded" => Self::Folded,
            _ => return None,
        })
    }
}

/// What was learned of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Habits {
    /// How it is shown results.
    pub results: Results,
    /// It writes its calls as text (a ```json block, bare JSON) rather than as calls
    /// its server recognizes: on a server that takes a grammar, its calls are then
    /// held to the offered tools (see `crate::grammar`).
    pub text_calls: bool,
}

type Learned = HashMap<(String, String), Habits>;

static LEARNED: LazyLock<Mutex<Learned>> = LazyLock::new(Mutex::default);

/// What was learned of `model` on `server`; nothing, for a model never checked.
pub fn of(server: &str, model: &str) -> Habits {
    lock()
        .get(&(server.to_owned(), model.to_owned()))
        .copied()
        .unwrap_or_default()
}

/// How `model` on `server` is shown results: as learned, else natively.
pub fn results(server: &str, model: &str) -> Results {
    of(server, model).results
}

/// Whether anything was learned of `model` on `server` in this process.
pub fn known(server: &str, model: &str) -> bool {
    lock().contains_key(&(server.to_owned(), model.to_owned()))
}

/// Keeps what was learned of `model` on `server`.
pub fn learn(server: &str, model: &str, habits: Habits) {
    lock().insert((server.to_owned(), model.to_owned()), habits);
}

fn lock() -> std::sync::MutexGuard<'static, Learned> {
    LEARNED.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_asked_to_be_answered_and_a_change_to_be_made() {
        for question in [
            "What is the code word in notes.txt?",
            "Which file mentions an animal",
            "Find the file that mentions an animal and tell me its name.",
            "How many rows does people.csv have",
        ] {
            assert_eq!(
                Restate::AnswerOrChange.words(question, Outcome::Read),
                format!("With this result, answer in one sentence: {question}")
            );
        }
        for change in [
            "Read draft.txt and write its code word into message.txt.",
            "Replace yellow with green in summary.md.",
            "Whatever you find, fix it.",
        ] {
            assert_eq!(
                Restate::AnswerOrChange.words(change, Outcome::Read),
                format!(
                    "With this result, answer in one sentence, or make the change with the next tool: {change}"
                )
            );
        }
        let request = "Read draft.txt and write its code word into message.txt.";
        // Offered "or make the change that is still missing" as well, the 1.5B made the
        // same change again.
        for restate in [Restate::AnswerOrChange, Restate::Answer] {
            assert_eq!(
                restate.words(request, Outcome::Changed),
                format!("With this result, say in one sentence what you did: {request}")
            );
            assert_eq!(
                restate.words(request, Outcome::Failed),
                format!("It failed. Do what the error says, then: {request}")
            );
            let question = "What does greet.py print?";
            assert_eq!(
                restate.words(question, Outcome::Failed),
                format!("It failed. Do what the error says, or answer in one sentence: {question}")
            );
        }
    }
}
