//! `cairn usage`: the usage log, call by call, what each cost, and the totals (which
//! are what the turns' `done` events reported); `cairn usage price` sets what a model
//! costs.

use cairn_protocol::describe::duration;
use cairn_protocol::{CallTotals, ModelPrice, cost_of};
use cairn_runtime::Runtime;
use serde_json::json;

use crate::args::{UsageAction, UsageArgs};
use crate::exit::{Exit, Failure};

pub async fn usage(args: UsageArgs) -> Exit {
    match act(args).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(args: UsageArgs) -> Result<(), Failure> {
    let runtime = args.db.open().await?;
    match args.action {
        Some(UsageAction::Price {
            model,
            prompt_per_million,
            completion_per_million,
            remove,
        }) => {
            let prices = match (remove, prompt_per_million, completion_per_million) {
                (true, ..) => runtime.remove_price(&model).await?,
                (false, Some(prompt), Some(completion)) => {
                    runtime.set_price(&model, prompt, completion).await?
                }
                _ => {
                    return Err(Failure::Usage(
                        "give the prompt and the completion price per million tokens, or \
                         --remove"
                            .into(),
                    ));
                }
            };
            print_prices(&prices, args.json);
            Ok(())
        }
        None => list(&runtime, args.thread.as_deref(), args.json).await,
    }
}

/// One line of the log's table: text columns to the left, figures to the right.
fn row(cells: [&str; 7]) -> String {
    let [call, model, prompt, output, time, cost, answer] = cells;
    format!("{call:<8} {model:<24} {prompt:>8} {output:>8} {time:>8} {cost:>9}  {answer}")
}

fn print_prices(prices: &[ModelPrice], json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(prices).unwrap_or_default()
        );
        return;
    }
    for price in prices {
        println!(
            "{:<24} {} per million prompt tokens, {} per million completion tokens",
            price.model, price.prompt_per_million, price.completion_per_million
        );
    }
}

async fn list(runtime: &Runtime, thread: Option<&str>, as_json: bool) -> Result<(), Failure> {
    let calls = runtime.usage_log(thread).await?;
    let prices = runtime.prices().await?;
    let totals = CallTotals::of(calls.iter().map(|logged| &logged.call), &prices);
    if as_json {
        let calls: Vec<_> = calls
            .iter()
            .map(|logged| {
                let mut value = serde_json::to_value(logged).unwrap_or_default();
                value["cost"] = json!(cost_of(&logged.call, &prices));
                value
            })
            .collect();
        let out = json!({
            "calls": calls,
            "totals": totals,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(());
    }
    if !calls.is_empty() {
        println!(
            "{}",
            row([
                "call", "model", "prompt", "output", "time", "cost", "answer"
            ])
        );
    }
    for logged in &calls {
        let call = &logged.call;
        // An estimate stands where the server counted nothing: `~` says so.
        let mark = if call.estimated { "~" } else { "" };
        let failed = call
            .error
            .as_deref()
            .map(|error| format!("  failed: {error}"))
            .unwrap_or_default();
        println!(
            "{}{failed}",
            row([
                &call.operation,
                &call.model,
                &format!("{mark}{}", call.prompt_tokens),
                &format!("{mark}{}", call.completion_tokens),
                &duration(call.latency_ms),
                &format!("{:.4}", cost_of(call, &prices)),
                logged.message_id.as_deref().unwrap_or(&logged.thread_id),
            ])
        );
    }
    println!(
        "{} calls: {} prompt + {} completion tokens{}, {:.1} s, cost {:.4}",
        totals.llm_calls,
        totals.prompt_tokens,
        totals.completion_tokens,
        if totals.estimated {
            " (some estimated)"
        } else {
            ""
        },
        totals.latency_ms as f64 / 1000.0,
        totals.cost
    );
    Ok(())
}
