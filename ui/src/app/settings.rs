//! Settings: the model server and its key, the default model and sampling, the
//! models' prices, the desktop behaviour, the permission rules and MCP servers.

use cairn_protocol::desktop::commands::*;
use cairn_protocol::desktop::{
    McpServerInfo, RuleInfo, SavedEndpoint, ServerCheck, ServerView, Settings,
};
use cairn_protocol::{Dialect, RuleList};
use leptos::prelude::*;

use super::{Ctx, Screen, actions, ctx, ipc};

/// A number field's text that is not a number.
#[derive(Debug, thiserror::Error)]
#[error("{label} must be a number, not “{text}”")]
struct NotANumber {
    label: &'static str,
    text: String,
}

/// A number field's text as an optional value; empty means "server default".
fn parse_number<T: std::str::FromStr>(
    label: &'static str,
    text: &str,
) -> Result<Option<T>, NotANumber> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| NotANumber {
        label,
        text: text.to_owned(),
    })
}

fn text_of<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

#[component]
pub fn SettingsScreen() -> impl IntoView {
    let ctx = ctx();
    let draft = RwSignal::new(ctx.config.settings.get_untracked());
    let numbers = NumberFields::of(draft);
    let server = ServerWatch::new();
    server.run(draft);
    let test_server = move || server.run(draft);
    let address_typed = move |text: String| server.typed(draft, text);
    let save = move |_| match numbers.settings(draft) {
        Ok(settings) => save_settings(ctx, settings, Some(draft)),
        Err(problem) => ctx.say(problem.to_string()),
    };
    let (models, status) = (server.models, server.status);

    view! {
        <main class="settings">
            <header class="chat-head">
                <h1 class="chat-title">"Settings"</h1>
                <button class="ghost back-to-chat" on:click=move |_| ctx.nav.screen.set(Screen::Chat)>"Back to chat"</button>
            </header>
            <div class="settings-body">
                {server_section(ctx, draft, status, test_server, address_typed)}
                {model_section(ctx, draft, models, numbers.all())}
                <section class="prices-section">
                    <h2>"Prices"</h2>
                    <super::prices::Prices />
                </section>
                {desktop_section(ctx, draft)}
                <section>
                    <h2>"Permission rules"</h2>
                    <Rules />
                </section>
                <section class="mcp-section">
                    <h2>"MCP servers"</h2>
                    <McpServers />
                </section>
            </div>
            <super::Toast />
            <footer class="settings-actions">
                <button class="primary save-settings" on:click=save>"Save settings"</button>
            </footer>
        </main>
    }
}

/// The settings typed as numbers, kept as typed until saved.
#[derive(Clone, Copy)]
struct NumberFields {
    temperature: RwSignal<String>,
    top_p: RwSignal<String>,
    max_tokens: RwSignal<String>,
    context_cap: RwSignal<String>,
}

impl NumberFields {
    fn of(draft: RwSignal<Settings>) -> Self {
        draft.with_untracked(|s| Self {
            temperature: RwSignal::new(text_of(s.temperature)),
            top_p: RwSignal::new(text_of(s.top_p)),
            max_tokens: RwSignal::new(text_of(s.max_tokens)),
            context_cap: RwSignal::new(text_of(s.context_cap)),
        })
    }

    fn all(self) -> [RwSignal<String>; 4] {
        [
            self.temperature,
            self.top_p,
            self.max_tokens,
            self.context_cap,
        ]
    }

    /// The draft with the numbers as typed, or which one is not a number.
    fn settings(self, draft: RwSignal<Settings>) -> Result<Settings, NotANumber> {
        Ok(Settings {
            temperature: parse_number("Temperature", &self.temperature.get_untracked())?,
            top_p: parse_number("Top-p", &self.top_p.get_untracked())?,
            max_tokens: parse_number("The answer length limit", &self.max_tokens.get_untracked())?,
            context_cap: parse_number("The context window", &self.context_cap.get_untracked())?,
            ..draft.get_untracked()
        })
    }
}

