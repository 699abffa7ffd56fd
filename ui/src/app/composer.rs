//! The composer: the message box, and in its footer the permission mode, the
//! model, the workspace folder, and Send / Stop.

use cairn_protocol::PermissionMode;
use cairn_protocol::desktop::ContextInfo;
use cairn_protocol::desktop::commands::{ModelContext, PickWorkspace};
use leptos::prelude::*;

use super::{actions, ctx, ipc};
use crate::{format, slash};

const MODES: [PermissionMode; 3] = [
    PermissionMode::Plan,
    PermissionMode::Default,
    PermissionMode::Auto,
];

#[component]
pub fn Composer() -> impl IntoView {
    let ctx = ctx();
    let input: NodeRef<leptos::html::Textarea> = NodeRef::new();
    Effect::new(move |_| {
        ctx.nav.focus.track();
        if let Some(area) = input.get() {
            // Focusing runs the focus handlers at once, inside this effect: what they
            // read must not become what this effect (and so the focus) follows.
            untrack(|| {
                let _ = area.focus();
            });
        }
    });
    let running = move || ctx.current_id().is_some_and(|id| ctx.is_running(&id));
    let list = SlashList::new();
    let on_key = move |event: leptos::ev::KeyboardEvent| {
        if list.on_key(&event) {
            return;
        }
        // Enter sends; Shift+Enter (and Enter while an input method composes) is a newline.
        if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
            event.prevent_default();
            if !running() {
                actions::submit(ctx);
            }
        }
    };
    let rows = move || {
        ctx.chat
            .composer
            .with(|text| text.lines().count().clamp(1, 10) + usize::from(text.ends_with('\n')))
    };
    view! {
        <footer class="composer">
            {list.view()}
            <textarea
                node_ref=input
                class="composer-input"
                aria-label="Message"
                // The command list is read through the box: arrows move in it while the
                // typing goes on, so a screen reader hears the command the arrow is on.
                aria-autocomplete="list"
                aria-controls=move || list.is_open().then_some(SlashList::ID)
                aria-activedescendant=move || list.active_id()
                placeholder="Message Cairn (/ for commands)"
                title="Enter sends; Shift+Enter starts a new line; / lists the commands"
                rows=rows
                prop:value=move || ctx.chat.composer.get()
                on:input=move |event| {
                    ctx.chat.composer.set(event_target_value(&event));
                    list.typed();
                }
                on:keydown=on_key
                on:focus=move |_| actions::warm_prompt(ctx)
            ></textarea>
            <div class="composer-bar">
                // The controls wrap among themselves; Send keeps its place at the end of
                // the first line however long the model's hint grows.
                <div class="composer-controls">
                    <AgentChip />
                    <ModeSelect />
                    <ModelSelect />
                    <WorkspacePicker />
                </div>
                {move || if running() {
                    view! { <button class="danger stop" title="Stop (Esc)" on:click=move |_| actions::stop(ctx)>"Stop"</button> }.into_any()
                } else {
                    view! {
                        <button class="primary send" on:click=move |_| actions::submit(ctx)
                            disabled=move || ctx.chat.composer.with(|text| text.trim().is_empty())>"Send"</button>
                    }.into_any()
                }}
            </div>
        </footer>
    }
}

/// The commands offered while one is typed (`/`, `/mo`): arrows choose, Tab or a
/// click completes, Enter completes and runs one that takes nothing more, Esc puts
/// the list away until the text changes.
#[derive(Clone, Copy)]
struct SlashList {
    selected: RwSignal<usize>,
    dismissed: RwSignal<bool>,
    shown: Memo<Vec<slash::Command>>,
}

impl SlashList {
    fn new() -> Self {
        let ctx = ctx();
        let dismissed = RwSignal::new(false);
        Self {
            selected: RwSignal::new(0),
            dismissed,
            shown: Memo::new(move |_| {
                if dismissed.get() {
                    return Vec::new();
                }
                ctx.chat.composer.with(|text| slash::suggestions(text))
            }),
        }
    }

