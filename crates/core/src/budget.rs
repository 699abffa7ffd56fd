//! The shared counters of one root turn, checked where the design says: subtask
//! spawn, before every model call, before every tool dispatch, every iteration.

use std::sync::atomic::{AtomicU64, Ordering};

use cairn_protocol::{BudgetExceeded, BudgetReason};
use tokio::time::Instant;

use crate::limits::Limits;

/// Counts what a turn has used. Every depth charges the same budget.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    started: Instant,
    subtasks: AtomicU64,
    llm_calls: AtomicU64,
    tool_calls: AtomicU64,
}

impl Budget {
    /// Starts the wall clock now (tokio time, so paused-clock tests are exact).
    pub fn start(limits: Limits) -> Self {
        Self {
            limits,
            started: Instant::now(),
            subtasks: AtomicU64::new(0),
            llm_calls: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn deadline(&self) -> Instant {
        self.started + self.limits.max_wall_clock
    }

    pub fn charge_subtask(&self) -> Result<(), BudgetExceeded> {
        charge(
            &self.subtasks,
            self.limits.max_total_subtasks,
            BudgetReason::Subtasks,
        )
    }

    pub fn charge_llm_call(&self) -> Result<(), BudgetExceeded> {
        charge(
            &self.llm_calls,
            self.limits.max_total_llm_calls,
            BudgetReason::LlmCalls,
        )
    }

    pub fn charge_tool_call(&self) -> Result<(), BudgetExceeded> {
        charge(
            &self.tool_calls,
            self.limits.max_total_tool_calls,
            BudgetReason::ToolCalls,
        )
    }

    pub fn check_wall_clock(&self) -> Result<(), BudgetExceeded> {
        let elapsed = self.elapsed_ms();
        let limit = millis(self.limits.max_wall_clock);
        if elapsed >= limit {
            return Err(BudgetExceeded {
                reason: BudgetReason::WallClock,
                limit,
                observed: elapsed,
            });
        }
        Ok(())
    }

    pub fn elapsed_ms(&self) -> u64 {
        millis(self.started.elapsed())
    }

    /// The request estimate that could not be brought within `limit` (the history
    /// budget, less what the server's counts showed the estimate to miss).
    pub fn tokens_exceeded(&self, limit: u64, observed: u64) -> BudgetExceeded {
        BudgetExceeded {
            reason: BudgetReason::Tokens,
            limit,
            observed,
        }
    }
}

fn charge(counter: &AtomicU64, limit: u64, reason: BudgetReason) -> Result<(), BudgetExceeded> {
    let observed = counter.fetch_add(1, Ordering::Relaxed) + 1;
    if observed > limit {
        return Err(BudgetExceeded {
            reason,
            limit,
            observed,
        });
    }
    Ok(())
}

/// A duration in whole milliseconds, as the wire and the usage log count them.
pub(crate) fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