/// The model server's check: its verdict and the models it offers.
#[derive(Clone, Copy)]
struct ServerWatch {
    models: RwSignal<Vec<String>>,
    status: RwSignal<ServerState>,
    // Each check has a number; a slower, older one must not overwrite a newer one.
    checks: ipc::Latest,
}

impl ServerWatch {
    fn new() -> Self {
        Self {
            models: RwSignal::new(Vec::new()),
            status: RwSignal::new(ServerState::Checking),
            checks: ipc::Latest::new(),
        }
    }

    fn run(self, draft: RwSignal<Settings>) {
        let (dialect, base_url) = draft.with_untracked(|s| (s.dialect, s.base_url.clone()));
        let check = self.checks.ask();
        self.status.set(ServerState::Checking);
        leptos::task::spawn_local(async move {
            let (state, found) = check_server(dialect, base_url).await;
            if let Some(found) = found {
                self.models.set(found);
            }
            if self.checks.is_latest(check) {
                self.status.set(state);
            }
        });
    }

    /// While the address is typed, the last verdict is about another address: it is
    /// withdrawn, and the new one is checked once the typing pauses.
    fn typed(self, draft: RwSignal<Settings>, text: String) {
        draft.update(|s| s.base_url = text);
        let check = self.checks.ask();
        self.status.set(ServerState::Edited);
        set_timeout(
            move || {
                if self.checks.is_latest(check) {
                    self.run(draft);
                }
            },
            std::time::Duration::from_millis(700),
        );
    }
}

/// Where the model server is and what it speaks, checked as it is typed or chosen.
fn server_section(
    ctx: Ctx,
    draft: RwSignal<Settings>,
    status: RwSignal<ServerState>,
    test_server: impl Fn() + Copy + Send + Sync + 'static,
    address_typed: impl Fn(String) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <section>
            <h2>"Model server"</h2>
            {move || {
                let overrides = ctx.config.env_overrides.get();
                (!overrides.is_empty()).then(|| view! {
                    <p class="hint env-overrides">
                        "Started with " <code>{overrides.join(" ")}</code>
                        ": at every start these replace the saved server below."
                    </p>
                })
            }}
            <div class="presets">
                {move || ctx.config.presets.get().into_iter().map(|preset| {
                    let chosen = {
                        let url = preset.base_url.clone();
                        move || draft.with(|s| s.base_url == url)
                    };
                    let (dialect, url) = (preset.dialect, preset.base_url.clone());
                    view! {
                        <button class="preset" class:chosen=chosen title=preset.start_hint.clone()
                            on:click=move |_| {
                                draft.update(|s| { s.dialect = dialect; s.base_url = url.clone(); });
                                test_server();
                            }>
                            {preset.name.clone()}
                        </button>
                    }
                }).collect_view()}
            </div>
            <label class="field">
                <span>"Address"</span>
                <input type="url" class="base-url" placeholder="http://localhost:11434"
                    prop:value=move || draft.with(|s| s.base_url.clone())
                    on:input=move |event| address_typed(event_target_value(&event)) />
            </label>
            <label class="field">
                <span>"Speaks"</span>
                <select class="dialect" prop:value=move || draft.with(|s| s.dialect.as_str())
                    on:change=move |event| {
                        if let Ok(dialect) = event_target_value(&event).parse() {
                            draft.update(|s| s.dialect = dialect);
                            test_server();
                        }
                    }>
                    <option value="ollama">"Ollama API"</option>
                    <option value="openai">"OpenAI-compatible API"</option>
                </select>
            </label>
            {move || server_status(status.get(), Callback::new(move |dialect: Dialect| {
                draft.update(|s| s.dialect = dialect);
                test_server();
            }))}
            <ApiKey base_url=Signal::derive(move || draft.with(|s| s.base_url.clone())) />
            <SavedServers draft=draft on_use=Callback::new(move |()| test_server()) />
        </section>
    }
}

