//! `cairn models` and `cairn pull`.

use std::io::{IsTerminal, Write};

use cairn_runtime::{
    Checkup, Endpoint, PRESETS, Preset, Runtime, Said, Sampling, detect_servers, list_models_said,
    models_said, resolve_model,
};
use cairn_secrets::Keychain;
use futures_util::StreamExt;
use futures_util::future::join_all;
use serde_json::json;

use crate::args::{CheckArgs, ModelsAction, ModelsArgs, PullArgs};
use crate::exit::{Exit, Failure};

/// One server's models, with what it says of each and what Cairn learned of it.
struct Listed {
    url: String,
    name: &'static str,
    models: Vec<(String, Said, Option<Checkup>)>,
}

pub async fn models(args: ModelsArgs) -> Exit {
    if let Some(ModelsAction::Check(check)) = args.action {
        return match check_model(&check).await {
            Ok(()) => Exit::OK,
            Err(failure) => failure.report(),
        };
    }
    let runtime = match args.db.open().await {
        Ok(runtime) => runtime,
        Err(failure) => return failure.report(),
    };
    if args.server.given() {
        return match named_server(&args).await {
            Ok(listed) => {
                print_models(args.json, &[with_checkups(&runtime, listed).await]);
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
    let runtime = &runtime;
    let rows = found.into_iter().map(|detected| async move {
        let endpoint = Endpoint::new(detected.preset.dialect, &detected.base_url);
        let listed = Listed {
            models: models_said(&endpoint, detected.models)
                .await
                .into_iter()
                .map(|(model, said)| (model, said, None))
                .collect(),
            url: detected.base_url,
            name: detected.preset.name,
        };
        with_checkups(runtime, listed).await
    });
    print_models(args.json, &join_all(rows).await);
    Exit::OK
}

/// The models of the server the flags name.
async fn named_server(args: &ModelsArgs) -> Result<Listed, Failure> {
    let endpoint = args.server.endpoint_with_key()?;
    Ok(Listed {
        models: list_models_said(&endpoint)
            .await?
            .into_iter()
            .map(|(model, said)| (model, said, None))
            .collect(),
        url: endpoint
            .normalized_base()
            .unwrap_or_else(|_| endpoint.base_url.clone()),
        name: "",
    })
}

/// `listed` with what Cairn learned of each of its models; a store that cannot be
/// read leaves them unchecked, as a listing is still worth having.
async fn with_checkups(runtime: &Runtime, mut listed: Listed) -> Listed {
    for (model, _, checkup) in &mut listed.models {
        *checkup = runtime
            .model_checkup(&listed.url, model)
            .await
            .unwrap_or_else(|err| {
                eprintln!("cairn: what was learned of {model} cannot be read: {err}");
                None
            });
    }
    listed
}

/// `cairn models check`: the check-up of one model, run now.
async fn check_model(args: &CheckArgs) -> Result<(), Failure> {
    let runtime = args.db.open().await?;
    let request = args.server.model_request(
        &runtime.servers().await?,
        args.model.clone(),
        Sampling::default(),
    )?;
    let choice = resolve_model(request, None, &Keychain::new()).await?;
    eprintln!(
        "cairn: checking what {} needs to answer from its tools (a short turn in a scratch folder)…",
        choice.model
    );
    let checkup = runtime.check_model(&choice).await?;
    if args.json {
        println!(
            "{}",
            json!({"server": choice.base_url, "model": choice.model, "checkup": checkup_json(&checkup)})
        );
    } else {
        println!("{}\t{}", choice.model, checkup.said());
    }
    Ok(())
}

/// What a model's entry adds to its name: its window, how tools reach it when not
/// the usual way, and what its check-up found ("4k context · tools through text",
/// "8k context · needs the question restated").
fn described(said: &Said, checkup: Option<&Checkup>) -> String {
    let mut parts = Vec::new();
    if let Some(window) = &said.window {
        parts.push(format!("{}k context", (window.tokens + 512) / 1024));
    }
    if said.tools_in_text {
        parts.push("tools through text".to_owned());
    }
    if let Some(checkup) = checkup {
        parts.push(checkup.said());
    }
    parts.join(" · ")
}

fn checkup_json(checkup: &Checkup) -> serde_json::Value {
    json!({
        "verdict": checkup.verdict(),
        "calls": checkup.calls.as_str(),
        "results": checkup.results.as_str(),
        "answered": checkup.answered,
    })
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
                let names: Vec<&str> =
                    listed.models.iter().map(|(m, _, _)| m.as_str()).collect();
                let details: Vec<_> = listed
                    .models
                    .iter()
                    .map(|(model, said, checkup)| {
                        json!({
                            "model": model,
                            "context_tokens": said.window.as_ref().map(|w| w.tokens),
                            "context_source": said.window.as_ref().map(|w| w.source.as_str()),
                            "tools_in_text": said.tools_in_text,
                            "checkup": checkup.as_ref().map(checkup_json),
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
        for (model, said, checkup) in &listed.models {
            match described(said, checkup.as_ref()) {
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
