//! The Leptos view: the sidebar, the thread, the composer, settings and first run,
//! over one shared [`Ctx`] of signals (split by concern in [`ctx`]). State logic lives in the host-tested modules
//! ([`crate::turn`], [`crate::thread`], [`crate::slash`]); this layer draws it and
//! talks to the core through [`ipc`].

mod actions;
mod cards;
mod composer;
mod copy;
mod ctx;
mod diff;
mod first_run;
mod ipc;
mod prices;
mod restore;
mod settings;
mod sidebar;
mod thread_view;

use cairn_protocol::desktop::commands::{QuitApp, UiReady};
use cairn_protocol::desktop::{ShellEvent, Startup};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;

pub use ctx::{Ctx, Draft, EntryView, HEAD_MENU, Screen, ctx};

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
    // Changes only when the screen does: opening a chat sets the chat screen again, and
    // drawing it anew would throw away where the chats list and the thread were
    // scrolled to.
    let screen = Memo::new(move |_| ctx.nav.screen.get());
    view! {
        <div class="app" class:sidebar-closed=move || !ctx.nav.sidebar_open.get()
            class:narrow-sidebar=move || ctx.nav.narrow_sidebar.get()>
            {move || match screen.get() {
                Screen::Loading => view! { <div class="loading">"Starting Cairn…"</div> }.into_any(),
                Screen::FirstRun => view! { <first_run::FirstRun /> }.into_any(),
                Screen::Settings => view! { <sidebar::Sidebar /> <settings::SettingsScreen /> }.into_any(),
                Screen::Chat => view! { <sidebar::Sidebar /> <thread_view::ChatScreen /> }.into_any(),
            }}
            // Behind the chats while they cover a narrow window: a click beside them closes them.
            <div class="backdrop" on:click=move |_| ctx.nav.narrow_sidebar.set(false)></div>
            <QuitDialog />
            // Present from the start: a live region only speaks of changes it saw.
            <div class="sr-only announcer" role="status" aria-live="polite" aria-atomic="true">
                {move || ctx.nav.announce.get()}
            </div>
        </div>
    }
}

/// The toast, in the flow of the screen above its bottom bar: it takes room of its
/// own instead of covering a control.
#[component]
pub fn Toast() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.nav.toast.get().map(|(_, message)| {
            view! {
                <div class="toast" role="alert">
                    <span>{message}</span>
                    <button class="ghost" aria-label="Dismiss" on:click=move |_| ctx.nav.toast.set(None)>"×"</button>
                </div>
            }
        })
    }
}

/// Quit while replies are being written: the count follows the turns as they end.
#[component]
fn QuitDialog() -> impl IntoView {
    let ctx = ctx();
    let text = move || match ctx.chats.running.with(Vec::len) {
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
        ctx.nav.confirm_quit.set(false);
        leptos::task::spawn_local(async move {
            if let Err(err) = ipc::call(&QuitApp {}).await {
                ctx.say(err.message);
            }
        });
    };
    view! {
        <Show when=move || ctx.nav.confirm_quit.get()>
            <div class="modal-backdrop">
                <div class="modal quit-dialog" role="alertdialog" aria-label="Quit Cairn?">
                    <h2>"Quit Cairn?"</h2>
                    <p class="quit-text">{text}</p>
                    <div class="row">
                        <button class="danger quit-confirm" on:click=quit>"Quit"</button>
                        <button class="quit-cancel" on:click=move |_| ctx.nav.confirm_quit.set(false)>"Keep running"</button>
                    </div>
                </div>
            </div>
        </Show>
    }
}

async fn startup(ctx: Ctx) {
    let channel = ipc::shell_channel(move |event| shell_event(ctx, event));
    let started: Result<Startup, _> = ipc::call_streaming(&UiReady {}, &channel).await;
    match started {
        Ok(startup) => {
            let first_run = !startup.settings.first_run_done;
            ctx.config.settings.set(startup.settings);
            ctx.config.presets.set(startup.presets);
            ctx.chats.threads.set(startup.threads);
            ctx.chats.running.set(startup.running);
            ctx.chats.pending.set(startup.pending);
            ctx.config.shortcut_problem.set(startup.shortcut_problem);
            ctx.config.tray_problem.set(startup.tray_problem);
            ctx.chat
                .draft
                .update(|draft| draft.workspace.clone_from(&startup.last_workspace));
            ctx.chat.last_workspace.set(startup.last_workspace);
            ctx.config.env_overrides.set(startup.env_overrides);
            ctx.nav.screen.set(if first_run {
                Screen::FirstRun
            } else {
                Screen::Chat
            });
            ctx.nav.focus.update(|n| *n += 1);
            mark_ready();
            actions::refresh_models(ctx);
        }
        Err(err) => {
            ctx.nav.screen.set(Screen::Chat);
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
            ctx.nav.screen.set(Screen::Chat);
            actions::open_thread(ctx, thread_id);
        }
        ShellEvent::FocusComposer => {
            if ctx.nav.screen.get_untracked() == Screen::Settings {
                ctx.nav.screen.set(Screen::Chat);
            }
            ctx.nav.focus.update(|n| *n += 1);
        }
        ShellEvent::NewChat => {
            ctx.nav.screen.set(Screen::Chat);
            actions::new_chat(ctx);
        }
        ShellEvent::Running { threads } => {
            ctx.chats.running.set(threads);
            actions::refresh_threads(ctx);
        }
        ShellEvent::Pending { approvals } => ctx.chats.pending.set(approvals),
        ShellEvent::Answered { approval_id } => ctx.chat.entries.with_untracked(|entries| {
            for entry in entries {
                if let EntryView::Assistant { turn, .. } = entry {
                    turn.update(|view| view.answered(&approval_id));
                }
            }
        }),
        ShellEvent::Notice { message } => ctx.say(message),
        ShellEvent::ConfirmQuit => ctx.nav.confirm_quit.set(true),
    }
}
