//! The shared counters of one root turn, checked where the design says: subtask
//! spawn, before every model call, before every tool dispatch, every iteration.
//!
//! The wall clock is the turn's own time: it stops while a model server answers and
//! while the user is asked ([`Budget::pause`]). It is there to stop a turn that is
//! going nowhere; a slow server that is reading or writing is bounded by the answer's
//! length and the number of model calls instead (a 1.5B model on two cores reads a
//! long prompt for minutes, and a busy machine is slower still).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use cairn_protocol::{BudgetExceeded, BudgetReason};
use tokio::time::Instant;

use crate::limits::Limits;

/// Counts what a turn has used. Every depth charges the same budget.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    started: Instant,
    /// Time the wall clock did not count.
    paused: Mutex<Paused>,
    subtasks: AtomicU64,
    llm_calls: AtomicU64,
    tool_calls: AtomicU64,
}

/// The wall clock's pauses: the time they took so far, and the ones under way
/// (parallel subtasks wait on their servers at once).
#[derive(Debug, Default)]
struct Paused {
    total: Duration,
    open: u32,
    since: Option<Instant>,
}

/// The wall clock stands still while one is held.
#[derive(Debug)]
#[must_use = "the clock runs again when the pause is dropped"]
pub struct Pause<'a>(&'a Budget);

impl Drop for Pause<'_> {
    fn drop(&mut self) {
        let mut paused = self.0.paused();
        paused.open -= 1;
        if paused.open == 0
            && let Some(since) = paused.since.take()
        {
            paused.total += since.elapsed();
        }
    }
}

impl Budget {
    /// Starts the wall clock now (tokio time, so paused-clock tests are exact).
    pub fn start(limits: Limits) -> Self {
        Self {
            limits,
            started: Instant::now(),
            paused: Mutex::default(),
            subtasks: AtomicU64::new(0),
            llm_calls: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Stops the wall clock until the pause is dropped: while a model server
    /// answers, or the user is asked.
    pub fn pause(&self) -> Pause<'_> {
        let mut paused = self.paused();
        if paused.open == 0 {
            paused.since = Some(Instant::now());
        }
        paused.open += 1;
        Pause(self)
    }

    /// When the wall clock would run out if it ran from now on: later each time it
    /// was paused since.
    pub fn deadline(&self) -> Instant {
        let left = self.limits.max_wall_clock.saturating_sub(self.counted());
        // While paused the clock cannot run out: no need to look again at once.
        let left = if self.paused().open > 0 {
            left.max(Duration::from_secs(1))
        } else {
            left
        };
        Instant::now() + left
    }

    /// The time the wall clock counted: since the start, less its pauses.
    fn counted(&self) -> Duration {
        let paused = self.paused();
        let open = paused.since.map_or(Duration::ZERO, |since| since.elapsed());
        self.started.elapsed().saturating_sub(paused.total + open)
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, Paused> {
        self.paused.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// The wall clock's count so far, in milliseconds.
    pub fn elapsed_ms(&self) -> u64 {
        millis(self.counted())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(seconds: u64) -> Budget {
        Budget::start(Limits {
            max_wall_clock: Duration::from_secs(seconds),
            ..Limits::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_wall_clock_stands_still_while_paused() {
        let budget = budget(10);
        tokio::time::advance(Duration::from_secs(4)).await;
        {
            let _answering = budget.pause();
            // Two waits at once (parallel subtasks) count once.
            let _asking = budget.pause();
            tokio::time::advance(Duration::from_secs(60)).await;
            assert!(budget.check_wall_clock().is_ok());
        }
        assert_eq!(budget.elapsed_ms(), 4_000);
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(budget.check_wall_clock().is_ok());
        tokio::time::advance(Duration::from_secs(1)).await;
        let exceeded = budget.check_wall_clock().unwrap_err();
        assert_eq!(
            (exceeded.reason, exceeded.limit),
            (BudgetReason::WallClock, 10_000)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_moves_on_with_each_pause() {
        let budget = budget(10);
        let first = budget.deadline();
        {
            let _answering = budget.pause();
            tokio::time::advance(Duration::from_secs(30)).await;
            // Paused with the clock nearly out, it is looked at again a second on.
            assert!(budget.deadline() >= Instant::now() + Duration::from_secs(1));
        }
        assert_eq!(budget.deadline(), first + Duration::from_secs(30));
    }
}