/// The default model and profile, and how answers are sampled: `numbers` are the
/// temperature, top-p, answer length and context window fields, as typed.
fn model_section(
    ctx: Ctx,
    draft: RwSignal<Settings>,
    models: RwSignal<Vec<String>>,
    numbers: [RwSignal<String>; 4],
) -> impl IntoView {
    let [temperature, top_p, max_tokens, context_cap] = numbers;
    view! {
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
            <label class="field">
                <span>"Agent new chats start with"</span>
                <select class="default-agent" prop:value=move || draft.with(|s| s.default_agent.clone())
                    on:focus=move |_| super::actions::refresh_agents(ctx)
                    on:change=move |event| draft.update(|s| s.default_agent = event_target_value(&event))>
                    {move || {
                        let chosen = draft.with(|s| s.default_agent.clone());
                        let mut ids: Vec<String> = ctx.chat.agents.with(|agents| {
                            agents.iter().filter(|a| !a.hidden && a.error.is_none()).map(|a| a.id.clone()).collect()
                        });
                        if !ids.contains(&chosen) {
                            ids.insert(0, chosen);
                        }
                        ids.into_iter().map(|id| view! { <option value=id.clone()>{id.clone()}</option> }).collect_view()
                    }}
                </select>
            </label>
            <div class="grid-2">
                <NumberField label="Temperature (0–2)" hint="server's" value=temperature />
                <NumberField label="Top-p (0–1)" hint="server's" value=top_p />
                <NumberField label="Answer length limit (tokens)" hint="none" value=max_tokens />
                <NumberField label="Largest context window (Ollama, tokens)" hint="32768" value=context_cap />
            </div>
        </section>
    }
}

/// The summon shortcut, notifications, the tray and starting at login.
fn desktop_section(ctx: Ctx, draft: RwSignal<Settings>) -> impl IntoView {
    view! {
        <section>
            <h2>"Desktop"</h2>
            <label class="field">
                <span>"Summon shortcut"</span>
                <input type="text" class="shortcut" prop:value=move || draft.with(|s| s.summon_shortcut.clone())
                    on:input=move |event| draft.update(|s| s.summon_shortcut = event_target_value(&event)) />
            </label>
            {move || ctx.config.shortcut_problem.get().map(|problem| view! { <p class="notice error shortcut-problem">{problem}</p> })}
            <label class="check">
                <input type="checkbox" prop:checked=move || draft.with(|s| s.notifications)
                    on:change=move |event| draft.update(|s| s.notifications = event_target_checked(&event)) />
                "Notify me when a reply is ready or needs approval while Cairn is in the background"
            </label>
            <label class="check">
                <input type="checkbox" class="close-to-tray" prop:checked=move || draft.with(|s| s.close_to_tray)
                    prop:disabled=move || ctx.config.tray_problem.with(Option::is_some)
                    on:change=move |event| draft.update(|s| s.close_to_tray = event_target_checked(&event)) />
                "Closing the window keeps Cairn running in the tray"
            </label>
            <label class="check">
                <input type="checkbox" class="start-at-login" prop:checked=move || draft.with(|s| s.start_at_login)
                    prop:disabled=move || ctx.config.tray_problem.with(Option::is_some)
                    on:change=move |event| draft.update(|s| s.start_at_login = event_target_checked(&event)) />
                "Start Cairn when I log in, in the tray"
            </label>
            {move || ctx.config.tray_problem.get().map(|problem| view! { <p class="hint tray-problem">{problem}</p> })}
        </section>
    }
}

