//! `cairn models` and `cairn pull`.

use std::io::{IsTerminal, Write};

use cairn_runtime::{
    Endpoint, PRESETS, Preset, Said, detect_servers, list_models_said, models_said,
};
use futures_util::StreamExt;
use futures_util::future::join_all;
use serde_json::json;

use crate::args::{ModelsArgs, PullArgs};
use crate::exit::{Exit, Failure};

/// One server's models, with what it says of each.
struct Listed {
    url: String,
    name: &'static str,
    models: Vec<(String, Said)>,
}

pub async fn models(args: ModelsArgs) -> Exit {
    if args.server.given() {
        return match named_server(&args).await {
            Ok(listed) => {
                print_models(args.json, &[listed]);
                Exit::OK
            }
            Err(failure) => failure.report(),
        };
    }
    let found = detect_servers(preset_url).await;
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
    let rows = found.into_iter().map(|detected| async move {
        let endpoint = Endpoint::new(detected.preset.dialect, &detected.base_url);
        Listed {
            models: models_said(&endpoint, detected.models).await,
            url: detected.base_url,
            name: detected.preset.name,
        }
    });
    print_models(args.json, &join_all(rows).await);
    Exit::OK
}

/// The models of the server the flags name.
async fn named_server(args: &ModelsArgs) -> Result<Listed, Failure> {
    let endpoint = args.server.endpoint_with_key()?;
    Ok(Listed {
        models: list_models_said(&endpoint).await?,
        url: endpoint
            .normalized_base()
            .unwrap_or_else(|_| endpoint.base_url.clone()),
        name: "",
    })
}

/// What a model's entry adds to its name: its window, and how tools reach it when not
/// the usual way ("4k context · tools through text").
fn described(said: &Said) -> String {
    let mut parts = Vec::new();
    if let Some(window) = &said.window {
        parts.push(format!("{}k context", (window.tokens + 512) / 1024));
    }
    if said.tools_in_text {
        parts.push("tools through text".to_owned());
    }
    parts.join(" · ")
}

/// A preset's address, moved by `CAIRN_<ID>_URL` (`CAIRN_OLLAMA_URL`, …) for servers
/// that run somewhere else.
fn preset_url(preset: &Preset) -> String {
    std::env::var(format!("CAIRN_{}_URL", preset.id.to_ascii_uppercase()))
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| preset.base_url.to_owned())
}

fn print_models(as_json: bool, servers: &[Listed]) {
    if as_json {
        let value: Vec<_> = servers
            .iter()
            .map(|listed| {
                let names: Vec<&str> = listed.models.iter().map(|(m, _)| m.as_str()).collect();
                let details: Vec<_> = listed
                    .models
                    .iter()
                    .map(|(model, said)| {
                        json!({
                            "model": model,
                            "context_tokens": said.window.as_ref().map(|w| w.tokens),
                            "context_source": said.window.as_ref().map(|w| w.source.as_str()),
                            "tools_in_text": said.tools_in_text,
                        })
                    })
                    .collect();
                json!({"server": listed.url, "name": listed.name, "models": names, "details": details})
            })
            .collect();
        println!("{}", serde_json::Value::Array(value));
        return;
    }
    for listed in servers {
        let label = if listed.name.is_empty() {
            listed.url.clone()
        } else {
            format!("{} ({})", listed.name, listed.url)
        };
        if listed.models.is_empty() {
            println!("{label}: no models yet (pull one with `cairn pull MODEL`)");
        }
        for (model, said) in &listed.models {
            match described(said) {
                about if about.is_empty() => println!("{label}\t{model}"),
                about => println!("{label}\t{model}\t{about}"),
            }
        }
    }
}

pub async fn pull(args: PullArgs) -> Exit {
    let steps = match cairn_runtime::pull_model(&args.base_url, &args.model) {
        Ok(steps) => steps,
        Err(err) => return Failure::from(err).report(),
    };
    let live = std::io::stderr().is_terminal();
    let mut progress = std::pin::pin!(steps);
    let mut last_status = String::new();
    // The client ends the stream with an error unless the pull succeeded.
    while let Some(step) = progress.next().await {
        let step = match step {
            Ok(step) => step,
            Err(err) => {
                if live {
                    eprintln!();
                }
                return Failure::from(err).report();
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
