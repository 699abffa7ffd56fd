//! The Leptos view: the sidebar, the thread, the composer, settings and first run,
//! over one shared [`Ctx`] of signals. State logic lives in the host-tested modules
//! ([`crate::turn`], [`crate::thread`], [`crate::slash`]); this layer draws it and
//! talks to the core through [`ipc`].

mod actions;
mod cards;
mod composer;
mod first_run;
mod ipc;
mod settings;
mod sidebar;
mod thread_view;

use cairn_protocol::desktop::commands::{QuitApp, UiReady};
use cairn_protocol::desktop::{PendingApproval, ProviderPreset, Settings, ShellEvent, Startup};
use cairn_protocol::{PermissionMode, ThreadInfo};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;

use crate::turn::TurnView;

/// Which screen the main area shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Loading,
    FirstRun,
    Chat,
    Settings,
}

/// One line of the thread view.
#[derive(Debug, Clone)]
pub enum EntryView {
    User {
        id: String,
        text: String,
    },
    Assistant {
        id: String,
        turn: ArcRwSignal<TurnView>,
    },
    /// Said by the app (slash command output); never stored.
    Notice {
        id: String,
        text: String,
    },
}

impl EntryView {
    pub fn id(&self) -> String {
        match self {
            Self::User { id, .. } | Self::Assistant { id, .. } | Self::Notice { id, .. } => {
                id.clone()
            }
        }
    }
}

/// The options of a chat that has not started yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    pub mode: PermissionMode,
    pub workspace: Option<String>,
}

/// Everything the screens share.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub screen: RwSignal<Screen>,
    pub settings: RwSignal<Settings>,
    pub presets: RwSignal<Vec<ProviderPreset>>,
    pub threads: RwSignal<Vec<ThreadInfo>>,
    pub running: RwSignal<Vec<String>>,
    pub pending: RwSignal<Vec<PendingApproval>>,
    /// The open thread; `None` is a new chat.
    pub current: RwSignal<Option<ThreadInfo>>,
    pub entries: RwSignal<Vec<EntryView>>,
    pub draft: RwSignal<Draft>,
    /// The model picked for the next message (the thread's or the default if none).
    pub model: RwSignal<Option<String>>,
    pub models: RwSignal<Vec<String>>,
    pub composer: RwSignal<String>,
    /// Bumped to put the cursor in the composer.
    pub focus: RwSignal<u32>,
    /// What the app says for a moment (an action's outcome, a failure), and the
    /// number that tells one saying from the next.
    pub toast: RwSignal<Option<(u64, String)>>,
    pub shortcut_problem: RwSignal<Option<String>>,
    /// Why closing the window quits instead of hiding it (no tray on this desktop).
    pub tray_problem: RwSignal<Option<String>>,
    /// Bumped on every thread switch, so a slow load never overwrites a newer one.
    pub generation: RwSignal<u64>,
    pub sidebar_open: RwSignal<bool>,
    /// In a narrow window (small, or zoomed in) the chats cover the thread: shown only
    /// when asked for, and put away once a chat is chosen.
    pub narrow_sidebar: RwSignal<bool>,
    /// Bumped on every streamed event, so the view can follow the stream.
    pub stream_tick: RwSignal<u64>,
    /// The user asked to quit while turns run: the question is open.
    pub confirm_quit: RwSignal<bool>,
    /// The chat whose `⋯` menu is open; Esc or a click elsewhere closes it.
    pub open_menu: RwSignal<Option<String>>,
    /// The folder a chat was last given: a new chat starts there.
    pub last_workspace: RwSignal<Option<String>>,
    /// `CAIRN_*` variables that replaced the saved server at start (`NAME=value`).
    pub env_overrides: RwSignal<Vec<String>>,
}

