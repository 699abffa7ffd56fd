//! First run: find the model servers running here, pick a model (or download one
//! into Ollama), and start.

use cairn_protocol::Dialect;
use cairn_protocol::desktop::commands::{DetectProviders, PullModel, SaveSettings};
use cairn_protocol::desktop::{DetectedServer, PullPhase, PullStep, Settings};
use leptos::prelude::*;

use super::settings::{ServerState, check_server, server_status};
use super::{Screen, actions, ctx, ipc};
use crate::format;

/// What the first-run screen suggests downloading when Ollama has no model yet.
const SUGGESTED_MODEL: &str = "qwen3:4b";

#[derive(Debug, Clone, PartialEq)]
enum Search {
    Running,
    Done(Vec<DetectedServer>),
}

#[component]
pub fn FirstRun() -> impl IntoView {
    let ctx = ctx();
    let search = RwSignal::new(Search::Running);
    let detect = move || {
        search.set(Search::Running);
        leptos::task::spawn_local(async move {
            let found = ipc::call(&DetectProviders {}).await.unwrap_or_default();
            search.set(Search::Done(found));
        });
    };
    detect();
    let skip = move |_| {
        let settings = Settings {
            first_run_done: true,
            ..ctx.config.settings.get_untracked()
        };
        finish(ctx, settings);
    };
    view! {
        <main class="first-run">
            <div class="first-run-card">
                <h1>"Welcome to Cairn"</h1>
                <p>"Cairn talks to a model server on this computer (or one you name). Pick a model to start."</p>
                {move || match search.get() {
                    Search::Running => view! { <p class="status"><span class="spinner"></span>"Looking for model servers…"</p> }.into_any(),
                    Search::Done(found) if found.is_empty() => view! { <NoServer retry=Callback::new(move |()| detect()) /> }.into_any(),
                    Search::Done(found) => found.into_iter().map(|server| view! { <Found server=server /> }).collect_view().into_any(),
                }}
                <CustomServer />
                <button class="ghost skip" on:click=skip>"Skip for now"</button>
            </div>
            <super::Toast />
        </main>
    }
}

/// A server the search did not find, by its address and API: connected on asking,
/// its models offered, or what went wrong said beside it (with the way to the other
/// API when the address plainly speaks that one).
#[component]
fn CustomServer() -> impl IntoView {
    let url = RwSignal::new(String::new());
    let dialect = RwSignal::new(Dialect::Openai);
    let models = RwSignal::new(None::<Vec<String>>);
    let problem = RwSignal::new(None::<ServerState>);
    let connect = move || {
        let (dialect, base_url) = (dialect.get_untracked(), url.get_untracked());
        problem.set(None);
        leptos::task::spawn_local(async move {
            match check_server(dialect, base_url).await {
                (_, Some(found)) => models.set(Some(found)),
                (state, None) => {
                    models.set(None);
                    problem.set(Some(state));
                }
            }
        });
    };
    let switch_dialect = Callback::new(move |chosen: Dialect| {
        dialect.set(chosen);
        connect();
    });
    view! {
        <details class="custom-server">
            <summary>"Use another server"</summary>
            <div class="row">
                <input type="url" class="custom-url" placeholder="http://gpu-box:8000/v1" aria-label="Server address"
                    prop:value=move || url.get() on:input=move |event| url.set(event_target_value(&event)) />
                <select aria-label="API" prop:value=move || dialect.get().as_str()
                    on:change=move |event| {
                        if let Ok(chosen) = event_target_value(&event).parse() {
                            dialect.set(chosen);
                        }
                    }>
                    <option value="openai">"OpenAI-compatible"</option>
                    <option value="ollama">"Ollama"</option>
                </select>
                <button class="connect" on:click=move |_| connect()>"Connect"</button>
            </div>
            {move || problem.get().map(|state| server_status(state, switch_dialect))}
            {move || models.get().map(|found| {
                let base_url = url.get_untracked();
                let dialect = dialect.get_untracked();
                if found.is_empty() {
                    view! { <p class="muted">"Connected, but it offers no models yet."</p> }.into_any()
                } else {
                    view! { <ModelChoices dialect=dialect base_url=base_url models=found /> }.into_any()
                }
            })}
        </details>
    }
}

#[component]
fn NoServer(retry: Callback<()>) -> impl IntoView {
    let ctx = ctx();
    view! {
        <div class="notice">
            <p><strong>"No model server is running here."</strong></p>
            <p>"The easiest start is Ollama: install it, then run " <code>"ollama serve"</code>
               " in a terminal. Cairn can download a model for you once it runs."</p>
            <ul class="hints">
                {move || ctx.config.presets.get().into_iter().map(|preset| view! {
                    <li><strong>{preset.name}</strong> " (" {preset.base_url} "): "
                        <span inner_html=inline_markdown(&preset.start_hint)></span></li>
                }).collect_view()}
            </ul>
            <button class="primary" on:click=move |_| retry.run(())>"Look again"</button>
        </div>
    }
}

