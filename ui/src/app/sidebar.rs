//! The sidebar: new chat, search, and the threads with their state.

use cairn_protocol::desktop::ExportFormat;
use cairn_protocol::desktop::commands::{DeleteThread, RenameThread, SearchThreads};
use cairn_protocol::{SearchHit, ThreadInfo};
use leptos::prelude::*;

use super::{Ctx, Screen, actions, ctx, ipc, now_ms};
use crate::format;

#[component]
pub fn Sidebar() -> impl IntoView {
    let ctx = ctx();
    let query = RwSignal::new(String::new());
    let hits: RwSignal<Option<Vec<SearchHit>>> = RwSignal::new(None);
    let search = move |text: String| {
        query.set(text.clone());
        if text.trim().is_empty() {
            return hits.set(None);
        }
        leptos::task::spawn_local(async move {
            let search = SearchThreads {
                query: text.clone(),
            };
            match ipc::call(&search).await {
                // A slower, older search must not replace a newer one.
                Ok(found) if query.get_untracked() == text => hits.set(Some(found)),
                Ok(_) => {}
                Err(err) => ctx.say(err.message),
            }
        });
    };
    view! {
        <nav class="sidebar" aria-label="Chats">
            <div class="sidebar-top">
                <span class="brand">"Cairn"</span>
                <button class="primary new-chat" on:click=move |_| actions::new_chat(ctx)>"+ New chat"</button>
            </div>
            <input
                class="search"
                type="search"
                aria-label="Search chats"
                placeholder="Search chats"
                prop:value=move || query.get()
                on:input=move |event| search(event_target_value(&event))
            />
            {move || match hits.get() {
                Some(found) if found.is_empty() => view! { <p class="muted pad">"Nothing found."</p> }.into_any(),
                Some(found) => view! {
                    <ul class="hits">
                        {found.into_iter().map(|hit| {
                            let id = hit.thread_id.clone();
                            view! {
                                <li><button class="hit" on:click=move |_| actions::open_thread(ctx, id.clone())>
                                    <span class="hit-title">{hit.thread_title}</span>
                                    <span class="hit-snippet">{
                                        hit.parts.into_iter().map(|part| if part.hit {
                                            view! { <mark>{part.text}</mark> }.into_any()
                                        } else {
                                            part.text.into_any()
                                        }).collect_view()
                                    }</span>
                                </button></li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
                None => view! { <ThreadList /> }.into_any(),
            }}
            <div class="sidebar-bottom">
                <button class="ghost" on:click=move |_| ctx.nav.screen.set(Screen::Settings)>"⚙ Settings"</button>
            </div>
        </nav>
    }
}

#[component]
fn ThreadList() -> impl IntoView {
    let ctx = ctx();
    view! {
        <ul class="threads">
            <For each=move || ctx.chats.threads.get() key=|t| (t.id.clone(), t.title.clone(), t.updated_at) let:thread>
                <ThreadItem thread=thread />
            </For>
        </ul>
        <Show when=move || ctx.chats.threads.with(Vec::is_empty)>
            <p class="muted pad">"Your chats will be listed here."</p>
        </Show>
    }
}

#[component]
fn ThreadItem(thread: ThreadInfo) -> impl IntoView {
    let ctx = ctx();
    let id = thread.id.clone();
    let renaming = RwSignal::new(None::<String>);
    let is_current = {
        let id = id.clone();
        move || ctx.current_id().as_deref() == Some(id.as_str())
    };
    let rename = {
        let id = id.clone();
        move |title: String| {
            renaming.set(None);
            rename_thread(ctx, id.clone(), title);
        }
    };
    let opener = thread.clone();
    view! {
        <li class="thread" class:current=is_current data-thread=id.clone()>
            {move || match renaming.get() {
                Some(text) => rename_field(text, rename.clone(), renaming).into_any(),
                None => thread_open_button(ctx, &opener).into_any(),
            }}
            <button class="ghost icon-button thread-menu" aria-label="Chat actions" on:click={
                let id = id.clone();
                move |_| ctx.nav.open_menu.update(|open| {
                    *open = if open.as_deref() == Some(id.as_str()) { None } else { Some(id.clone()) };
                })
            }>"⋯"</button>
            {thread_menu(ctx, thread, renaming)}
        </li>
    }
}

/// A chat in the list: its title, whether it is answering or waits on you, and when
/// it last changed.
fn thread_open_button(ctx: Ctx, thread: &ThreadInfo) -> impl IntoView + use<> {
    let running = {
        let id = thread.id.clone();
        move || ctx.is_running(&id)
    };
    let pending = {
        let id = thread.id.clone();
        move || {
            ctx.chats
                .pending
                .with(|pending| pending.iter().filter(|p| p.thread_id == id).count())
        }
    };
    let open = {
        let id = thread.id.clone();
        move |_| actions::open_thread(ctx, id.clone())
    };
    let title = thread.title.clone();
    let updated = thread.updated_at;
    view! {
        <button class="thread-open" on:click=open>
            <span class="thread-title">{title}</span>
            <span class="thread-meta">
                <Show when=running><span class="dot running" title="Answering"></span></Show>
                {move || (pending() > 0).then(|| view! {
                    <span class="badge pending" title="Waiting for your approval">{pending()}</span>
                })}
                <span class="thread-time">{format::ago(updated, now_ms() as i64)}</span>
            </span>
        </button>
    }
}

/// A chat's actions menu, shown while it is the open one: rename, export, and delete
/// (asked twice).
fn thread_menu(ctx: Ctx, thread: ThreadInfo, renaming: RwSignal<Option<String>>) -> impl IntoView {
    let id = thread.id;
    let menu = {
        let id = id.clone();
        Signal::derive(move || {
            ctx.nav
                .open_menu
                .with(|open| open.as_deref() == Some(id.as_str()))
        })
    };
    let close_menu = move || ctx.nav.open_menu.set(None);
    let confirm_delete = RwSignal::new(false);
    let delete = {
        let id = id.clone();
        move |_| {
            confirm_delete.set(false);
            close_menu();
            delete_thread(ctx, id.clone());
        }
    };
    let export = move |format: ExportFormat| {
        let id = id.clone();
        move |_| {
            close_menu();
            actions::export(ctx, id.clone(), format);
        }
    };
    let title = thread.title;
    view! {
        <Show when=move || menu.get()>
            <div class="menu" role="menu">
                <button role="menuitem" on:click={
                    let title = title.clone();
                    move |_| { close_menu(); renaming.set(Some(title.clone())); }
                }>"Rename"</button>
                <button role="menuitem" on:click=export.clone()(ExportFormat::Md)>"Export as Markdown"</button>
                <button role="menuitem" on:click=export.clone()(ExportFormat::Json)>"Export as JSON"</button>
                {
                    let delete = delete.clone();
                    move || if confirm_delete.get() {
                        view! { <button role="menuitem" class="danger" on:click=delete.clone()>"Delete for good"</button> }.into_any()
                    } else {
                        view! { <button role="menuitem" on:click=move |_| confirm_delete.set(true)>"Delete…"</button> }.into_any()
                    }
                }
            </div>
        </Show>
    }
}

/// The field a chat's new name is typed in: Enter keeps it, Escape or leaving drops it.
fn rename_field(
    text: String,
    rename: impl Fn(String) + 'static,
    renaming: RwSignal<Option<String>>,
) -> impl IntoView {
    let field: NodeRef<leptos::html::Input> = NodeRef::new();
    // The user chose Rename: the name is theirs to type over.
    Effect::new(move |_| {
        if let Some(input) = field.get() {
            // After this frame: the field's value is set by then.
            request_animation_frame(move || {
                let _ = input.focus();
                input.select();
            });
        }
    });
    view! {
        <input class="rename" type="text" aria-label="Chat name" node_ref=field prop:value=text
            on:keydown=move |event| match event.key().as_str() {
                "Enter" => rename(event_target_value(&event)),
                "Escape" => renaming.set(None),
                _ => {}
            }
            on:blur=move |_| renaming.set(None) />
    }
}

/// Renames chat `id`, then lists the chats again.
fn rename_thread(ctx: Ctx, id: String, title: String) {
    leptos::task::spawn_local(async move {
        match ipc::call(&RenameThread {
            thread_id: id,
            title,
        })
        .await
        {
            Ok(_) => actions::refresh_threads(ctx),
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Deletes chat `id` (a new chat in its place, if it was the open one), then lists
/// the chats again.
fn delete_thread(ctx: Ctx, id: String) {
    leptos::task::spawn_local(async move {
        let delete = DeleteThread {
            thread_id: id.clone(),
        };
        match ipc::call(&delete).await {
            Ok(()) => {
                if ctx.current_id().as_deref() == Some(id.as_str()) {
                    actions::new_chat(ctx);
                }
                actions::refresh_threads(ctx);
            }
            Err(err) => ctx.say(err.message),
        }
    });
}