    const ID: &'static str = "slash-list";

    fn item_id(at: usize) -> String {
        format!("slash-item-{at}")
    }

    fn is_open(self) -> bool {
        self.shown.with(|shown| !shown.is_empty())
    }

    /// The command the arrows are on, while the list is shown.
    fn active_id(self) -> Option<String> {
        self.is_open().then(|| Self::item_id(self.selected.get()))
    }

    /// Scrolls the list so the command the arrows are on is in sight: where the list is
    /// shorter than its commands (a small window), the arrows reach every one.
    fn reveal_selected(self) {
        let item = web_sys::window()
            .and_then(|window| window.document())
            .and_then(|document| {
                document.get_element_by_id(&Self::item_id(self.selected.get_untracked()))
            });
        if let Some(item) = item {
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_block(web_sys::ScrollLogicalPosition::Nearest);
            item.scroll_into_view_with_scroll_into_view_options(&options);
        }
    }

    fn typed(self) {
        self.selected.set(0);
        self.dismissed.set(false);
    }

    /// Puts `command` in the composer, and runs it if it takes nothing more and `run`.
    fn choose(self, command: slash::Command, run: bool) {
        let ctx = ctx();
        self.dismissed.set(true);
        if command.arguments.is_empty() && run {
            ctx.chat.composer.set(format!("/{}", command.name));
            actions::submit(ctx);
        } else {
            ctx.chat.composer.set(format!("/{} ", command.name));
        }
        ctx.nav.focus.update(|n| *n += 1);
    }

    /// Handles the keys the list answers to while it is shown; whether it did.
    fn on_key(self, event: &leptos::ev::KeyboardEvent) -> bool {
        let shown = self.shown.get_untracked();
        if shown.is_empty() || event.is_composing() {
            return false;
        }
        let last = shown.len() - 1;
        match event.key().as_str() {
            "ArrowDown" => self
                .selected
                .update(|at| *at = if *at >= last { 0 } else { *at + 1 }),
            "ArrowUp" => self
                .selected
                .update(|at| *at = if *at == 0 { last } else { *at - 1 }),
            "Escape" => self.dismissed.set(true),
            key @ ("Tab" | "Enter") if !event.shift_key() => {
                let at = self.selected.get_untracked().min(last);
                self.choose(shown[at], key == "Enter");
            }
            _ => return false,
        }
        if matches!(event.key().as_str(), "ArrowDown" | "ArrowUp") {
            self.reveal_selected();
        }
        event.prevent_default();
        // Esc here closes the list: it must not also stop a running turn.
        event.stop_propagation();
        true
    }

    fn view(self) -> impl IntoView {
        let list = self;
        move || {
            let shown = list.shown.get();
            (!shown.is_empty()).then(|| {
                let items = shown
                    .into_iter()
                    .enumerate()
                    .map(|(at, command)| {
                        view! {
                            <li role="option" class="slash-item" id=Self::item_id(at)
                                class:selected=move || list.selected.get() == at
                                aria-selected=move || (list.selected.get() == at).to_string()
                                // Before the textarea loses the focus to the click.
                                on:mousedown=move |event| {
                                    event.prevent_default();
                                    list.choose(command, false);
                                }>
                                <span class="slash-name">{format!("/{}", command.name)}</span>
                                <span class="slash-args">{command.arguments}</span>
                                <span class="slash-summary">{command.summary}</span>
                            </li>
                        }
                    })
                    .collect_view();
                view! { <ul class="slash-list" id=Self::ID role="listbox" aria-label="Commands">{items}</ul> }
            })
        }
    }
}

