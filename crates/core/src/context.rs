//! Fitting a turn to the model's real context window, when the server reports one.
//!
//! window → room kept for the answer → the history budget (each request, its tool
//! schemas counted in, fits it: see `history::fit`, and each tool result is sized to
//! the room the request leaves); a quarter of the window → what the system prompt
//! and the tool schemas may take before tools are shown on demand, and then the
//! compact prompt. The configured limits stay the ceiling: a big window never raises
//! them; a window under [`MIN_WINDOW_TOKENS`] is refused before any model call.

use std::collections::BTreeSet;

use crate::disclosure::{self, Offer, Offered};
use crate::limits::Limits;
use crate::model::ContextWindow;

/// The most of the window kept free for the answer when the request sets no
/// `max_tokens`: a quarter, up to this.
const MAX_ANSWER_ROOM: u64 = 8192;

/// The smallest window a turn can work in: below it a compact prompt, a question and
/// one result no longer fit beside an answer.
pub const MIN_WINDOW_TOKENS: u32 = 1024;

/// The largest model given the compact prompt and only the core tools whatever its
/// window: the task benchmark's small models (Qwen2.5-Coder 0.5B and 1.5B) spent
/// their first call on tools they were shown and did not need (`run_subtask`,
/// `todo_write` for a to-do file) and lost the thread in a long prompt.
pub const SMALL_MODEL_PARAMS: u64 = 4_000_000_000;

/// The largest model whose request is read with the files it names (see
/// `named_files`): the 0.5B (0.49B parameters) went from 10 to 19 of 48 everyday
/// tasks with them, while the 1.5B, shown the CSV it was asked to count or the
/// script it was asked to run, counted and ran them in its head (count 5 → 2,
/// command 5 → 3 of 6) where it had read or run them itself (README "Small models").
pub const TINY_MODEL_PARAMS: u64 = 1_000_000_000;

/// The limits of one turn, given what the server said about its context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFit {
    pub window: Option<ContextWindow>,
    /// The configured limits with the history brought within the window.
    pub limits: Limits,
    /// What the system prompt and the tool schemas may take together before the
    /// tools are folded into groups, and then the prompt made compact: a quarter of
    /// the window, so that half of it is left to the conversation. `None` without a
    /// known window.
    pub fixed_tokens: Option<u64>,
    /// The room kept for each answer, sent as its `max_tokens` when the user set none:
    /// a model that does not stop on its own is stopped there, not at the end of the
    /// window. `None` without a known window.
    pub answer_tokens: Option<u32>,
    /// The model is small (its server says so): the compact prompt and the core tools,
    /// the rest on demand, whatever the window.
    pub small_model: bool,
    /// The model is tiny (its server says so): its request is read with the files it
    /// names ([`TINY_MODEL_PARAMS`]).
    pub tiny_model: bool,
}

/// What a level shows the model before the conversation: its system prompt and the
/// tools it sees at first.
#[derive(Debug)]
pub(crate) struct Layout {
    pub system: String,
    pub offered: Offered,
    /// The window is small: the compact prompt, brief schemas, only the core tools.
    pub compact: bool,
    /// Tools usually shown wait in their groups (the window is small, or they are
    /// too many).
    pub on_demand: bool,
}

impl ContextFit {
    pub fn new(
        limits: Limits,
        window: Option<ContextWindow>,
        max_answer_tokens: Option<u32>,
    ) -> Self {
        let Some(known) = &window else {
            return Self {
                window,
                limits,
                fixed_tokens: None,
                answer_tokens: None,
                small_model: false,
                tiny_model: false,
            };
        };
        let tokens = u64::from(known.tokens);
        let answer_room = max_answer_tokens
            .map_or((tokens / 4).min(MAX_ANSWER_ROOM), u64::from)
            .min(tokens / 2);
        let mut fitted = limits;
        fitted.max_history_tokens = limits.max_history_tokens.min(tokens - answer_room).max(1);
        Self {
            window,
            limits: fitted,
            fixed_tokens: Some(tokens / 4),
            answer_tokens: u32::try_from(answer_room).ok(),
            small_model: false,
            tiny_model: false,
        }
    }

    /// The same fit for a model of `params` parameters, as its server says.
    #[must_use]
    pub fn for_model(mut self, params: Option<u64>) -> Self {
        self.small_model = params.is_some_and(|params| params <= SMALL_MODEL_PARAMS);
        self.tiny_model = params.is_some_and(|params| params <= TINY_MODEL_PARAMS);
        self
    }

