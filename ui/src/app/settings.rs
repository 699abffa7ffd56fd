//! Settings: the model server and its key, the default model and sampling, the
//! desktop behaviour, and the permission rules.

use cairn_protocol::desktop::{RuleInfo, SavedEndpoint, Settings, SettingsSaved};
use leptos::prelude::*;
use serde_json::json;

use super::{Ctx, Screen, actions, ctx, ipc};

/// A number field's text as an optional value; empty means "server default".
fn parse_number<T: std::str::FromStr>(label: &str, text: &str) -> Result<Option<T>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("{label} must be a number, not “{text}”"))
}

fn text_of<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

#[component]
pub fn SettingsScreen() -> impl IntoView {
    let ctx = ctx();
    let draft = RwSignal::new(ctx.settings.get_untracked());
    let temperature = RwSignal::new(text_of(draft.with_untracked(|s| s.temperature)));
    let top_p = RwSignal::new(text_of(draft.with_untracked(|s| s.top_p)));
    let max_tokens = RwSignal::new(text_of(draft.with_untracked(|s| s.max_tokens)));
    let context_cap = RwSignal::new(text_of(draft.with_untracked(|s| s.context_cap)));
    let models = RwSignal::new(Vec::<String>::new());
    let status = RwSignal::new(None::<String>);

    let test_server = move || {
        let (dialect, base_url) = draft.with_untracked(|s| (s.dialect.clone(), s.base_url.clone()));
        status.set(Some("Connecting…".into()));
        leptos::task::spawn_local(async move {
            let args = json!({"dialect": dialect, "baseUrl": base_url});
            match ipc::call::<Vec<String>>("list_models", &args).await {
                Ok(found) => {
                    status.set(Some(format!("Connected: {} model(s).", found.len())));
                    models.set(found);
                }
                Err(err) => status.set(Some(err.message)),
            }
        });
    };
    test_server();

    let save = move |_| {
        let numbers = (|| -> Result<_, String> {
            Ok((
                parse_number::<f64>("Temperature", &temperature.get_untracked())?,
                parse_number::<f64>("Top-p", &top_p.get_untracked())?,
                parse_number::<u32>("The answer length limit", &max_tokens.get_untracked())?,
                parse_number::<u32>("The context window", &context_cap.get_untracked())?,
            ))
        })();
        let (temperature, top_p, max_tokens, context_cap) = match numbers {
            Ok(numbers) => numbers,
            Err(problem) => return ctx.say(problem),
        };
        let settings = Settings {
            temperature,
            top_p,
            max_tokens,
            context_cap,
            ..draft.get_untracked()
        };
        save_settings(ctx, settings, Some(draft));
    };

    view! {
        <main class="settings">
            <header class="chat-head">
                <h1 class="chat-title">"Settings"</h1>
                <button class="ghost" on:click=move |_| ctx.screen.set(Screen::Chat)>"Back to chat"</button>
            </header>
            <div class="settings-body">
                <section>
                    <h2>"Model server"</h2>
                    <div class="presets">
                        {move || ctx.presets.get().into_iter().map(|preset| {
                            let chosen = {
                                let url = preset.base_url.clone();
                                move || draft.with(|s| s.base_url == url)
                            };
                            let (dialect, url) = (preset.dialect.clone(), preset.base_url.clone());
                            view! {
                                <button class="preset" class:chosen=chosen title=preset.start_hint.clone()
                                    on:click=move |_| {
                                        draft.update(|s| { s.dialect = dialect.clone(); s.base_url = url.clone(); });
                                        test_server();
                                    }>
                                    {preset.name.clone()}
                                </button>
                            }
                        }).collect_view()}
                    </div>
                    <label class="field">
                        <span>"Address"</span>
                        <input type="url" class="base-url" prop:value=move || draft.with(|s| s.base_url.clone())
                            on:change=move |event| { draft.update(|s| s.base_url = event_target_value(&event)); test_server(); } />
                    </label>
                    <label class="field">
                        <span>"Speaks"</span>
                        <select prop:value=move || draft.with(|s| s.dialect.clone())
                            on:change=move |event| { draft.update(|s| s.dialect = event_target_value(&event)); test_server(); }>
                            <option value="ollama">"Ollama API"</option>
                            <option value="openai">"OpenAI-compatible API"</option>
                        </select>
                    </label>
                    <p class="status" role="status">{move || status.get()}</p>
                    <ApiKey base_url=Signal::derive(move || draft.with(|s| s.base_url.clone())) />
                    <SavedServers draft=draft on_use=Callback::new(move |()| test_server()) />
                </section>
                <section>
                    <h2>"Model"</h2>
                    <label class="field">
                        <span>"Default model"</span>
                        <select prop:value=move || draft.with(|s| s.model.clone().unwrap_or_default())
                            on:change=move |event| {
                                let model = event_target_value(&event);
                                draft.update(|s| s.model = (!model.is_empty()).then_some(model));
                            }>
                            <option value="">"None (choose per chat)"</option>
                            {move || {
                                let mut all = models.get();
                                if let Some(model) = draft.with(|s| s.model.clone()) && !all.contains(&model) {
                                    all.insert(0, model);
                                }
                                all.into_iter().map(|m| view! { <option value=m.clone()>{m.clone()}</option> }).collect_view()
                            }}
                        </select>
                    </label>
                    <div class="grid-2">
                        <NumberField label="Temperature" hint="0–2; empty = server default" value=temperature />
                        <NumberField label="Top-p" hint="0–1; empty = server default" value=top_p />
                        <NumberField label="Answer length limit (tokens)" hint="empty = no limit" value=max_tokens />
                        <NumberField label="Largest context window (Ollama)" hint="tokens; empty = Cairn's default" value=context_cap />
                    </div>
                </section>
                <section>
                    <h2>"Desktop"</h2>
                    <label class="field">
                        <span>"Summon shortcut"</span>
                        <input type="text" class="shortcut" prop:value=move || draft.with(|s| s.summon_shortcut.clone())
                            on:input=move |event| draft.update(|s| s.summon_shortcut = event_target_value(&event)) />
                    </label>
                    {move || ctx.shortcut_problem.get().map(|problem| view! { <p class="notice error">{problem}</p> })}
                    <label class="check">
                        <input type="checkbox" prop:checked=move || draft.with(|s| s.notifications)
                            on:change=move |event| draft.update(|s| s.notifications = event_target_checked(&event)) />
                        "Notify me when a reply is ready or needs approval while Cairn is in the background"
                    </label>
                    <label class="check">
                        <input type="checkbox" prop:checked=move || draft.with(|s| s.close_to_tray)
                            on:change=move |event| draft.update(|s| s.close_to_tray = event_target_checked(&event)) />
                        "Closing the window keeps Cairn running in the tray"
                    </label>
                </section>
                <section>
                    <h2>"Permission rules"</h2>
                    <Rules />
                </section>
            </div>
            <footer class="settings-actions">
                <button class="primary save-settings" on:click=save>"Save settings"</button>
            </footer>
        </main>
    }
}

