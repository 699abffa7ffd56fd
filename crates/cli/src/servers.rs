//! `cairn servers`: the model servers the user named, shared with the desktop's
//! Settings. A profile runs its subtasks and hand-overs on one with `server: NAME`.

use cairn_protocol::desktop::SavedEndpoint;
use cairn_runtime::{Endpoint, ServerReport};
use serde_json::json;

use crate::args::{ServersAction, ServersArgs};
use crate::exit::{Exit, Failure};

pub async fn servers(args: ServersArgs) -> Exit {
    match act(args).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(args: ServersArgs) -> Result<(), Failure> {
    let runtime = args.db.open().await?;
    match args.action {
        ServersAction::List => {
            let reports = runtime.server_reports().await?;
            if args.json {
                let list: Vec<_> = reports.iter().map(report_json).collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&list).unwrap_or_default()
                );
            } else if reports.is_empty() {
                println!("No servers are named; add one with `cairn servers add NAME URL`.");
            } else {
                print!("{}", table(&reports));
            }
        }
        ServersAction::Add {
            name,
            url,
            dialect,
            slots,
        } => {
            let dialect = dialect.unwrap_or_else(|| Endpoint::guess_dialect(&url));
            let server = SavedEndpoint {
                name,
                dialect,
                base_url: url,
                slots,
            };
            runtime.add_server(server.clone()).await?;
            if args.json {
                println!("{}", json!({"added": server}));
            } else {
                println!(
                    "Added `{}` at {} ({}).",
                    server.name.trim(),
                    server.base_url.trim(),
                    server.dialect
                );
            }
        }
        ServersAction::Remove { name } => {
            runtime.remove_server(&name).await?;
            if args.json {
                println!("{}", json!({"removed": name}));
            } else {
                println!("Removed `{name}`.");
            }
        }
    }
    Ok(())
}

fn report_json(report: &ServerReport) -> serde_json::Value {
    json!({
        "name": report.server.name,
        "base_url": report.server.base_url,
        "dialect": report.server.dialect,
        "kind": report.facts.map(|facts| facts.kind),
        "slots": report.slots,
        "slots_set": report.server.slots,
        "window": report.facts.and_then(|facts| facts.window),
        "error": report.error,
    })
}

/// One line per server: its name, address and dialect, then what it said.
fn table(reports: &[ServerReport]) -> String {
    let name_width = reports
        .iter()
        .map(|report| report.server.name.len())
        .max()
        .unwrap_or(0);
    let url_width = reports
        .iter()
        .map(|report| report.server.base_url.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for report in reports {
        let server = &report.server;
        let slots = match server.slots {
            Some(_) => format!("{} slots (set)", report.slots),
            None => format!("{} slots", report.slots),
        };
        let said = match (&report.facts, &report.error) {
            (Some(facts), _) => {
                let mut notes = vec![facts.kind.name().to_owned(), slots];
                if let Some(window) = facts.window {
                    notes.push(format!("{window}-token window"));
                }
                notes.join(", ")
            }
            (None, Some(error)) => format!("{slots}; not answering: {error}"),
            (None, None) => slots,
        };
        out.push_str(&format!(
            "{:name_width$}  {:url_width$}  {:<6}  {said}\n",
            server.name,
            server.base_url,
            server.dialect.to_string(),
        ));
    }
    out
}
