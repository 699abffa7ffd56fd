//! `cairn models` and `cairn pull`.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use cairn_providers::ollama::{OllamaClient, OllamaConfig};
use cairn_providers::{PRESETS, detect};
use futures_util::StreamExt;
use serde_json::json;

use crate::args::{ModelsArgs, PullArgs};
use crate::exit::{Exit, Failure};

/// How long detection waits for each preset.
const DETECT_TIMEOUT: Duration = Duration::from_millis(800);

pub async fn models(args: ModelsArgs) -> Exit {
    if args.server.given() {
        let server = match args.server.connect() {
            Ok(server) => server,
            Err(failure) => return failure.report(),
        };
        return match server.list_models().await {
            Ok(models) => {
                print_models(args.json, &[(server.server().to_owned(), "", models)]);
                Exit::OK
            }
            Err(err) => Failure::from_provider(err).report(),
        };
    }
    let found = detect(DETECT_TIMEOUT, preset_url).await;
    if found.is_empty() {
        if args.json {
            println!("[]");
        }
        eprintln!(
            "cairn: no model server is running at the usual addresses ({}). Start Ollama with \
             `ollama serve`, or pass --base-url",
            PRESETS
                .iter()
                .map(|p| p.base_url)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Exit::PROVIDER;
    }
    let rows: Vec<_> = found
        .into_iter()
        .map(|d| (d.base_url, d.preset.name, d.models))
        .collect();
    print_models(args.json, &rows);
    Exit::OK
}

/// A preset's address, moved by `CAIRN_<ID>_URL` (`CAIRN_OLLAMA_URL`, …) for servers
/// that run somewhere else.
fn preset_url(preset: &cairn_providers::Preset) -> String {
    std::env::var(format!("CAIRN_{}_URL", preset.id.to_ascii_uppercase()))
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| preset.base_url.to_owned())
}

fn print_models(as_json: bool, servers: &[(String, &str, Vec<String>)]) {
    if as_json {
        let value: Vec<_> = servers
            .iter()
            .map(|(url, name, models)| json!({"server": url, "name": name, "models": models}))
            .collect();
        println!("{}", serde_json::Value::Array(value));
        return;
    }
    for (url, name, models) in servers {
        let label = if name.is_empty() {
            url.clone()
        } else {
            format!("{name} ({url})")
        };
        if models.is_empty() {
            println!("{label}: no models yet (pull one with `cairn pull MODEL`)");
        }
        for model in models {
            println!("{label}\t{model}");
        }
    }
}

pub async fn pull(args: PullArgs) -> Exit {
    let client = match OllamaClient::new(OllamaConfig::new(&args.base_url)) {
        Ok(client) => client,
        Err(err) => return Failure::from_provider(err).report(),
    };
    let live = std::io::stderr().is_terminal();
    let mut progress = std::pin::pin!(client.pull(&args.model));
    let mut last_status = String::new();
    // The client ends the stream with an error unless the pull succeeded.
    while let Some(step) = progress.next().await {
        let step = match step {
            Ok(step) => step,
            Err(err) => {
                if live {
                    eprintln!();
                }
                return Failure::from_provider(err).report();
            }
        };
        let line = match (step.completed, step.total) {
            (Some(done), Some(total)) if total > 0 => format!(
                "{} {} {:>3}% ({} / {})",
                step.status,
                bar(done, total),
                done * 100 / total,
                human_bytes(done),
                human_bytes(total)
            ),
            _ => step.status.clone(),
        };
        let mut err = std::io::stderr().lock();
        if live {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else if step.status != last_status {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        last_status = step.status;
    }
    if live {
        eprintln!();
    }
    println!("pulled {}", args.model);
    Exit::OK
}

fn bar(done: u64, total: u64) -> String {
    const WIDTH: u64 = 24;
    let filled = (done.min(total) * WIDTH / total) as usize;
    format!(
        "[{}{}]",
        "#".repeat(filled),
        "-".repeat(WIDTH as usize - filled)
    )
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_shown_as_a_bar_and_sizes() {
        assert_eq!(bar(0, 100), format!("[{}]", "-".repeat(24)));
        assert_eq!(
            bar(50, 100),
            format!("[{}{}]", "#".repeat(12), "-".repeat(12))
        );
        assert_eq!(bar(200, 100), format!("[{}]", "#".repeat(24)));
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(2_142_590_208), "2.1 GB");
    }
}
