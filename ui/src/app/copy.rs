//! Copying from the thread: a message's text, a code block's code. The clipboard is
//! the system's, written by the app (`copy_text`); the button that copied says so for
//! a moment.

use std::time::Duration;

use cairn_protocol::desktop::commands::CopyText;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::{Ctx, ipc};

/// How long a button reads "Copied" after its click.
const CONFIRMED_FOR: Duration = Duration::from_millis(1500);

/// Copies `text`, then runs `done` (the button's confirmation); a failure is said in
/// the toast.
fn copy(ctx: Ctx, text: String, done: impl FnOnce() + 'static) {
    leptos::task::spawn_local(async move {
        match ipc::call(&CopyText { text }).await {
            Ok(()) => done(),
            Err(err) => ctx.say(err.message),
        }
    });
}

/// A button that copies what `text` gives at the moment it is clicked.
pub fn copy_button(
    ctx: Ctx,
    class: &'static str,
    title: &'static str,
    text: impl Fn() -> String + 'static,
) -> impl IntoView {
    let copied = RwSignal::new(false);
    let click = move |_| {
        copy(ctx, text(), move || {
            copied.set(true);
            set_timeout(move || copied.set(false), CONFIRMED_FOR);
        });
    };
    view! {
        <button class=format!("ghost copy {class}") title=title on:click=click>
            {move || if copied.get() { "Copied" } else { "Copy" }}
        </button>
    }
}

/// A click on a code block's Copy button copies the block's code (answers are HTML
/// from markdown, so one listener on the thread serves every block). True when the
/// click was one.
pub fn copy_clicked_code(ctx: Ctx, event: &leptos::ev::MouseEvent) -> bool {
    let button = event
        .target()
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
        .and_then(|element| element.closest(".code-block .code-copy").ok().flatten());
    let Some(button) = button else {
        return false;
    };
    let code = button
        .closest(".code-block")
        .ok()
        .flatten()
        .and_then(|block| block.query_selector("code").ok().flatten())
        .and_then(|code| code.text_content())
        .unwrap_or_default();
    // Without the block's closing newline: pasted into a terminal, it would run the
    // last line at once.
    let code = code.strip_suffix('\n').map(str::to_owned).unwrap_or(code);
    copy(ctx, code, move || {
        button.set_text_content(Some("Copied"));
        set_timeout(move || button.set_text_content(Some("Copy")), CONFIRMED_FOR);
    });
    true
}
