//! The turn budgets (docs/design.md, "The loop"), their defaults, and the
//! `CAIRN_<NAME>` environment overrides.

use std::time::Duration;

/// Every limit one root turn runs under; shared by all its depths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest subtask nesting; a `run_subtask` that would go deeper gets an error.
    pub max_depth: u32,
    /// Model rounds one level may take; past it the level ends with an error.
    pub max_iterations_per_level: u32,
    /// Model requests and tool executions in flight at once, across the whole turn.
    pub max_parallel_per_turn: usize,
    pub max_total_subtasks: u64,
    pub max_total_llm_calls: u64,
    pub max_total_tool_calls: u64,
    pub max_wall_clock: Duration,
    /// Tool results longer than this are cut, with a marker saying so.
    pub max_tool_result_bytes: usize,
    /// History sent to the model is pruned, oldest first, to fit this estimate.
    pub max_history_tokens: u64,
    /// Past this many tools a level shows grouped tools only once loaded (see
    /// `disclosure`): small models lose the thread with long tool lists.
    pub max_visible_tools: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_iterations_per_level: 20,
            max_parallel_per_turn: 8,
            max_total_subtasks: 32,
            max_total_llm_calls: 60,
            max_total_tool_calls: 200,
            max_wall_clock: Duration::from_millis(180_000),
            max_tool_result_bytes: 50_000,
            max_history_tokens: 128_000,
            max_visible_tools: 38,
        }
    }
}

/// An override that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?} is not valid: {why}")]
pub struct LimitsError {
    pub name: String,
    pub value: String,
    pub why: &'static str,
}

type Setter = fn(&mut Limits, u64);

/// Each override: its name after `CAIRN_`, the smallest usable value, and its field.
const OVERRIDES: &[(&str, u64, Setter)] = &[
    ("MAX_DEPTH", 0, |l, v| l.max_depth = saturate(v)),
    ("MAX_ITERATIONS_PER_LEVEL", 1, |l, v| {
        l.max_iterations_per_level = saturate(v)
    }),
    ("MAX_PARALLEL_PER_TURN", 1, |l, v| {
        l.max_parallel_per_turn = saturate(v)
    }),
    ("MAX_TOTAL_SUBTASKS", 0, |l, v| l.max_total_subtasks = v),
    ("MAX_TOTAL_LLM_CALLS", 1, |l, v| l.max_total_llm_calls = v),
    ("MAX_TOTAL_TOOL_CALLS", 0, |l, v| l.max_total_tool_calls = v),
    ("MAX_WALL_CLOCK_MS", 1, |l, v| {
        l.max_wall_clock = Duration::from_millis(v)
    }),
    ("MAX_TOOL_RESULT_BYTES", 1, |l, v| {
        l.max_tool_result_bytes = saturate(v)
    }),
    ("MAX_HISTORY_TOKENS", 1, |l, v| l.max_history_tokens = v),
    ("MAX_VISIBLE_TOOLS", 1, |l, v| {
        l.max_visible_tools = saturate(v)
    }),
];

fn saturate<T: TryFrom<u64> + Bounded>(value: u64) -> T {
    T::try_from(value).unwrap_or(T::MAX)
}

trait Bounded {
    const MAX: Self;
}

impl Bounded for u32 {
    const MAX: Self = u32::MAX;
}

impl Bounded for usize {
    const MAX: Self = usize::MAX;
}

impl Limits {
    /// The defaults with the process environment's `CAIRN_<NAME>` overrides applied.
    pub fn from_env() -> Result<Self, LimitsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The defaults with overrides read through `lookup` (given the full variable
    /// name), so callers and tests need not touch the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, LimitsError> {
        let mut limits = Self::default();
        for &(name, minimum, set) in OVERRIDES {
            let var = format!("CAIRN_{name}");
            let Some(raw) = lookup(&var) else { continue };
            let error = |why| LimitsError {
                name: var.clone(),
                value: raw.clone(),
                why,
            };
            let value: u64 = raw
                .trim()
                .parse()
                .map_err(|_| error("expected a whole number"))?;
            if value < minimum {
                return Err(error("must be at least 1"));
            }
            set(&mut limits, value);
        }
        Ok(limits)
    }

    /// The names of every override, for help texts.
    pub fn variable_names() -> impl Iterator<Item = String> {
        OVERRIDES.iter().map(|(name, ..)| format!("CAIRN_{name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design() {
        let limits = Limits::default();
        assert_eq!(limits.max_depth, 3);
        assert_eq!(limits.max_iterations_per_level, 20);
        assert_eq!(limits.max_parallel_per_turn, 8);
        assert_eq!(limits.max_total_subtasks, 32);
        assert_eq!(limits.max_total_llm_calls, 60);
        assert_eq!(limits.max_total_tool_calls, 200);
        assert_eq!(limits.max_wall_clock, Duration::from_millis(180_000));
        assert_eq!(limits.max_tool_result_bytes, 50_000);
        assert_eq!(limits.max_history_tokens, 128_000);
        assert_eq!(limits.max_visible_tools, 38);
    }

    #[test]
    fn every_limit_has_an_override() {
        let limits = Limits::from_lookup(|name| {
            Some(match name {
                "CAIRN_MAX_DEPTH" => "0".into(),
                _ => "7".into(),
            })
        })
        .unwrap();
        assert_eq!(
            limits,
            Limits {
                max_depth: 0,
                max_iterations_per_level: 7,
                max_parallel_per_turn: 7,
                max_total_subtasks: 7,
                max_total_llm_calls: 7,
                max_total_tool_calls: 7,
                max_wall_clock: Duration::from_millis(7),
                max_tool_result_bytes: 7,
                max_history_tokens: 7,
                max_visible_tools: 7,
            }
        );
        assert_eq!(Limits::variable_names().count(), 10);
    }

    #[test]
    fn bad_overrides_say_which_and_why() {
        let err = Limits::from_lookup(|name| {
            (name == "CAIRN_MAX_TOTAL_LLM_CALLS").then(|| "lots".into())
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CAIRN_MAX_TOTAL_LLM_CALLS=\"lots\" is not valid: expected a whole number"
        );
        let err =
            Limits::from_lookup(|name| (name == "CAIRN_MAX_PARALLEL_PER_TURN").then(|| "0".into()))
                .unwrap_err();
        assert_eq!(err.why, "must be at least 1");
    }
}
