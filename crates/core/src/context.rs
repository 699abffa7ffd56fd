//! Fitting a turn to the model's real context window, when the server reports one.
//!
//! window → room kept for the answer → the history budget; a quarter of the window →
//! the most one tool result may take; half the window → what the fixed prompt and the
//! tool schemas may take before tools are shown on demand. The configured limits stay
//! the ceiling: a big window never raises them.

use crate::model::ContextWindow;

use crate::disclosure::{Disclosure, ToolBudget};
use crate::history;
use crate::level::engine_specs;
use crate::limits::Limits;
use crate::turn::RootView;

/// The most of the window kept free for the answer when the request sets no
/// `max_tokens`: a quarter, up to this.
const MAX_ANSWER_ROOM: u64 = 8192;

/// The limits of one turn, given what the server said about its context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFit {
    pub window: Option<ContextWindow>,
    /// The configured limits with history and result sizes brought within the window.
    pub limits: Limits,
    /// What the system prompt and the tool schemas may take together before tools
    /// are folded into groups; `None` without a known window.
    pub fixed_tokens: Option<u64>,
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
            };
        };
        let tokens = u64::from(known.tokens);
        let answer_room = max_answer_tokens
            .map_or((tokens / 4).min(MAX_ANSWER_ROOM), u64::from)
            .min(tokens / 2);
        let mut fitted = limits;
        fitted.max_history_tokens = limits.max_history_tokens.min(tokens - answer_room).max(1);
        let result_bytes =
            usize::try_from(tokens / 4 * history::BYTES_PER_TOKEN).unwrap_or(usize::MAX);
        fitted.max_tool_result_bytes = limits.max_tool_result_bytes.min(result_bytes).max(1);
        Self {
            window,
            limits: fitted,
            fixed_tokens: Some(tokens / 2),
        }
    }

    /// When a level whose system prompt is `system` shows its tools on demand.
    pub(crate) fn tool_budget(&self, system: &str) -> ToolBudget {
        ToolBudget {
            count: self.limits.max_visible_tools,
            tokens: self
                .fixed_tokens
                .map(|room| room.saturating_sub(history::bytes_to_tokens(system.len()))),
        }
    }

    /// Whether a turn's root level, with this system prompt and this view, would
    /// show its tools on demand (for a front end to say so before the turn runs).
    pub fn tools_on_demand(&self, system: &str, root: &RootView) -> bool {
        let specs = engine_specs(
            &root.tools,
            root.can_spawn,
            root.can_plan,
            root.switch.clone(),
        );
        Disclosure::over_budget(&specs, self.tool_budget(system)).is_some()
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
    fn a_small_window_shrinks_history_and_results_to_fit() {
        let small = fit(4096, None);
        assert_eq!(
            small.limits.max_history_tokens, 3072,
            "a quarter is kept for the answer"
        );
        assert_eq!(
            small.limits.max_tool_result_bytes, 4096,
            "a quarter of 4096 tokens in bytes"
        );
        assert_eq!(small.fixed_tokens, Some(2048));
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
        assert!(unknown.describe().starts_with("context window unknown"));
    }
}