/// Keeps settings; on success the app uses them at once.
pub fn save_settings(ctx: Ctx, settings: Settings, draft: Option<RwSignal<Settings>>) {
    leptos::task::spawn_local(async move {
        match ipc::call(&SaveSettings { settings }).await {
            Ok(saved) => {
                if let Some(draft) = draft {
                    draft.set(saved.settings.clone());
                }
                let check = CheckServer {
                    dialect: saved.settings.dialect,
                    base_url: saved.settings.base_url.clone(),
                };
                ctx.config.settings.set(saved.settings);
                ctx.config.shortcut_problem.set(saved.shortcut_problem);
                actions::refresh_models(ctx);
                // Saved either way; an address that does not answer is said at once.
                match ipc::call(&check).await {
                    Ok(ServerCheck {
                        problem: Some(problem),
                        ..
                    }) => ctx.say(format!(
                        "Settings saved, but the server cannot be used: {problem}"
                    )),
                    _ => ctx.say("Settings saved."),
                }
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Asks the server at `base_url` for its models: how it stands, and its models when it
/// answered.
pub(super) async fn check_server(
    dialect: Dialect,
    base_url: String,
) -> (ServerState, Option<Vec<String>>) {
    match ipc::call(&CheckServer { dialect, base_url }).await {
        Ok(ServerCheck {
            models,
            problem: None,
            ..
        }) => (ServerState::Connected(models.len()), Some(models)),
        Ok(ServerCheck {
            problem: Some(problem),
            suggested_dialect,
            ..
        }) => (
            ServerState::Failed {
                problem,
                suggested_dialect,
            },
            None,
        ),
        Err(err) => (
            ServerState::Failed {
                problem: err.message,
                suggested_dialect: None,
            },
            None,
        ),
    }
}

/// How the server in the form stands.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ServerState {
    Checking,
    /// The address is being typed: the last verdict was about another one.
    Edited,
    Connected(usize),
    Failed {
        problem: String,
        suggested_dialect: Option<Dialect>,
    },
}

pub(super) fn server_status(
    state: ServerState,
    switch_dialect: Callback<Dialect>,
) -> impl IntoView {
    match state {
        ServerState::Checking => {
            view! { <p class="status muted" role="status">"Connecting…"</p> }.into_any()
        }
        ServerState::Edited => {
            view! { <p class="status muted" role="status">"Checked when you stop typing."</p> }.into_any()
        }
        ServerState::Connected(count) => view! {
            <p class="status ok-text" role="status">{format!(
                "Connected: {count} model{}.",
                if count == 1 { "" } else { "s" }
            )}</p>
        }
        .into_any(),
        ServerState::Failed {
            problem,
            suggested_dialect,
        } => view! {
            <div class="status error-text" role="alert">
                <p>{problem}</p>
                {suggested_dialect.map(|dialect| {
                    let name = dialect.label();
                    view! {
                        <p class="dialect-hint">
                            {format!("This address looks like the {name}. ")}
                            <button class="switch-dialect" on:click=move |_| switch_dialect.run(dialect)>
                                {format!("Speak the {name}")}
                            </button>
                        </p>
                    }
                })}
            </div>
        }
        .into_any(),
    }
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
            match ipc::call(&HasApiKey { base_url: url }).await {
                Ok(has) => stored.set(Some(has)),
                Err(_) => stored.set(None),
            }
        });
    });
    let save = move |_| {
        let key = typed.get_untracked();
        let url = base_url.get_untracked();
        leptos::task::spawn_local(async move {
            match ipc::call(&SetApiKey { base_url: url, key }).await {
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
            match ipc::call(&DeleteApiKey { base_url: url }).await {
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
                    Some(true) => "Stored (type to replace)",
                    _ => "Optional",
                } prop:value=move || typed.get() on:input=move |event| typed.set(event_target_value(&event)) />
                <button on:click=save disabled=move || typed.with(|t| t.trim().is_empty())>"Store in keychain"</button>
                <Show when=move || stored.get() == Some(true)>
                    <button class="ghost" on:click=remove>"Remove"</button>
                </Show>
            </div>
        </div>
    }
}

/// Servers the user named, to switch between and for agent profiles to pick
/// (`server: NAME`), each with what it says of itself.
#[component]
fn SavedServers(draft: RwSignal<Settings>, on_use: Callback<()>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let reports = server_reports(ctx());
    let add = move |_| {
        let label = name.get_untracked().trim().to_owned();
        if label.is_empty() {
            return;
        }
        draft.update(|s| {
            s.endpoints.retain(|e| e.name != label);
            s.endpoints.push(SavedEndpoint {
                name: label,
                dialect: s.dialect,
                base_url: s.base_url.clone(),
                slots: None,
            });
        });
        name.set(String::new());
    };
    view! {
        <div class="field saved-servers">
            <span>"Named servers"</span>
            <p class="hint muted">"An agent profile runs on one with "<code>"server: NAME"</code>"; "<code>"cairn servers"</code>" keeps the same list."</p>
            <ul>
                {move || draft.with(|s| s.endpoints.clone()).into_iter()
                    .map(|endpoint| saved_server(draft, endpoint, reports, on_use))
                    .collect_view()}
            </ul>
            <div class="row">
                <input type="text" placeholder="Name, to keep it" prop:value=move || name.get()
                    on:input=move |event| name.set(event_target_value(&event)) />
                <button on:click=add>"Keep"</button>
            </div>
        </div>
    }
}

/// What the named servers say of themselves: asked once the list is shown, and again
/// each time a changed list is saved (a server just kept says what it is without
/// reopening Settings); not on every keystroke: each server is a round trip, and a
/// machine that is off takes a few seconds to say nothing.
fn server_reports(ctx: Ctx) -> RwSignal<Vec<ServerView>> {
    let reports = RwSignal::new(Vec::<ServerView>::new());
    let asked = ipc::Latest::new();
    // Any change of the settings wakes this; only a changed server list asks.
    Effect::new(move |before: Option<Vec<SavedEndpoint>>| {
        let saved = ctx.config.settings.with(|s| s.endpoints.clone());
        if before.as_ref() == Some(&saved) {
            return saved;
        }
        let this = asked.ask();
        leptos::task::spawn_local(async move {
            let found = ipc::call(&ServerReports {}).await;
            if let Ok(found) = found
                && asked.is_latest(this)
            {
                reports.set(found);
            }
        });
        saved
    });
    reports
}

/// One named server: its address, what it said of itself, Use and Remove.
fn saved_server(
    draft: RwSignal<Settings>,
    endpoint: SavedEndpoint,
    reports: RwSignal<Vec<ServerView>>,
    on_use: Callback<()>,
) -> impl IntoView {
    let said = {
        let name = endpoint.name.clone();
        move || {
            reports.with(|reports| {
                reports
                    .iter()
                    .find(|report| report.server.name == name)
                    .map(server_facts)
            })
        }
    };
    let used = endpoint.clone();
    let removed = endpoint.name.clone();
    view! {
        <li>
            <span>{endpoint.name}</span>
            <span class="muted">{endpoint.base_url}</span>
            <span class="server-facts muted">{said}</span>
            <button class="ghost" on:click=move |_| {
                draft.update(|s| { s.dialect = used.dialect; s.base_url = used.base_url.clone(); });
                on_use.run(());
            }>"Use"</button>
            <button class="ghost" on:click=move |_| draft.update(|s| s.endpoints.retain(|e| e.name != removed))>"Remove"</button>
        </li>
    }
}

/// What a named server said of itself, in a few words: "llama.cpp server · 4 slots ·
/// 8k window", or that it does not answer.
fn server_facts(report: &ServerView) -> String {
    let slots = if report.slots == 1 {
        "1 slot".to_owned()
    } else {
        format!("{} slots", report.slots)
    };
    match (&report.kind, &report.error) {
        (Some(kind), _) => {
            let mut parts = vec![kind.clone(), slots];
            if let Some(window) = report.window {
                parts.push(format!("{} window", crate::format::context_size(window)));
            }
            parts.join(" · ")
        }
        (None, Some(_)) => format!("not answering · {slots}"),
        (None, None) => slots,
    }
}

/// The persistent allow / ask / deny rules (Claude Code's syntax).
#[component]
fn Rules() -> impl IntoView {
    let ctx = ctx();
    let rules = RwSignal::new(Vec::<RuleInfo>::new());
    let list = RwSignal::new(RuleList::Allow);
    let text = RwSignal::new(String::new());
    let reload = move || {
        leptos::task::spawn_local(async move {
            match ipc::call(&ListRules {}).await {
                Ok(found) => rules.set(found),
                Err(err) => ctx.say(err.message),
            }
        });
    };
    reload();
    let add = move || {
        let rule = AddRule {
            list: list.get_untracked(),
            rule: text.get_untracked(),
        };
        leptos::task::spawn_local(async move {
            match ipc::call(&rule).await {
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
                        <span class=format!("badge rule-{}", rule.list)>{rule.list.as_str()}</span>
                        <code>{rule.rule.clone()}</code>
                        <button class="ghost" aria-label="Remove rule" on:click=move |_| {
                            leptos::task::spawn_local(async move {
                                match ipc::call(&RemoveRule { id }).await {
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
            <select aria-label="What the rule does" prop:value=move || list.get().as_str() on:change=move |event| {
                if let Ok(chosen) = event_target_value(&event).parse() {
                    list.set(chosen);
                }
            }>
                <option value="allow">"Allow"</option>
                <option value="ask">"Ask"</option>
                <option value="deny">"Deny"</option>
            </select>
            <input type="text" class="rule-input" aria-label="Rule" placeholder="tool(pattern)" prop:value=move || text.get()
                on:input=move |event| text.set(event_target_value(&event))
                on:keydown=move |event| if event.key() == "Enter" { add() } />
            <button on:click=move |_| add()>"Add rule"</button>
        </div>
    }
}

/// The servers of the MCP servers file: allowed to start or not, trusted or not (a
/// trusted server's read-only tools run without asking in default mode), and how
/// each one stands.
#[component]
fn McpServers() -> impl IntoView {
    let ctx = ctx();
    let servers = RwSignal::new(Vec::<McpServerInfo>::new());
    leptos::task::spawn_local(async move {
        match ipc::call(&ListMcpServers {}).await {
            Ok(found) => servers.set(found),
            Err(err) => ctx.say(err.message),
        }
    });
    let set = move |name: String, allowed: Option<bool>, trusted: Option<bool>| {
        let change = SetMcpServer {
            name,
            allowed,
            trusted,
        };
        leptos::task::spawn_local(async move {
            match ipc::call(&change).await {
                Ok(found) => servers.set(found),
                Err(err) => ctx.say(err.message),
            }
        });
    };
    view! {
        <p class="muted">"From " <code>"mcp.json"</code> " beside the database (or "
            <code>"CAIRN_MCP_CONFIG"</code> "). Their tools ask before they run unless the server is trusted and marks a tool read-only."</p>
        <Show when=move || servers.with(Vec::is_empty)>
            <p class="muted">"No MCP servers are configured."</p>
        </Show>
        <ul class="mcp-servers">
            {move || servers.get().into_iter().map(|server| {
                let status = crate::format::mcp_status(&server);
                let failed = server.error.is_some();
                let (allow_name, trust_name) = (server.name.clone(), server.name.clone());
                view! {
                    <li class="mcp-server" data-server=server.name.clone()>
                        <div class="mcp-head">
                            <strong>{server.name.clone()}</strong>
                            <code class="muted">{server.target.clone()}</code>
                        </div>
                        <label class="check">
                            <input type="checkbox" class="mcp-allowed" prop:checked=server.allowed
                                on:change=move |event| set(allow_name.clone(), Some(event_target_checked(&event)), None) />
                            "Start it"
                        </label>
                        <label class="check">
                            <input type="checkbox" class="mcp-trusted" prop:checked=server.trusted
                                on:change=move |event| set(trust_name.clone(), None, Some(event_target_checked(&event))) />
                            "Trust its read-only marks"
                        </label>
                        <p class=if failed { "mcp-status error-text" } else { "mcp-status muted" }>{status}</p>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}