/// Keeps settings; on success the app uses them at once.
pub fn save_settings(ctx: Ctx, settings: Settings, draft: Option<RwSignal<Settings>>) {
    leptos::task::spawn_local(async move {
        match ipc::call::<SettingsSaved>("save_settings", &json!({"settings": settings})).await {
            Ok(saved) => {
                if let Some(draft) = draft {
                    draft.set(saved.settings.clone());
                }
                ctx.settings.set(saved.settings);
                ctx.shortcut_problem.set(saved.shortcut_problem);
                actions::refresh_models(ctx);
                ctx.say("Settings saved.");
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

#[component]
fn NumberField(label: &'static str, hint: &'static str, value: RwSignal<String>) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <input type="text" inputmode="decimal" placeholder=hint prop:value=move || value.get()
                on:input=move |event| value.set(event_target_value(&event)) />
        </label>
    }
}

/// The server's API key: stored in the OS keychain, never shown again.
#[component]
fn ApiKey(base_url: Signal<String>) -> impl IntoView {
    let ctx = ctx();
    let stored = RwSignal::new(None::<bool>);
    let typed = RwSignal::new(String::new());
    Effect::new(move |_| {
        let url = base_url.get();
        leptos::task::spawn_local(async move {
            match ipc::call::<bool>("has_api_key", &json!({"baseUrl": url})).await {
                Ok(has) => stored.set(Some(has)),
                Err(_) => stored.set(None),
            }
        });
    });
    let save = move |_| {
        let key = typed.get_untracked();
        let url = base_url.get_untracked();
        leptos::task::spawn_local(async move {
            match ipc::call::<()>("set_api_key", &json!({"baseUrl": url, "key": key})).await {
                Ok(()) => {
                    typed.set(String::new());
                    stored.set(Some(true));
                    ctx.say("The key is in the keychain.");
                }
                Err(err) => ctx.say(err.message),
            }
        });
    };
    let remove = move |_| {
        let url = base_url.get_untracked();
        leptos::task::spawn_local(async move {
            match ipc::call::<bool>("delete_api_key", &json!({"baseUrl": url})).await {
                Ok(_) => stored.set(Some(false)),
                Err(err) => ctx.say(err.message),
            }
        });
    };
    view! {
        <div class="field api-key">
            <span>"API key"</span>
            <div class="row">
                <input type="password" autocomplete="off" placeholder=move || match stored.get() {
                    Some(true) => "A key is stored (type to replace it)",
                    _ => "Only for servers that need one",
                } prop:value=move || typed.get() on:input=move |event| typed.set(event_target_value(&event)) />
                <button on:click=save disabled=move || typed.with(|t| t.trim().is_empty())>"Store in keychain"</button>
                <Show when=move || stored.get() == Some(true)>
                    <button class="ghost" on:click=remove>"Remove"</button>
                </Show>
            </div>
        </div>
    }
}

/// Servers the user added by hand, to switch between.
#[component]
fn SavedServers(draft: RwSignal<Settings>, on_use: Callback<()>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let add = move |_| {
        let label = name.get_untracked().trim().to_owned();
        if label.is_empty() {
            return;
        }
        draft.update(|s| {
            s.endpoints.retain(|e| e.name != label);
            s.endpoints.push(SavedEndpoint {
                name: label,
                dialect: s.dialect.clone(),
                base_url: s.base_url.clone(),
            });
        });
        name.set(String::new());
    };
    view! {
        <div class="saved-servers">
            <ul>
                {move || draft.with(|s| s.endpoints.clone()).into_iter().map(|endpoint| {
                    let used = endpoint.clone();
                    let removed = endpoint.name.clone();
                    view! {
                        <li>
                            <span>{endpoint.name.clone()}</span>
                            <span class="muted">{endpoint.base_url.clone()}</span>
                            <button class="ghost" on:click=move |_| {
                                draft.update(|s| { s.dialect = used.dialect.clone(); s.base_url = used.base_url.clone(); });
                                on_use.run(());
                            }>"Use"</button>
                            <button class="ghost" on:click=move |_| draft.update(|s| s.endpoints.retain(|e| e.name != removed))>"Remove"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <div class="row">
                <input type="text" placeholder="Name this server to keep it" prop:value=move || name.get()
                    on:input=move |event| name.set(event_target_value(&event)) />
                <button on:click=add>"Keep"</button>
            </div>
        </div>
    }
}

/// The persistent allow / ask / deny rules (Claude Code's syntax).
#[component]
fn Rules() -> impl IntoView {
    let ctx = ctx();
    let rules = RwSignal::new(Vec::<RuleInfo>::new());
    let list = RwSignal::new("allow".to_owned());
    let text = RwSignal::new(String::new());
    let reload = move || {
        leptos::task::spawn_local(async move {
            match ipc::call::<Vec<RuleInfo>>("list_rules", &json!({})).await {
                Ok(found) => rules.set(found),
                Err(err) => ctx.say(err.message),
            }
        });
    };
    reload();
    let add = move || {
        let args = json!({"list": list.get_untracked(), "rule": text.get_untracked()});
        leptos::task::spawn_local(async move {
            match ipc::call::<RuleInfo>("add_rule", &args).await {
                Ok(_) => {
                    text.set(String::new());
                    reload();
                }
                Err(err) => ctx.say(err.message),
            }
        });
    };
    view! {
        <p class="muted">"Deny beats ask beats allow, in every mode. Examples: "
            <code>"run_command(cargo test:*)"</code> ", " <code>"write_file(docs/**)"</code> ", " <code>"web_fetch"</code></p>
        <ul class="rules">
            {move || rules.get().into_iter().map(|rule| {
                let id = rule.id;
                view! {
                    <li>
                        <span class=format!("badge rule-{}", rule.list)>{rule.list.clone()}</span>
                        <code>{rule.rule.clone()}</code>
                        <button class="ghost" aria-label="Remove rule" on:click=move |_| {
                            leptos::task::spawn_local(async move {
                                match ipc::call::<()>("remove_rule", &json!({"id": id})).await {
                                    Ok(()) => reload(),
                                    Err(err) => ctx.say(err.message),
                                }
                            });
                        }>"Remove"</button>
                    </li>
                }
            }).collect_view()}
        </ul>
        <div class="row">
            <select prop:value=move || list.get() on:change=move |event| list.set(event_target_value(&event))>
                <option value="allow">"Allow"</option>
                <option value="ask">"Ask"</option>
                <option value="deny">"Deny"</option>
            </select>
            <input type="text" class="rule-input" placeholder="tool(pattern)" prop:value=move || text.get()
                on:input=move |event| text.set(event_target_value(&event))
                on:keydown=move |event| if event.key() == "Enter" { add() } />
            <button on:click=move |_| add()>"Add rule"</button>
        </div>
    }
}
