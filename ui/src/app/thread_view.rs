//! The chat screen: the thread's header, its messages and turns, the composer.

use leptos::prelude::*;

use cairn_protocol::desktop::ExportFormat;

use super::copy::copy_button;
use super::{Ctx, EntryView, HEAD_MENU, Screen, actions, cards, composer, ctx};
use crate::format;

/// Keeps the end of the thread in sight while the reader is there: whatever grows it
/// (a streamed piece, a card opening, a notice, a command's output, a panel) is
/// followed. Whether they are there is decided before the growth, by where they last
/// scrolled to: content arriving never counts as the reader leaving. A chat opened
/// starts at its end, and so does the answer to what the user just asked
/// ([`super::Nav::follow`]). Returns the flag the scroll handler keeps.
fn follow_the_end(ctx: Ctx, scroller: NodeRef<leptos::html::Div>) -> StoredValue<bool> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;

    let at_end = StoredValue::new(true);
    Effect::new(move |_| {
        ctx.chats.generation.track();
        ctx.nav.follow.track();
        at_end.set_value(true);
        if let Some(element) = scroller.get_untracked() {
            element.set_scroll_top(element.scroll_height());
        }
    });
    Effect::new(move |_| {
        let Some(element) = scroller.get() else {
            return;
        };
        let target = element.clone();
        let follow = Closure::<dyn FnMut()>::new(move || {
            if at_end.get_value() {
                target.set_scroll_top(target.scroll_height());
            }
        });
        let Ok(observer) = web_sys::MutationObserver::new(follow.as_ref().unchecked_ref()) else {
            return;
        };
        let watch = web_sys::MutationObserverInit::new();
        watch.set_child_list(true);
        watch.set_subtree(true);
        watch.set_character_data(true);
        // A card or a disclosure opening changes an attribute, not the children.
        watch.set_attributes(true);
        if observer.observe_with_options(&element, &watch).is_err() {
            return;
        }
        let kept = send_wrapper::SendWrapper::new((observer, follow));
        on_cleanup(move || kept.take().0.disconnect());
    });
    at_end
}

#[component]
pub fn ChatScreen() -> impl IntoView {
    let ctx = ctx();
    let scroller: NodeRef<leptos::html::Div> = NodeRef::new();
    let title = move || {
        ctx.chats
            .current
            .with(|thread| thread.as_ref().map(|t| t.title.clone()))
            .unwrap_or_else(|| "New chat".to_owned())
    };
    let running = move || ctx.current_id().is_some_and(|id| ctx.is_running(&id));
    let at_end = follow_the_end(ctx, scroller);
    view! {
        <main class="chat">
            <header class="chat-head">
                <button class="ghost icon-button sidebar-toggle" aria-label="Show or hide the chats"
                    on:click=move |_| toggle_sidebar(ctx)>"☰"</button>
                <h1 class="chat-title">{title}</h1>
                <Show when=running>
                    <span class="running-chip"><span class="spinner"></span>"Answering"</span>
                </Show>
                <Show when=move || ctx.current_id().is_some()>
                    <HeadMenu />
                </Show>
                <button class="ghost icon-button" aria-label="Settings" title="Settings"
                    on:click=move |_| ctx.nav.screen.set(Screen::Settings)>"⚙"</button>
            </header>
            <div class="messages" node_ref=scroller
                on:scroll=move |_| {
                    // Where the reader is, as they move: at the end (or near it), the
                    // view follows what comes; above it, it stays where they read.
                    if let Some(element) = scroller.get_untracked() {
                        let below = element.scroll_height() - element.scroll_top() - element.client_height();
                        at_end.set_value(below < 48);
                    }
                }
                on:click=move |event| {
                if !super::copy::copy_clicked_code(ctx, &event) {
                    open_clicked_link(ctx, &event);
                }
            }>
                <Show when=move || ctx.chat.entries.with(Vec::is_empty)>
                    <Welcome />
                </Show>
                <For
                    each=move || ctx.chat.entries.get()
                    key=EntryView::id
                    children=move |entry| match entry {
                        EntryView::User { id, text } => user_message(ctx, id, text),
                        EntryView::Assistant { id, turn } => view! {
                            <div class="message assistant">{cards::turn_view(id, turn)}</div>
                        }.into_any(),
                        EntryView::Notice { text, .. } => view! {
                            <div class="message notice-line"><pre>{text}</pre></div>
                        }.into_any(),
                        EntryView::Handover { handover, text, .. } => handover_view(handover, text),
                    }
                />
            </div>
            <super::Toast />
            <composer::Composer />
        </main>
    }
}

