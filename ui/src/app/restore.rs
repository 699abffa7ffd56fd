//! Restore on an answer that changed files: what it would put back (each file and its
//! diff from now), then, once the user says so, done; or why not (a file changed
//! since the answer wrote it), with nothing changed.

use cairn_protocol::RestorePlan;
use cairn_protocol::desktop::commands::{PlanRestore, RestoreAnswer};
use leptos::prelude::*;

use super::diff::diff_view;
use super::{ctx, ipc};
use crate::turn::TurnView;

/// A restore the user opened.
#[derive(Debug, Clone, PartialEq)]
pub enum Restoring {
    Asking,
    Shown(RestorePlan),
    /// It could not be planned or done: why.
    Failed(String),
}

/// The answer's ids, once it is stored and has files to put back.
fn restorable(turn: &ArcRwSignal<TurnView>) -> Option<(String, String)> {
    turn.with(|view| {
        (!view.restorable.is_empty())
            .then(|| Some((view.thread_id.clone()?, view.message_id.clone()?)))
            .flatten()
    })
}

/// "Restore files", on a finished answer that changed files.
pub fn restore_button(
    turn: ArcRwSignal<TurnView>,
    restoring: RwSignal<Option<Restoring>>,
) -> impl IntoView {
    move || {
        let (thread_id, answer_id) = restorable(&turn)?;
        let files = turn.with(|view| view.restorable.len());
        let open = move |_| {
            let (thread_id, answer_id) = (thread_id.clone(), answer_id.clone());
            restoring.set(Some(Restoring::Asking));
            leptos::task::spawn_local(async move {
                let plan = ipc::call(&PlanRestore {
                    thread_id,
                    answer_id,
                })
                .await;
                restoring.set(Some(match plan {
                    Ok(plan) => Restoring::Shown(plan),
                    Err(err) => Restoring::Failed(err.message),
                }));
            });
        };
        Some(view! {
            <button class="ghost restore-files"
                title="Put back the files this answer changed, as they were before it"
                on:click=open>
                {format!("⟲ Restore {files} file{}", if files == 1 { "" } else { "s" })}
            </button>
        })
    }
}

/// A panel the user opened, brought into sight as it appears (it opens below the
/// answer, which may be at the bottom of the window).
fn revealed() -> NodeRef<leptos::html::Div> {
    let panel: NodeRef<leptos::html::Div> = NodeRef::new();
    Effect::new(move |_| {
        if let Some(panel) = panel.get() {
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_block(web_sys::ScrollLogicalPosition::Nearest);
            panel.scroll_into_view_with_scroll_into_view_options(&options);
        }
    });
    panel
}

/// What a restore would do, with the buttons that do it or leave it.
pub fn restore_panel(
    turn: ArcRwSignal<TurnView>,
    restoring: RwSignal<Option<Restoring>>,
) -> impl IntoView {
    move || {
        let state = restoring.get()?;
        let close = move |_| restoring.set(None);
        Some(match state {
            Restoring::Asking => view! {
                <div class="restore-panel" role="status">"Looking at the files…"</div>
            }
            .into_any(),
            Restoring::Failed(problem) => view! {
                <div class="restore-panel" role="alert" node_ref=revealed()>
                    <p class="error-text restore-problem">{problem}</p>
                    <button on:click=close>"Close"</button>
                </div>
            }
            .into_any(),
            Restoring::Shown(plan) => plan_shown(turn.clone(), &plan, restoring).into_any(),
        })
    }
}

/// What Restore would do to each file, and the buttons to do it or not.
fn plan_shown(
    turn: ArcRwSignal<TurnView>,
    plan: &RestorePlan,
    restoring: RwSignal<Option<Restoring>>,
) -> impl IntoView + use<> {
    let ctx = ctx();
    let refusal = plan.refusal();
    let files = plan
        .files
        .iter()
        .map(|file| {
            let said = match &file.problem {
                Some(problem) => {
                    view! { <span class="error-text">{format!("✗ {problem}")}</span> }.into_any()
                }
                None => view! { <span>{file.action.said()}</span> }.into_any(),
            };
            view! {
                <li class="restore-file">
                    <code>{file.path.clone()}</code> ": " {said}
                    {(!file.diff.is_empty()).then(|| diff_view(&file.diff))}
                </li>
            }
        })
        .collect_view();
    let (thread_id, answer_id) = (plan.thread_id.clone(), plan.answer_id.clone());
    let confirm = move |_| {
        let (thread_id, answer_id) = (thread_id.clone(), answer_id.clone());
        let turn = turn.clone();
        leptos::task::spawn_local(async move {
            match ipc::call(&RestoreAnswer {
                thread_id,
                answer_id,
            })
            .await
            {
                Ok(done) => {
                    let count = done.files.len();
                    turn.update(|view| view.restorable.clear());
                    restoring.set(None);
                    ctx.say(format!(
                        "Put back {count} file{}.",
                        if count == 1 { "" } else { "s" }
                    ));
                }
                Err(err) => restoring.set(Some(Restoring::Failed(err.message))),
            }
        });
    };
    view! {
        <div class="restore-panel" role="group" aria-label="Restore files" node_ref=revealed()>
            <p>{format!("Restore puts these files in {} back as they were before this answer:", plan.workspace)}</p>
            <ul class="restore-files-list">{files}</ul>
            {refusal.clone().map(|refusal| view! { <p class="error-text restore-problem" role="alert">{refusal}</p> })}
            <div class="restore-buttons">
                <button class="primary restore-confirm" disabled=refusal.is_some() on:click=confirm>"Restore"</button>
                <button class="restore-cancel" on:click=move |_| restoring.set(None)>"Cancel"</button>
            </div>
        </div>
    }
}