    /// The window, when it is too small for any turn to work in.
    pub fn too_small(&self) -> Option<&ContextWindow> {
        self.window
            .as_ref()
            .filter(|window| window.tokens < MIN_WINDOW_TOKENS)
    }

    /// What a level offering `offers` shows: the rare groups folded, then the other
    /// groups, the largest first, while the tools are more than `max_visible` or
    /// larger than the window allows beside the prompt; if even the core tools are,
    /// the compact prompt (`prompt(true)`) with brief schemas.
    pub(crate) fn lay_out(
        &self,
        offers: Vec<Offer>,
        max_visible: usize,
        prompt: impl Fn(bool) -> String,
    ) -> Layout {
        let system = prompt(false);
        let system_tokens = crate::history::bytes_to_tokens(system.len());
        let mut fold: BTreeSet<String> = BTreeSet::new();
        let mut others: Vec<(String, usize)> = Vec::new();
        for (group, size) in disclosure::group_sizes(&offers) {
            if group.rare {
                fold.insert(group.name.clone());
            } else {
                others.push((group.name.clone(), size));
            }
        }
        // Popped from the end: the largest group first, then by name.
        others.sort_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        let rare = fold.len();
        let crowded = loop {
            let (count, tokens) =
                disclosure::shown_size(&offers, &fold, self.fixed_tokens.is_some());
            let crowded = self
                .fixed_tokens
                .is_some_and(|room| system_tokens + tokens > room);
            if count <= max_visible && !crowded {
                break false;
            }
            match others.pop() {
                Some((group, _)) => {
                    fold.insert(group);
                }
                None => break crowded,
            }
        };
        if crowded || self.small_model {
            // Every group waits, not only the ones that crowd.
            fold.extend(others.into_iter().map(|(group, _)| group));
            return Layout {
                system: prompt(true),
                offered: Offered::new(offers, &fold, disclosure::brief),
                compact: true,
                on_demand: true,
            };
        }
        Layout {
            system,
            on_demand: fold.len() > rare,
            offered: Offered::new(offers, &fold, |spec| spec),
            compact: false,
        }
    }

    /// One line for the log.
    pub fn describe(&self) -> String {
        match &self.window {
            None => format!(
                "context window unknown; history up to {} tokens, tool results up to {} bytes",
                self.limits.max_history_tokens, self.limits.max_tool_result_bytes
            ),
            Some(window) => format!(
                "context window {} tokens ({}); history up to {} tokens, tool results up to {} bytes",
                window.tokens,
                window.source,
                self.limits.max_history_tokens,
                self.limits.max_tool_result_bytes
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(tokens: u32, max_answer: Option<u32>) -> ContextFit {
        ContextFit::new(
            Limits::default(),
            Some(ContextWindow::new(tokens, "test")),
            max_answer,
        )
    }

    #[test]
    fn a_small_window_shrinks_the_history_to_fit() {
        let small = fit(4096, None);
        assert_eq!(
            small.limits.max_history_tokens, 3072,
            "a quarter is kept for the answer"
        );
        assert_eq!(
            small.limits.max_tool_result_bytes,
            Limits::default().max_tool_result_bytes,
            "results are sized to the room each request leaves"
        );
        assert_eq!(small.fixed_tokens, Some(1024));
        assert_eq!(small.answer_tokens, Some(1024), "each answer's max_tokens");
    }

    #[test]
    fn the_answer_room_follows_max_tokens_up_to_half_the_window() {
        assert_eq!(fit(8192, Some(1000)).limits.max_history_tokens, 7192);
        assert_eq!(fit(8192, Some(100_000)).limits.max_history_tokens, 4096);
        assert_eq!(
            fit(262_144, None).limits.max_history_tokens,
            128_000,
            "the configured ceiling holds"
        );
    }

    #[test]
    fn a_large_window_never_raises_the_configured_limits() {
        let large = fit(1_000_000, None);
        assert_eq!(large.limits, Limits::default());
    }

    #[test]
    fn without_a_window_the_configured_limits_stand() {
        let unknown = ContextFit::new(Limits::default(), None, None);
        assert_eq!(unknown.limits, Limits::default());
        assert_eq!(unknown.fixed_tokens, None);
        assert_eq!(
            unknown.answer_tokens, None,
            "answers as long as the server allows"
        );
        assert!(unknown.describe().starts_with("context window unknown"));
    }
}
