//! `cairn usage`: the usage log, call by call, what each cost, and the totals (which
//! are what the turns' `done` events reported); `cairn usage price` sets what a model
//! costs.

use cairn_protocol::describe::duration;
use cairn_protocol::{CallTotals, ModelPrice, cost_of, split_by_server};
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

/// One line of the log's table: text columns to the left, figures to the right. The
/// server column is there only when the calls went to more than one server.
fn row(cells: [&str; 8], servers: bool) -> String {
    let [call, model, server, prompt, output, time, cost, answer] = cells;
    let server = if servers {
        format!("{server:<12} ")
    } else {
        String::new()
    };
    format!("{call:<8} {model:<24} {server}{prompt:>8} {output:>8} {time:>8} {cost:>9}  {answer}")
}

/// One line of totals: what `totals` sum up, after `label`.
fn totals_line(label: &str, totals: &CallTotals) -> String {
    format!(
        "{label}{} call{}: {} prompt + {} completion tokens{}, {:.1} s, cost {:.4}",
        totals.llm_calls,
        if totals.llm_calls == 1 { "" } else { "s" },
        totals.prompt_tokens,
        totals.completion_tokens,
        if totals.estimated {
            " (some estimated)"
        } else {
            ""
        },
        totals.latency_ms as f64 / 1000.0,
        totals.cost
    )
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
    let by_server = split_by_server(calls.iter().map(|logged| &logged.call), &prices);
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
            "by_server": by_server,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(());
    }
    if !calls.is_empty() {
        println!(
            "{}",
            row(
                [
                    "call", "model", "server", "prompt", "output", "time", "cost", "answer"
                ],
                !by_server.is_empty()
            )
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
            row(
                [
                    &call.operation,
                    &call.model,
                    call.server.as_deref().unwrap_or("-"),
                    &format!("{mark}{}", call.prompt_tokens),
                    &format!("{mark}{}", call.completion_tokens),
                    &duration(call.latency_ms),
                    &format!("{:.4}", cost_of(call, &prices)),
                    logged.message_id.as_deref().unwrap_or(&logged.thread_id),
                ],
                !by_server.is_empty()
            )
        );
    }
    for server in &by_server {
        let name = if server.server.is_empty() {
            "(unnamed)"
        } else {
            &server.server
        };
        println!("{}", totals_line(&format!("on {name}: "), &server.totals));
    }
    println!("{}", totals_line("", &totals));
    Ok(())
}