/// The agent the chat answers as: a chip that opens a list of the agents to choose.
#[component]
fn AgentChip() -> impl IntoView {
    let ctx = ctx();
    let open = ctx.nav.agent_menu;
    let toggle = move |_| {
        if !open.get_untracked() {
            actions::refresh_agents(ctx);
        }
        open.update(|open| *open = !*open);
    };
    let choices = move || {
        let current = ctx.agent();
        ctx.chat.agents.with(|agents| {
            agents
                .iter()
                .filter(|a| !a.hidden && a.error.is_none())
                .map(|a| (a.id.clone(), a.description.clone(), a.id == current))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <div class="agent-wrap">
            <button class="agent-chip" aria-label=move || format!("Agent: {}", ctx.agent()) aria-haspopup="menu"
                aria-expanded=move || open.get().to_string()
                title="The agent that answers; click to choose another (/agents lists them)"
                on:click=toggle>{move || ctx.agent()}</button>
            <Show when=move || open.get()>
                <div class="agent-menu" role="menu">
                    <For each=choices key=|(id, _, current)| (id.clone(), *current) let:choice>
                        <button class="ghost agent-choice" class:current=choice.2
                            role="menuitemradio" aria-checked=choice.2.to_string()
                            title=choice.1.clone()
                            on:click={
                                let id = choice.0.clone();
                                move |_| actions::set_agent(ctx, id.clone())
                            }>
                            <span class="agent-id">{choice.0.clone()}</span>
                            <span class="agent-description">{choice.1.clone()}</span>
                        </button>
                    </For>
                </div>
            </Show>
        </div>
    }
}

#[component]
fn ModeSelect() -> impl IntoView {
    let ctx = ctx();
    let mode = move || {
        ctx.chats
            .current
            .with(|thread| thread.as_ref().map(|t| t.mode))
            .unwrap_or_else(|| ctx.chat.draft.with(|draft| draft.mode))
    };
    view! {
        <label class="select-wrap" title=move || format::mode_hint(mode())>
            <span class="select-label">"Mode"</span>
            <select
                class="mode-select"
                aria-label="Permission mode"
                prop:value=move || mode().as_str()
                on:change=move |event| {
                    if let Ok(mode) = event_target_value(&event).parse::<PermissionMode>() {
                        actions::set_mode(ctx, mode);
                    }
                }
            >
                {MODES.iter().map(|mode| view! {
                    <option value=mode.as_str() title=format::mode_hint(*mode)>{format::mode_label(*mode)}</option>
                }).collect_view()}
            </select>
        </label>
    }
}

#[component]
fn ModelSelect() -> impl IntoView {
    let ctx = ctx();
    let chosen = move || {
        ctx.chat
            .model
            .get()
            .or_else(|| ctx.config.settings.with(|s| s.model.clone()))
    };
    let options = move || {
        let mut models = ctx.chat.models.get();
        if let Some(model) = chosen()
            && !models.contains(&model)
        {
            models.insert(0, model);
        }
        models
    };
    view! {
        <label class="select-wrap">
            <span class="select-label">"Model"</span>
            <select
                class="model-select"
                aria-label="Model"
                prop:value=move || chosen().unwrap_or_default()
                on:focus=move |_| actions::refresh_models(ctx)
                on:change=move |event| {
                    let model = event_target_value(&event);
                    ctx.chat.model.set((!model.is_empty()).then_some(model));
                }
            >
                <Show when=move || chosen().is_none()>
                    <option value="">{move || if ctx.chat.models.with(Vec::is_empty) { "No models found" } else { "Choose a model" }}</option>
                </Show>
                <For each=options key=|model| model.clone() let:model>
                    <option value=model.clone()>{model.clone()}</option>
                </For>
            </select>
            <ContextHint />
        </label>
    }
}

/// The chosen model's context window beside the picker, and whether its tools are
/// shown on demand to fit it: what a 4k-token local model can take, said up front.
#[component]
fn ContextHint() -> impl IntoView {
    let ctx = ctx();
    let info = RwSignal::new(None::<ContextInfo>);
    // Answers can come back out of order: only the latest question's answer shows.
    let asked = ipc::Latest::new();
    Effect::new(move |_| {
        // `current_id` tracks the whole thread: a change of its mode or folder asks again.
        let question = ModelContext {
            thread_id: ctx.current_id(),
            model: ctx.chat.model.get(),
            mode: ctx.chat.draft.with(|draft| draft.mode),
            workspace: ctx.chat.draft.with(|draft| draft.workspace.clone()),
        };
        ctx.config.settings.track();
        let this = asked.ask();
        leptos::task::spawn_local(async move {
            // No server or no model yet: the picker already says so.
            let answer = ipc::call(&question).await.ok();
            if asked.is_latest(this) {
                let known = answer.as_ref().is_some_and(|info| info.tokens.is_some());
                info.set(answer);
                // A chat opened, or its model, mode or folder changed: a local server
                // can read the new prompt while the question is written.
                if known {
                    actions::warm_prompt(ctx);
                }
            }
        });
    });
    let text = move || info.with(|info| info.as_ref().and_then(format::context_label));
    let title = move || {
        info.with(|info| info.as_ref().map(format::context_hint))
            .unwrap_or_default()
    };
    view! {
        <Show when=move || text().is_some()>
            <span class="context-hint muted" title=title>{text}</span>
        </Show>
    }
}

#[component]
fn WorkspacePicker() -> impl IntoView {
    let ctx = ctx();
    let open = RwSignal::new(false);
    let typed = RwSignal::new(String::new());
    let folder = move || {
        ctx.chats
            .current
            .with(|thread| thread.as_ref().map(|t| t.workspace.clone()))
            .unwrap_or_else(|| ctx.chat.draft.with(|draft| draft.workspace.clone()))
    };
    let label = move || match folder() {
        Some(path) => path
            .rsplit('/')
            .find(|part| !part.is_empty())
            .unwrap_or("/")
            .to_owned(),
        None => "No folder".to_owned(),
    };
    // The popover closes on a choice, and the keys go back to the message being written
    // (left on the closed popover's button they would fall to the page).
    let chosen = move |path: String| {
        open.set(false);
        actions::set_workspace(ctx, Some(path));
        ctx.nav.focus.update(|n| *n += 1);
    };
    let browse = move |_| {
        leptos::task::spawn_local(async move {
            match ipc::call(&PickWorkspace {}).await {
                Ok(Some(path)) => chosen(path),
                Ok(None) => {}
                Err(err) => ctx.say(err.message),
            }
        });
    };
    let use_typed = move || {
        let path = typed.get_untracked();
        if !path.trim().is_empty() {
            chosen(path);
        }
    };
    view! {
        <div class="workspace">
            <button class="workspace-button" title=move || folder().unwrap_or_else(|| "Choose the folder this chat works in".into())
                on:click=move |_| {
                    typed.set(folder().unwrap_or_default());
                    open.update(|o| *o = !*o);
                }>
                <span class="muted">"Folder: "</span> {label}
            </button>
            <Show when=move || open.get()>
                <div class="popover" role="dialog" aria-label="Workspace folder">
                    <p class="muted">"File and command tools work only inside this folder."</p>
                    <input
                        class="workspace-path"
                        type="text"
                        aria-label="Folder path"
                        placeholder="/home/you/project"
                        prop:value=move || typed.get()
                        on:input=move |event| typed.set(event_target_value(&event))
                        on:keydown=move |event| if event.key() == "Enter" { use_typed() }
                    />
                    <div class="row">
                        <button class="primary workspace-use" on:click=move |_| use_typed()>"Use"</button>
                        <button on:click=browse>"Browse…"</button>
                        <Show when=move || folder().is_some()>
                            <button class="ghost" on:click=move |_| {
                                open.set(false);
                                actions::set_workspace(ctx, None);
                            }>"No folder"</button>
                        </Show>
                    </div>
                </div>
            </Show>
        </div>
    }
}