/// The open chat's `⋯` menu: what its answers took altogether, and its export.
#[component]
fn HeadMenu() -> impl IntoView {
    let ctx = ctx();
    let open = move || {
        ctx.nav
            .open_menu
            .with(|open| open.as_deref() == Some(HEAD_MENU))
    };
    let export = move |format: ExportFormat| {
        move |_| {
            ctx.nav.open_menu.set(None);
            if let Some(id) = ctx.current_id() {
                actions::export(ctx, id, format);
            }
        }
    };
    view! {
        <span class="head-menu">
            <button class="ghost icon-button" aria-label="Chat details" title="Chat details"
                on:click=move |_| ctx.nav.open_menu.update(|menu| {
                    *menu = if menu.as_deref() == Some(HEAD_MENU) { None } else { Some(HEAD_MENU.to_owned()) };
                })>"⋯"</button>
            <Show when=open>
                <div class="menu" role="menu">
                    <div class="menu-section usage-totals" role="group" aria-label="This chat's usage">
                        <div class="menu-label">"This chat"</div>
                        {move || ctx.chat.usage.with(format::thread_usage).into_iter()
                            .map(|line| view! { <div class="usage-line">{line}</div> })
                            .collect_view()}
                    </div>
                    <button role="menuitem" on:click=export(ExportFormat::Md)>"Export as Markdown"</button>
                    <button role="menuitem" on:click=export(ExportFormat::Json)>"Export as JSON"</button>
                </div>
            </Show>
        </span>
    }
}

/// A question the user asked. The last one, once answered, can be rewritten and sent
/// again in place (its answer gives way to the new one).
fn user_message(ctx: Ctx, id: String, text: String) -> AnyView {
    let last_question = {
        let id = id.clone();
        move || {
            ctx.chat.entries.with(|entries| {
                entries
                    .iter()
                    .rposition(|e| matches!(e, EntryView::User { .. }))
                    .is_some_and(|at| entries[at].id() == id && at + 2 == entries.len())
            })
        }
    };
    let answered = move || {
        !ctx.current_id()
            .is_some_and(|thread| ctx.is_running(&thread))
            && ctx.chat.entries.with(|entries| {
                matches!(entries.last(), Some(EntryView::Assistant { turn, .. })
                    if turn.with(|view| view.finished.is_some()))
            })
    };
    let editable = {
        let last_question = last_question.clone();
        move || last_question() && answered()
    };
    let editing = move || last_question() && ctx.chat.editing.with(Option::is_some);
    view! {
        <div class="message user">
            <Show when=editing fallback=move || question_shown(ctx, text.clone(), editable.clone())>
                {edit_box(ctx)}
            </Show>
        </div>
    }
    .into_any()
}

/// A question as sent, with Copy, and Edit while it is the last one answered.
fn question_shown(
    ctx: Ctx,
    text: String,
    editable: impl Fn() -> bool + Send + Sync + 'static,
) -> impl IntoView {
    let start_editing = {
        let text = text.clone();
        move |_| ctx.chat.editing.set(Some(text.clone()))
    };
    let copied = text.clone();
    view! {
        <Show when=editable>
            <button class="ghost edit-question" title="Rewrite this question and send it again"
                on:click=start_editing.clone()>"Edit"</button>
        </Show>
        {copy_button(ctx, "copy-question", "Copy this question", move || copied.clone())}
        <div class="bubble">{text}</div>
    }
}