#[component]
fn Found(server: DetectedServer) -> impl IntoView {
    let is_ollama = server.preset.dialect == Dialect::Ollama;
    view! {
        <div class="found">
            <h2>{server.preset.name.clone()} <span class="muted">" at " {server.base_url.clone()}</span></h2>
            {if server.models.is_empty() {
                view! { <p class="muted">"It has no models yet."</p> }.into_any()
            } else {
                view! { <ModelChoices dialect=server.preset.dialect base_url=server.base_url.clone() models=server.models.clone() /> }.into_any()
            }}
            {is_ollama.then(|| view! { <Pull base_url=server.base_url.clone() /> })}
        </div>
    }
}

#[component]
fn ModelChoices(dialect: Dialect, base_url: String, models: Vec<String>) -> impl IntoView {
    let ctx = ctx();
    models
        .into_iter()
        .map(|model| {
            let settings = Settings {
                dialect,
                base_url: base_url.clone(),
                model: Some(model.clone()),
                first_run_done: true,
                ..ctx.config.settings.get_untracked()
            };
            view! {
                <button class="model-choice" on:click=move |_| finish(ctx, settings.clone())>{model}</button>
            }
        })
        .collect_view()
}

/// Downloads a model into the Ollama server at `base_url`, with a progress bar.
#[component]
fn Pull(base_url: String) -> impl IntoView {
    let ctx = ctx();
    let name = RwSignal::new(SUGGESTED_MODEL.to_owned());
    let progress = RwSignal::new(None::<PullStep>);
    let pulling = RwSignal::new(false);
    let pull = move |_| {
        let model = name.get_untracked();
        let base_url = base_url.clone();
        pulling.set(true);
        leptos::task::spawn_local(async move {
            // The download goes to the server in Settings: make it this one first.
            let settings = Settings {
                dialect: Dialect::Ollama,
                base_url: base_url.clone(),
                ..ctx.config.settings.get_untracked()
            };
            match ipc::call(&SaveSettings { settings }).await {
                Ok(saved) => ctx.config.settings.set(saved.settings),
                Err(err) => {
                    pulling.set(false);
                    return ctx.say(err.message);
                }
            }
            let channel = ipc::channel(move |step: PullStep| {
                let finished = step.phase != PullPhase::Working;
                if step.phase == PullPhase::Done {
                    let settings = Settings {
                        model: Some(name.get_untracked()),
                        first_run_done: true,
                        ..ctx.config.settings.get_untracked()
                    };
                    finish(ctx, settings);
                }
                progress.set(Some(step));
                if finished {
                    pulling.set(false);
                }
            });
            if let Err(err) = ipc::call_streaming(&PullModel { model }, &channel).await {
                pulling.set(false);
                ctx.say(err.message);
            }
        });
    };
    view! {
        <div class="pull">
            <div class="row">
                <input type="text" aria-label="Model to download" prop:value=move || name.get()
                    on:input=move |event| name.set(event_target_value(&event)) />
                <button class="primary" on:click=pull disabled=move || pulling.get()>"Download"</button>
            </div>
            {move || progress.get().map(|step| {
                let fraction = match (step.completed, step.total) {
                    (Some(done), Some(total)) if total > 0 => Some(done as f64 / total as f64),
                    _ => None,
                };
                let sizes = match (step.completed, step.total) {
                    (Some(done), Some(total)) => format!(" {} of {}", format::bytes(done), format::bytes(total)),
                    _ => String::new(),
                };
                view! {
                    <div class="progress">
                        <progress max="1" value=fraction.unwrap_or(0.0)></progress>
                        <span>{step.error.clone().unwrap_or_else(|| format!("{}{sizes}", step.status))}</span>
                    </div>
                }
            })}
        </div>
    }
}

/// A trusted one-line hint with `code` in it, as HTML without the paragraph.
fn inline_markdown(text: &str) -> String {
    let html = crate::markdown::to_html(text);
    html.trim()
        .trim_start_matches("<p>")
        .trim_end_matches("</p>")
        .to_owned()
}

fn finish(ctx: super::Ctx, settings: Settings) {
    leptos::task::spawn_local(async move {
        match ipc::call(&SaveSettings { settings }).await {
            Ok(saved) => {
                ctx.config.settings.set(saved.settings);
                ctx.nav.screen.set(Screen::Chat);
                actions::refresh_models(ctx);
                ctx.nav.focus.update(|n| *n += 1);
            }
            Err(err) => ctx.say(err.message),
        }
    });
}