impl Ctx {
    fn new() -> Self {
        Self {
            screen: RwSignal::new(Screen::Loading),
            settings: RwSignal::new(Settings::default()),
            presets: RwSignal::new(Vec::new()),
            threads: RwSignal::new(Vec::new()),
            running: RwSignal::new(Vec::new()),
            pending: RwSignal::new(Vec::new()),
            current: RwSignal::new(None),
            entries: RwSignal::new(Vec::new()),
            draft: RwSignal::new(Draft::default()),
            model: RwSignal::new(None),
            models: RwSignal::new(Vec::new()),
            composer: RwSignal::new(String::new()),
            focus: RwSignal::new(0),
            toast: RwSignal::new(None),
            shortcut_problem: RwSignal::new(None),
            tray_problem: RwSignal::new(None),
            generation: RwSignal::new(0),
            sidebar_open: RwSignal::new(true),
            narrow_sidebar: RwSignal::new(false),
            stream_tick: RwSignal::new(0),
            confirm_quit: RwSignal::new(false),
            open_menu: RwSignal::new(None),
            last_workspace: RwSignal::new(None),
            env_overrides: RwSignal::new(Vec::new()),
        }
    }

    pub fn current_id(&self) -> Option<String> {
        self.current
            .with(|current| current.as_ref().map(|thread| thread.id.clone()))
    }

    pub fn is_running(&self, thread_id: &str) -> bool {
        self.running
            .with(|running| running.iter().any(|id| id == thread_id))
    }

    /// Says `message` in the toast, which goes away by itself after a while (longer
    /// for longer messages).
    pub fn say(&self, message: impl Into<String>) {
        let message = message.into();
        let shown_for = toast_time(&message);
        let toast = self.toast;
        let id = toast.with_untracked(|now| now.as_ref().map_or(0, |(id, _)| id + 1));
        toast.set(Some((id, message)));
        set_timeout(
            move || {
                if toast.with_untracked(|now| now.as_ref().is_some_and(|(now, _)| *now == id)) {
                    toast.set(None);
                }
            },
            shown_for,
        );
    }
}

/// How long a toast stays: time to read it, 4 to 12 seconds.
fn toast_time(message: &str) -> std::time::Duration {
    let chars = u64::try_from(message.chars().count()).unwrap_or(u64::MAX);
    std::time::Duration::from_millis(
        4_000u64
            .saturating_add(chars.saturating_mul(60))
            .min(12_000),
    )
}

pub fn ctx() -> Ctx {
    expect_context::<Ctx>()
}

/// Milliseconds since the epoch, the view's clock.
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

#[component]
fn App() -> impl IntoView {
    let ctx = Ctx::new();
    provide_context(ctx);
    leptos::task::spawn_local(startup(ctx));
    actions::keyboard_shortcuts(ctx);
    view! {
        <div class="app" class:sidebar-closed=move || !ctx.sidebar_open.get()
            class:narrow-sidebar=move || ctx.narrow_sidebar.get()>
            {move || match ctx.screen.get() {
                Screen::Loading => view! { <div class="loading">"Starting Cairn…"</div> }.into_any(),
                Screen::FirstRun => view! { <first_run::FirstRun /> }.into_any(),
                Screen::Settings => view! { <sidebar::Sidebar /> <settings::SettingsScreen /> }.into_any(),
                Screen::Chat => view! { <sidebar::Sidebar /> <thread_view::ChatScreen /> }.into_any(),
            }}
            // Behind the chats while they cover a narrow window: a click beside them closes them.
            <div class="backdrop" on:click=move |_| ctx.narrow_sidebar.set(false)></div>
            <QuitDialog />
        </div>
    }
}

/// The toast, in the flow of the screen above its bottom bar: it takes room of its
/// own instead of covering a control.
#[component]
pub fn Toast() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.toast.get().map(|(_, message)| {
            view! {
                <div class="toast" role="alert">
                    <span>{message}</span>
                    <button class="ghost" aria-label="Dismiss" on:click=move |_| ctx.toast.set(None)>"×"</button>
                </div>
            }
        })
    }
}