/// The last question being rewritten: Enter sends it again in place of its answer,
/// Escape drops the edit.
fn edit_box(ctx: Ctx) -> impl IntoView {
    let send = move || {
        let Some(edited) = ctx.chat.editing.get_untracked() else {
            return;
        };
        if edited.trim().is_empty() {
            return ctx.say("An edited question cannot be empty.");
        }
        let answer = ctx
            .chat
            .entries
            .with_untracked(|entries| entries.last().map(EntryView::id));
        if let Some(answer) = answer {
            actions::answer_again(ctx, answer, actions::Again::Edit(edited));
        }
    };
    view! {
        <div class="edit-box">
            <textarea class="edit-input" aria-label="Edit your question"
                prop:value=move || ctx.chat.editing.get().unwrap_or_default()
                on:input=move |event| ctx.chat.editing.set(Some(event_target_value(&event)))
                on:keydown=move |event| {
                    if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
                        event.prevent_default();
                        send();
                    } else if event.key() == "Escape" {
                        event.stop_propagation();
                        ctx.chat.editing.set(None);
                    }
                }></textarea>
            <div class="edit-buttons">
                <button class="ghost" on:click=move |_| ctx.chat.editing.set(None)>"Cancel"</button>
                <button class="primary send-edit" on:click=move |_| send()>"Send again"</button>
            </div>
        </div>
    }
}

/// A hand-over: a slim divider saying who handed the chat to whom and why, then the
/// message Cairn wrote for the next agent, marked as not the user's.
fn handover_view(handover: Option<cairn_protocol::Handover>, text: String) -> AnyView {
    let (divider, to) = match handover {
        Some(h) => {
            let reason = h.reason.map(|r| format!(": {r}")).unwrap_or_default();
            (format!("{} → {}{reason}", h.from, h.to), h.to)
        }
        None => (String::new(), String::new()),
    };
    let label = if to.is_empty() {
        "Cairn wrote this".to_owned()
    } else {
        format!("Cairn, for {to}")
    };
    let aria = divider.clone();
    view! {
        <div class="handover" role="separator" aria-label=aria>
            <span class="handover-line"></span>
            <span class="handover-text">{divider}</span>
            <span class="handover-line"></span>
        </div>
        <div class="message user synthetic">
            <div class="bubble" title="Not sent by you: Cairn wrote it when the agent changed">
                <span class="synthetic-label">{label}</span>
                {text}
            </div>
        </div>
    }
    .into_any()
}

#[component]
fn Welcome() -> impl IntoView {
    let ctx = ctx();
    let mode = move || {
        let mode = ctx.chat.draft.with(|draft| draft.mode);
        format!(
            "{} mode: {}.",
            format::mode_label(mode),
            format::mode_hint(mode)
        )
    };
    view! {
        <div class="welcome">
            <h2>"What should we work on?"</h2>
            <p>{mode}</p>
            <p class="muted welcome-folder">{move || match ctx.chat.draft.with(|draft| draft.workspace.clone()) {
                Some(folder) => format!("Cairn works in {folder}: it reads files there, and edits them as the mode allows. Type / for commands."),
                None => "Choose a folder below to let Cairn read and edit files there. Type / for commands.".to_owned(),
            }}</p>
        </div>
    }
}

/// The chats toggle: beside the thread when there is room, over it when there is not
/// (the same width as the stylesheet's breakpoint).
fn toggle_sidebar(ctx: Ctx) {
    let narrow = window()
        .match_media("(max-width: 40rem)")
        .ok()
        .flatten()
        .is_some_and(|query| query.matches());
    if narrow {
        ctx.nav.narrow_sidebar.update(|shown| *shown = !*shown);
    } else {
        ctx.nav.sidebar_open.update(|open| *open = !*open);
    }
}

/// A click on a link in an answer opens it (answers are HTML from markdown, so one
/// listener here rather than one per link).
fn open_clicked_link(ctx: Ctx, event: &leptos::ev::MouseEvent) {
    use wasm_bindgen::JsCast;
    let link = event
        .target()
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
        .and_then(|element| element.closest(".md a.link[data-href]").ok().flatten());
    if let Some(url) = link.and_then(|link| link.get_attribute("data-href")) {
        event.prevent_default();
        super::actions::open_link(ctx, url);
    }
}
