//! `CAIRN_LOG`, read the same way by every front end: `warn` when it is unset, else
//! `target=level` directives and a bare default level (`debug`,
//! `warn,cairn_core=info`).

use tracing_subscriber::filter::{LevelFilter, Targets};

/// The variable's name.
pub const LOG_VARIABLE: &str = "CAIRN_LOG";

/// A `CAIRN_LOG` that could not be read, said once logging is up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{LOG_VARIABLE}={spec:?} is not a log filter ({reason}); showing warnings only. Write levels as `debug` or `cairn_core=info,warn`"
)]
pub struct BadLogFilter {
    spec: String,
    reason: String,
}

/// What to log, from `spec` (the variable's value, if set); a spec that cannot be
/// read logs warnings, as an unset one does, and says why.
pub fn log_filter(spec: Option<&str>) -> (Targets, Option<BadLogFilter>) {
    let warnings = || Targets::new().with_default(LevelFilter::WARN);
    let Some(spec) = spec.map(str::trim).filter(|spec| !spec.is_empty()) else {
        return (warnings(), None);
    };
    match spec.parse::<Targets>() {
        Ok(targets) => (targets, None),
        Err(err) => (
            warnings(),
            Some(BadLogFilter {
                spec: spec.to_owned(),
                reason: err.to_string(),
            }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    #[test]
    fn levels_per_target_and_a_default_are_read() {
        let (targets, problem) = log_filter(Some("warn,cairn_core=info"));
        assert_eq!(problem, None);
        assert!(targets.would_enable("cairn_core::turn", &Level::INFO));
        assert!(!targets.would_enable("cairn_core::turn", &Level::DEBUG));
        assert!(!targets.would_enable("hyper", &Level::INFO));
        assert!(targets.would_enable("hyper", &Level::WARN));
        let (targets, _) = log_filter(Some("debug"));
        assert!(targets.would_enable("cairn_store", &Level::DEBUG));
    }

    #[test]
    fn unset_or_blank_means_warnings() {
        for spec in [None, Some(""), Some("  ")] {
            let (targets, problem) = log_filter(spec);
            assert_eq!(problem, None);
            assert!(targets.would_enable("cairn_core", &Level::WARN));
            assert!(!targets.would_enable("cairn_core", &Level::INFO));
        }
    }

    #[test]
    fn a_filter_that_cannot_be_read_logs_warnings_and_says_why() {
        let (targets, problem) = log_filter(Some("cairn_core=loud"));
        assert!(targets.would_enable("cairn_core", &Level::WARN));
        assert!(!targets.would_enable("cairn_core", &Level::INFO));
        let problem = problem.expect("a problem").to_string();
        assert!(
            problem.starts_with("CAIRN_LOG=\"cairn_core=loud\" is not a log filter ("),
            "{problem}"
        );
        assert!(
            problem.ends_with(
                "); showing warnings only. Write levels as `debug` or `cairn_core=info,warn`"
            ),
            "{problem}"
        );
    }
}