/// Quit while replies are being written: the count follows the turns as they end.
#[component]
fn QuitDialog() -> impl IntoView {
    let ctx = ctx();
    let text = move || match ctx.running.with(Vec::len) {
        0 => "The replies have finished; nothing is lost by quitting now.".to_owned(),
        1 => "A reply is still being written (1 running). Quitting stops it; what it wrote \
              so far is kept."
            .to_owned(),
        n => format!(
            "Replies are still being written ({n} running). Quitting stops them; what they \
             wrote so far is kept."
        ),
    };
    let quit = move |_| {
        ctx.confirm_quit.set(false);
        leptos::task::spawn_local(async move {
            if let Err(err) = ipc::call(&QuitApp {}).await {
                ctx.say(err.message);
            }
        });
    };
    view! {
        <Show when=move || ctx.confirm_quit.get()>
            <div class="modal-backdrop">
                <div class="modal quit-dialog" role="alertdialog" aria-label="Quit Cairn?">
                    <h2>"Quit Cairn?"</h2>
                    <p class="quit-text">{text}</p>
                    <div class="row">
                        <button class="danger quit-confirm" on:click=quit>"Quit"</button>
                        <button class="quit-cancel" on:click=move |_| ctx.confirm_quit.set(false)>"Keep running"</button>
                    </div>
                </div>
            </div>
        </Show>
    }
}

async fn startup(ctx: Ctx) {
    let channel = ipc::channel(move |event: ShellEvent| shell_event(ctx, event));
    let started: Result<Startup, _> = ipc::call_streaming(&UiReady {}, &channel).await;
    match started {
        Ok(startup) => {
            let first_run = !startup.settings.first_run_done;
            ctx.settings.set(startup.settings);
            ctx.presets.set(startup.presets);
            ctx.threads.set(startup.threads);
            ctx.running.set(startup.running);
            ctx.pending.set(startup.pending);
            ctx.shortcut_problem.set(startup.shortcut_problem);
            ctx.tray_problem.set(startup.tray_problem);
            ctx.draft
                .update(|draft| draft.workspace.clone_from(&startup.last_workspace));
            ctx.last_workspace.set(startup.last_workspace);
            ctx.env_overrides.set(startup.env_overrides);
            ctx.screen.set(if first_run {
                Screen::FirstRun
            } else {
                Screen::Chat
            });
            ctx.focus.update(|n| *n += 1);
            mark_ready();
            actions::refresh_models(ctx);
        }
        Err(err) => {
            ctx.screen.set(Screen::Chat);
            ctx.say(format!("Cairn could not start: {}", err.message));
        }
    }
}

/// Marks the moment the first screen is painted (`performance` mark `cairn:ready`):
/// the desktop benchmark measures cold start up to it.
fn mark_ready() {
    request_animation_frame(|| {
        if let Some(performance) = window().performance() {
            let _ = performance.mark("cairn:ready");
        }
    });
}

fn shell_event(ctx: Ctx, event: ShellEvent) {
    match event {
        ShellEvent::OpenThread { thread_id } => {
            ctx.screen.set(Screen::Chat);
            actions::open_thread(ctx, thread_id);
        }
        ShellEvent::FocusComposer => {
            if ctx.screen.get_untracked() == Screen::Settings {
                ctx.screen.set(Screen::Chat);
            }
            ctx.focus.update(|n| *n += 1);
        }
        ShellEvent::NewChat => {
            ctx.screen.set(Screen::Chat);
            actions::new_chat(ctx);
        }
        ShellEvent::Running { threads } => {
            ctx.running.set(threads);
            actions::refresh_threads(ctx);
        }
        ShellEvent::Pending { approvals } => ctx.pending.set(approvals),
        ShellEvent::Answered { approval_id } => ctx.entries.with_untracked(|entries| {
            for entry in entries {
                if let EntryView::Assistant { turn, .. } = entry {
                    turn.update(|view| view.answered(&approval_id));
                }
            }
        }),
        ShellEvent::Notice { message } => ctx.say(message),
        ShellEvent::ConfirmQuit => ctx.confirm_quit.set(true),
    }
}
