//! Which of JavaScriptCore's compilers run Cairn's page. The page works in short
//! bursts (a click, a streamed piece, a chat opened), which JSC's baseline tiers
//! serve: its JavaScript baseline JIT and BBQ, the WebAssembly one. The optimizing
//! tiers (DFG, and FTL above it, for JavaScript; OMG for WebAssembly) compile code that
//! stays hot for long, and once they have run, their compilers' code and data stay in
//! the web process for its life. Without them Cairn idles about 6 MiB smaller, with its
//! cold start, 500 cards and streamed answer as fast within the runs' spread (README
//! "Benchmarks → The desktop app").
//!
//! JSC reads its options from `JSC_<name>` variables when the web process starts; a
//! value the user set is kept, so `JSC_useDFGJIT=1` brings a tier back.

use std::ffi::OsString;

/// The optimizing tiers, each switched off by `0`.
const OPTIMIZING_TIERS: [&str; 2] = ["JSC_useDFGJIT", "JSC_useOMGJIT"];

/// Leaves JSC's optimizing tiers out of the web processes Cairn starts. Must run
/// before any thread starts: it changes the process environment, which the web
/// processes inherit.
#[allow(unsafe_code)]
pub fn baseline_tiers_only() {
    for name in unset(|name| std::env::var_os(name)) {
        // SAFETY: called first thing in `main` (through `run`), while the process has
        // one thread; nothing reads the environment concurrently.
        unsafe { std::env::set_var(name, "0") };
    }
}

/// The tiers' switches the user has not set, given how to read a variable.
fn unset(read: impl Fn(&str) -> Option<OsString>) -> Vec<&'static str> {
    OPTIMIZING_TIERS
        .into_iter()
        .filter(|name| read(name).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_optimizing_tier_is_switched_off_unless_the_user_chose() {
        assert_eq!(unset(|_| None), ["JSC_useDFGJIT", "JSC_useOMGJIT"]);
        let chose_dfg = |name: &str| (name == "JSC_useDFGJIT").then(|| OsString::from("1"));
        assert_eq!(unset(chose_dfg), ["JSC_useOMGJIT"]);
    }
}
