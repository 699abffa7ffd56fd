//! `cairn usage`: the usage log, call by call, and its totals (which are what the
//! turns' `done` events reported).

use cairn_protocol::LoggedCall;
use serde_json::json;

use crate::args::UsageArgs;
use crate::exit::{Exit, Failure};

pub async fn usage(args: UsageArgs) -> Exit {
    match list(&args).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

/// The sums over `calls`.
#[derive(Debug, Default)]
struct Totals {
    calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    latency_ms: u64,
    estimated: bool,
}

impl Totals {
    fn of(calls: &[LoggedCall]) -> Self {
        calls.iter().fold(Self::default(), |mut t, logged| {
            t.calls += 1;
            t.prompt_tokens += logged.call.prompt_tokens;
            t.completion_tokens += logged.call.completion_tokens;
            t.latency_ms += logged.call.latency_ms;
            t.estimated |= logged.call.estimated;
            t
        })
    }
}

async fn list(args: &UsageArgs) -> Result<(), Failure> {
    let store = args.db.open().await?;
    if let Some(id) = &args.thread {
        // A thread that is not there is an error, not an empty log.
        store.thread(id).await?;
    }
    let calls = store.model_calls(args.thread.as_deref()).await?;
    let totals = Totals::of(&calls);
    if args.json {
        let out = json!({
            "calls": calls,
            "totals": {
                "llm_calls": totals.calls,
                "prompt_tokens": totals.prompt_tokens,
                "completion_tokens": totals.completion_tokens,
                "latency_ms": totals.latency_ms,
                "estimated": totals.estimated,
            }
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(());
    }
    for logged in &calls {
        let call = &logged.call;
        let about = if call.estimated { " (estimated)" } else { "" };
        let failed = call
            .error
            .as_deref()
            .map(|error| format!("  failed: {error}"))
            .unwrap_or_default();
        println!(
            "{:<8} {:<24} {:>7} + {:<6} tokens{about}  {:>6} ms  {}{failed}",
            call.operation,
            call.model,
            call.prompt_tokens,
            call.completion_tokens,
            call.latency_ms,
            logged.message_id.as_deref().unwrap_or(&logged.thread_id),
        );
    }
    println!(
        "{} calls: {} prompt + {} completion tokens{}, {:.1} s",
        totals.calls,
        totals.prompt_tokens,
        totals.completion_tokens,
        if totals.estimated {
            " (some estimated)"
        } else {
            ""
        },
        totals.latency_ms as f64 / 1000.0
    );
    Ok(())
}
