//! A turn drawn: its reasoning, its text and nested tool cards in the order they
//! came, the approval a card waits on, and how the turn ended. Each card and text
//! piece follows its own memo, so a streamed token redraws only what it touched.

use std::sync::Arc;

use cairn_protocol::desktop::commands::LoadToolResult;
use cairn_protocol::{
    ApprovalDecision, ApprovalPreview, Cut, Image, PermissionMode, PromptCut, ToolApprovalRequest,
    TurnStatus, Verdict,
};
use leptos::prelude::*;
use serde_json::Value;

use super::copy::copy_button;
use super::diff::diff_view;
use super::{EntryView, actions, ctx, ipc};
use crate::appending::{Appending, Drawn};
use crate::card_head::Head;
use crate::format;
use crate::markdown::{CodeShape, settle_streaming, to_html};
use crate::turn::{Card, CardState, Segment, StepState, TurnView};

/// Longest argument or result preview on a card; the approval card shows all.
const PREVIEW_CHARS: usize = 600;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Text(usize),
    Card(String),
}

fn segments_of<'a>(view: &'a TurnView, parent: Option<&str>) -> &'a [Segment] {
    match parent {
        None => &view.segments,
        Some(id) => view
            .cards
            .get(id)
            .map_or(&[], |card| card.children.as_slice()),
    }
}

fn keys(view: &TurnView, parent: Option<&str>) -> Vec<Key> {
    segments_of(view, parent)
        .iter()
        .enumerate()
        .filter_map(|(index, segment)| match segment {
            Segment::Text(_) => Some(Key::Text(index)),
            Segment::Card(id) if view.cards.get(id).is_some_and(Card::folded) => None,
            Segment::Card(id) => Some(Key::Card(id.clone())),
        })
        .collect()
}

/// A whole assistant turn.
pub fn turn_view(entry_id: String, turn: ArcRwSignal<TurnView>) -> impl IntoView {
    let reasoning = ArcMemo::new({
        let turn = turn.clone();
        move |_| turn.with(|view| view.reasoning.clone())
    });
    let has_reasoning = {
        let reasoning = reasoning.clone();
        move || reasoning.with(|text| !text.is_empty())
    };
    // Open while the model reasons, folded once the answer starts or the turn ends.
    let reasoning_live = ArcMemo::new({
        let turn = turn.clone();
        move |_| turn.with(|view| view.finished.is_none() && view.segments.is_empty())
    });
    let finished = {
        let turn = turn.clone();
        ArcMemo::new(move |_| turn.with(|view| view.finished.is_some()))
    };
    view! {
        <div class="turn" class:finished=move || finished.get()>
            <Show when=has_reasoning>
                <details class="reasoning" prop:open={
                    let live = reasoning_live.clone();
                    move || live.get()
                }>
                    <summary>"Reasoning"</summary>
                    <div class="reasoning-text">{
                        let reasoning = reasoning.clone();
                        move || reasoning.get()
                    }</div>
                </details>
            </Show>
            {segments(turn.clone(), None)}
            {ending(entry_id, turn)}
        </div>
    }
}

/// What a finished answer took (tokens, calls, time, cost), in its row of actions:
/// shown when the pointer is over the answer, or the keyboard is in it.
fn answer_usage(turn: ArcRwSignal<TurnView>) -> impl IntoView {
    let ctx = ctx();
    let message_id =
        ArcMemo::new(move |_| turn.with(|view| view.finished.and(view.message_id.clone())));
    move || {
        let line = message_id.with(|id| {
            let id = id.as_deref()?;
            ctx.chat
                .usage
                .with(|usage| usage.answer(id).map(format::answer_usage))
        })?;
        Some(view! { <div class="answer-usage" role="note">{line}</div> })
    }
}

fn segments(turn: ArcRwSignal<TurnView>, parent: Option<String>) -> impl IntoView {
    let keys = ArcMemo::new({
        let turn = turn.clone();
        let parent = parent.clone();
        move |_| turn.with(|view| keys(view, parent.as_deref()))
    });
    view! {
        <For
            each=move || keys.get()
            key=|key| key.clone()
            children=move |key| segment(turn.clone(), parent.clone(), key)
        />
    }
}

fn segment(turn: ArcRwSignal<TurnView>, parent: Option<String>, key: Key) -> AnyView {
    match key {
        Key::Text(index) => {
            // The text, and whether it is the one being written now.
            let text = ArcMemo::new(move |_| {
                turn.with(|view| {
                    let segments = segments_of(view, parent.as_deref());
                    match segments.get(index) {
                        // The text being written now may end in half a link.
                        Some(Segment::Text(text))
                            if view.finished.is_none() && index + 1 == segments.len() =>
                        {
                            (settle_streaming(text).into_owned(), true)
                        }
                        Some(Segment::Text(text)) => (text.clone(), false),
                        _ => (String::new(), false),
                    }
                })
            });
            let writing = ArcMemo::new({
                let text = text.clone();
                move |_| text.with(|(_, writing)| *writing)
            });
            // Drawn whole once written: the page then holds what a reload draws.
            (move || {
                let text = text.clone();
                if writing.get() {
                    appending_markdown(text).into_any()
                } else {
                    view! { <div class="md" inner_html=move || text.with(|(text, _)| to_html(text))></div> }
                        .into_any()
                }
            })
            .into_any()
        }
        Key::Card(id) => card(turn, id).into_any(),
    }
}

/// Text being written, drawn by appending (see [`Appending`]): the blocks that settled
/// are drawn once, each in a wrapper that takes no box, and only the open block is
/// drawn again as pieces arrive.
fn appending_markdown(text: ArcMemo<(String, bool)>) -> impl IntoView {
    let appending = StoredValue::new(Appending::default());
    let drawn = Memo::new(move |_| {
        text.with(|(text, _)| appending.try_update_value(|state| state.update(text)))
    });
    // Which code block is being written, if one is: a new one is built anew.
    let code_block = Memo::new(move |_| {
        drawn.with(|drawn| {
            let drawn = drawn.as_ref()?;
            let code = drawn.code.as_ref()?;
            Some(((drawn.generation, code.at), code.shape.clone()))
        })
    });
    let pieces = move || {
        drawn.with(|drawn| {
            drawn.as_ref().map_or_else(Vec::new, |drawn| {
                (0..drawn.settled)
                    .map(|index| (drawn.generation, index))
                    .collect()
            })
        })
    };
    view! {
        <div class="md">
            <For
                each=pieces
                key=|piece| *piece
                children=move |(_, index)| {
                    let html = appending.with_value(|state| state.piece(index).to_owned());
                    view! { <div class="md-block" inner_html=html></div> }
                }
            />
            {move || {
                let code = code_block.get();
                match code {
                    None => view! {
                        <div class="md-block" inner_html=move || {
                            drawn.with(|drawn| drawn.as_ref().map(|drawn| drawn.open.clone()).unwrap_or_default())
                        }></div>
                    }
                    .into_any(),
                    Some((_, shape)) => appending_code(appending, drawn, shape).into_any(),
                }
            }}
        </div>
    }
}

/// A code block being written, built from the parts the finished block has (its bar,
/// its `code`): the lines coloured for good are drawn once each, in spans that change
/// nothing of how the code lays out, and only the open lines are drawn again.
fn appending_code(
    appending: StoredValue<Appending>,
    drawn: Memo<Option<Drawn>>,
    shape: CodeShape,
) -> impl IntoView {
    let lines = move || {
        drawn.with(|drawn| {
            drawn
                .as_ref()
                .and_then(|drawn| drawn.code.as_ref())
                .map_or(0, |code| code.settled)
        })
    };
    view! {
        <div class="md-block">
            <div class="code-block">
                <div class="md-block" inner_html=shape.head></div>
                <pre><code class=shape.class>
                    <For
                        each=move || 0..lines()
                        key=|index| *index
                        children=move |index| {
                            let html = appending.with_value(|state| state.code_piece(index).to_owned());
                            view! { <span inner_html=html></span> }
                        }
                    />
                    <span inner_html=move || {
                        drawn.with(|drawn| {
                            drawn
                                .as_ref()
                                .and_then(|drawn| drawn.code.as_ref())
                                .map(|code| code.open.clone())
                                .unwrap_or_default()
                        })
                    }></span>
                </code></pre>
            </div>
        </div>
    }
}

/// Shows a card's whole result: at once when the card holds it (live), else once read
/// from the store (a stored card keeps only the start in its answer's tree).
fn show_whole(turn: ArcRwSignal<TurnView>, id: String, show_all: RwSignal<bool>) {
    let ctx = ctx();
    let stored = turn.with_untracked(|view| {
        let bytes = view.cards.get(&id)?.result_bytes;
        bytes.and(view.message_id.clone())
    });
    let Some(message_id) = stored else {
        return show_all.set(true);
    };
    leptos::task::spawn_local(async move {
        let asked = LoadToolResult {
            message_id,
            tool_call_id: id.clone(),
        };
        match ipc::call(&asked).await {
            Ok(whole) => {
                turn.update(|view| {
                    if let Some(card) = view.cards.get_mut(&id) {
                        card.result = Some(Arc::new(Value::String(whole)));
                        card.result_bytes = None;
                    }
                });
                show_all.set(true);
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

/// The images a call returned, of the kinds the page shows (drawn from the data the
/// tool sent: nothing is fetched).
fn card_images(images: &[Image]) -> impl Iterator<Item = AnyView> + use<'_> {
    images
        .iter()
        .filter(|image| Image::SHOWN.contains(&image.mime_type.as_str()))
        .enumerate()
        .map(|(n, image)| {
            view! {
                <img class="card-image" src=image.data_url()
                    alt=format!("Image {} the tool returned", n + 1) />
            }
            .into_any()
        })
}

fn card(turn: ArcRwSignal<TurnView>, id: String) -> impl IntoView {
    let data = ArcMemo::new({
        let turn = turn.clone();
        let id = id.clone();
        move |_| turn.with(|view| view.cards.get(&id).cloned())
    });
    let head = ArcMemo::new({
        let data = data.clone();
        move |_| data.with(|card| card.as_ref().map(Head::of))
    });
    let expanded = ArcMemo::new({
        let data = data.clone();
        move |_| data.with(|card| card.as_ref().is_some_and(|card| card.expanded))
    });
    let toggle = {
        let turn = turn.clone();
        let id = id.clone();
        move |_| turn.update(|view| view.toggle(&id))
    };
    let state_class = {
        let head = head.clone();
        move || match head.with(|h| h.as_ref().map(|h| h.state)) {
            Some(CardState::Running) => "card running",
            Some(CardState::Failed) => "card failed",
            Some(CardState::Denied) => "card denied",
            _ => "card done",
        }
    };
    // The header is written as HTML (see `card_head`): its chevron says whether the
    // body is open.
    let head_html = {
        let expanded = expanded.clone();
        move || head.with(|head| head.as_ref().map(|head| head.html(expanded.get())))
    };
    let expanded_attr = {
        let expanded = expanded.clone();
        move || if expanded.get() { "true" } else { "false" }
    };
    let body = card_body(turn, id.clone(), data, expanded);
    let card_id = id;
    view! {
        <div class=state_class data-card=card_id>
            <button class="card-head" on:click=toggle aria-expanded=expanded_attr
                inner_html=head_html></button>
            {body}
        </div>
    }
}

/// What the model has written of a call so far; the arriving lines are the news, so
/// the box shows its end.
fn pending_box(text: String) -> impl IntoView {
    let node: NodeRef<leptos::html::Pre> = NodeRef::new();
    Effect::new(move |_| {
        if let Some(pre) = node.get() {
            pre.set_scroll_top(pre.scroll_height());
        }
    });
    view! { <pre class="card-pending" aria-live="polite" node_ref=node>{text}</pre> }
}

/// A card's body, while it is open: the call being written, a plan's checklist, the
/// arguments, the question, the change, a subtask's own text and calls, the result.
fn card_body(
    turn: ArcRwSignal<TurnView>,
    id: String,
    data: ArcMemo<Option<Card>>,
    expanded: ArcMemo<bool>,
) -> impl IntoView {
    // A long result shows its start; "Show all" shows every byte the tool returned
    // (the model may have read only a cut of it). Kept while the card is closed.
    let show_all = RwSignal::new(false);
    move || {
        expanded.get().then(|| {
            let settled = data.with_untracked(|card| {
                let card = card.as_ref().filter(|card| card.settled())?;
                Some(settled_body(&turn, &id, card, &data, show_all))
            });
            settled.unwrap_or_else(|| {
                let parts = BodyParts::of(&data);
                let (result, hidden) = card_result(&turn, &id, &data, show_all);
                let shown = Shown {
                    result,
                    hidden,
                    show_all,
                };
                body_view(turn.clone(), id.clone(), parts, shown).into_any()
            })
        })
    }
}

/// The body of a card that has ended (every stored card), drawn once: its parts in
/// one list, where a live body keeps a memo and an empty slot in the page for each
/// part it might gain. Only the result follows "Show all".
fn settled_body(
    turn: &ArcRwSignal<TurnView>,
    id: &str,
    card: &Card,
    data: &ArcMemo<Option<Card>>,
    show_all: RwSignal<bool>,
) -> AnyView {
    let mut parts = Vec::new();
    if let Some(args) = &card.args {
        parts.push(args_details(format::preview(args, PREVIEW_CHARS)).into_any());
    }
    if let Some(change) = &card.change {
        parts.push(change_details(change).into_any());
    }
    if !card.children.is_empty() {
        parts.push(segments(turn.clone(), Some(id.to_owned())).into_any());
    }
    if card.state == CardState::Denied {
        parts.push(denied_note().into_any());
    } else if result_to_show(card).is_some() {
        let data = data.clone();
        let result = move || {
            let all = show_all.get();
            data.with(|card| card.as_ref().and_then(|card| shown_result(card, all)))
                .unwrap_or_default()
        };
        parts.push(result_box(result));
    }
    parts.extend(card_images(&card.images));
    if let Some(size) = hidden_size(card) {
        parts.push(show_all_button(turn.clone(), id.to_owned(), size, show_all).into_any());
    }
    view! { <div class="card-body">{parts}</div> }.into_any()
}

/// The call's arguments, folded.
fn args_details(args: String) -> impl IntoView {
    view! { <details class="card-args"><summary>"Arguments"</summary><pre>{args}</pre></details> }
}

/// What a write did to its file, folded.
fn change_details(change: &ApprovalPreview) -> impl IntoView + use<> {
    let change = preview_view(change.clone());
    view! { <details class="card-change"><summary>"Change"</summary>{change}</details> }
}

/// Said instead of the result of a call the user denied: what the model was told is
/// for the model.
fn denied_note() -> impl IntoView {
    view! { <p class="card-denied">"Denied by you"</p> }
}

/// A result as its card shows it.
fn result_box(text: impl IntoView + 'static) -> AnyView {
    view! { <pre class="card-result">{text}</pre> }.into_any()
}

/// "Show all" under a result shown cut, gone once the whole is shown.
fn show_all_button(
    turn: ArcRwSignal<TurnView>,
    id: String,
    size: String,
    show_all: RwSignal<bool>,
) -> impl IntoView {
    move || {
        let turn = turn.clone();
        let id = id.clone();
        (!show_all.get()).then(|| view! {
            <button class="link show-all" on:click=move |_| show_whole(turn.clone(), id.clone(), show_all)>
                {format!("Show all ({size})")}
            </button>
        })
    }
}

/// The parts of a card its body shows, each its own memo of the card: a streamed token
/// redraws only the part it changed.
#[derive(Clone)]
struct BodyParts {
    approval: ArcMemo<Option<ToolApprovalRequest>>,
    /// What the model has written of the call so far, while it writes it.
    pending: ArcMemo<Option<String>>,
    /// The arguments once: in the question while one is open, else behind a disclosure.
    args: ArcMemo<Option<String>>,
    /// What a write did to its file, folded: there to review once the question is gone
    /// (or when none was asked).
    change: ArcMemo<Option<Arc<ApprovalPreview>>>,
    denied: ArcMemo<bool>,
    images: ArcMemo<Arc<[Image]>>,
}

impl BodyParts {
    fn of(data: &ArcMemo<Option<Card>>) -> Self {
        fn part<T: PartialEq + Send + Sync + 'static>(
            data: &ArcMemo<Option<Card>>,
            pick: impl Fn(Option<&Card>) -> T + Send + Sync + 'static,
        ) -> ArcMemo<T> {
            let data = data.clone();
            ArcMemo::new(move |_| data.with(|card| pick(card.as_ref())))
        }
        Self {
            approval: part(data, |card| card.and_then(|card| card.approval.clone())),
            pending: part(data, |card| {
                let card = card?;
                let text = card.args.as_ref()?.as_str()?;
                card.pending
                    .then(|| format::pending_preview(card.streams.as_deref(), text))
            }),
            args: part(data, |card| {
                let card = card.filter(|card| card.approval.is_none() && !card.pending)?;
                card.args
                    .as_ref()
                    .map(|args| format::preview(args, PREVIEW_CHARS))
            }),
            change: part(data, |card| {
                card.filter(|card| card.approval.is_none())
                    .and_then(|card| card.change.clone())
            }),
            denied: part(data, |card| {
                card.is_some_and(|card| card.state == CardState::Denied)
            }),
            images: part(data, |card| {
                card.map_or_else(|| Arc::from([]), |card| card.images.clone())
            }),
        }
    }
}

/// A card's result as shown: its start or all of it, and the whole's size while only
/// the start is shown.
struct Shown {
    result: ArcMemo<Option<String>>,
    hidden: ArcMemo<Option<String>>,
    show_all: RwSignal<bool>,
}

fn body_view(
    turn: ArcRwSignal<TurnView>,
    id: String,
    parts: BodyParts,
    shown: Shown,
) -> impl IntoView {
    let BodyParts {
        approval,
        pending,
        args,
        change,
        denied,
        images,
    } = parts;
    let Shown {
        result,
        hidden,
        show_all,
    } = shown;
    let turn_for_approval = turn.clone();
    let turn_for_result = turn.clone();
    let id_for_result = id.clone();
    view! {
        <div class="card-body">
            {move || pending.get().map(pending_box)}
            {plan_checklist(turn.clone(), id.clone())}
            {move || args.get().map(args_details)}
            {move || approval.get().map(|request| approval_card(turn_for_approval.clone(), request))}
            {move || change.get().map(|change| change_details(&change))}
            {segments(turn.clone(), Some(id.clone()))}
            {move || if denied.get() {
                Some(denied_note().into_any())
            } else {
                result.get().map(result_box)
            }}
            {move || images.with(|images| card_images(images).collect_view())}
            {move || hidden.get().map(|size| {
                show_all_button(turn_for_result.clone(), id_for_result.clone(), size, show_all)
            })}
        </div>
    }
}

/// What a card shows of its result (its start, or all of it once asked; nothing for a
/// plan, whose checklist stands for it, or where it repeats the text above), and the
/// size "Show all" offers when the start is not all.
fn card_result(
    turn: &ArcRwSignal<TurnView>,
    id: &str,
    data: &ArcMemo<Option<Card>>,
    show_all: RwSignal<bool>,
) -> (ArcMemo<Option<String>>, ArcMemo<Option<String>>) {
    // A plan's card shows its checklist; its result is the model's instructions.
    let is_plan = ArcMemo::new({
        let turn = turn.clone();
        let id = id.to_owned();
        move |_| turn.with(|view| view.plans.contains_key(&id))
    });
    let result = ArcMemo::new({
        let data = data.clone();
        move |_| {
            if is_plan.get() {
                return None;
            }
            let all = show_all.get();
            data.with(|card| shown_result(card.as_ref()?, all))
        }
    });
    let hidden = ArcMemo::new({
        let data = data.clone();
        move |_| data.with(|card| card.as_ref().and_then(hidden_size))
    });
    (result, hidden)
}

/// The result a card shows: none where it only repeats the text above.
fn result_to_show(card: &Card) -> Option<&Value> {
    card.result
        .as_deref()
        .filter(|_| !card.result_repeats_text())
}

/// The result as shown: its start, or all of it.
fn shown_result(card: &Card, all: bool) -> Option<String> {
    let max = if all { usize::MAX } else { PREVIEW_CHARS };
    result_to_show(card).map(|result| format::preview(result, max))
}

/// The size of a result whose card shows only its start.
fn hidden_size(card: &Card) -> Option<String> {
    let result = result_to_show(card)?;
    // A stored card holds the start; the store has the whole.
    if let Some(size) = card.result_bytes {
        return Some(format::bytes(size));
    }
    let size = match result {
        Value::String(text) => text.len(),
        other => other.to_string().len(),
    };
    (format::preview(result, PREVIEW_CHARS + 1).chars().count() > PREVIEW_CHARS)
        .then(|| format::bytes(u64::try_from(size).unwrap_or(u64::MAX)))
}

/// A plan's steps as a checklist ticking as they finish, with a reviewer's verdict;
/// nothing for a card that shows no plan.
fn plan_checklist(turn: ArcRwSignal<TurnView>, id: String) -> impl IntoView {
    let plan = ArcMemo::new({
        let turn = turn.clone();
        let id = id.clone();
        move |_| {
            turn.with(|view| {
                let plan = view.plans.get(&id)?;
                Some((
                    plan.created.plan_id.clone(),
                    view.plan_steps(&id),
                    plan.review.clone(),
                ))
            })
        }
    });
    move || {
        plan.get().map(|(plan_id, steps, review)| {
            let items = steps
                .into_iter()
                .map(|(step, state)| {
                    let (class, tick, label) = match state {
                        StepState::Waiting => ("plan-step waiting", "○", "waiting"),
                        StepState::Running => ("plan-step running", "◌", "running"),
                        StepState::Done => ("plan-step done", "✓", "done"),
                        StepState::Failed => ("plan-step failed", "✕", "failed"),
                        StepState::Skipped => ("plan-step skipped", "–", "skipped"),
                    };
                    let title = if step.title.trim().is_empty() {
                        step.id.clone()
                    } else {
                        step.title.clone()
                    };
                    view! {
                        <li class=class data-step=step.id.clone()>
                            <span class="tick" aria-label=label>{tick}</span>
                            <span class="step-title">{title}</span>
                        </li>
                    }
                })
                .collect_view();
            let verdict = review.map(|review| {
                let (class, word) = match review.verdict {
                    Verdict::Approved => ("plan-review approved", "Approved"),
                    Verdict::NeedsChanges => ("plan-review needs-changes", "Changes asked"),
                };
                view! { <div class=class><strong>{word}</strong>" — "{review.notes}</div> }
            });
            view! {
                <div class="plan-card">
                    <div class="plan-id">{format!("Plan {plan_id}")}</div>
                    <ol class="plan-steps">{items}</ol>
                    {verdict}
                </div>
            }
        })
    }
}

/// The question in the card's slot: the tool, its full arguments, its category,
/// which subtask asked, and what "Allow for this chat" would grant.
fn approval_card(turn: ArcRwSignal<TurnView>, request: ToolApprovalRequest) -> impl IntoView {
    let ctx = ctx();
    let allow: NodeRef<leptos::html::Button> = NodeRef::new();
    // Keyboard users land on the question, unless they are writing a message.
    Effect::new(move |_| {
        if let Some(button) = allow.get()
            && ctx.chat.composer.with_untracked(|text| text.is_empty())
        {
            let _ = button.focus();
        }
    });
    let args = serde_json::to_string_pretty(&request.args).unwrap_or_default();
    let approval_id = request.approval_id.clone();
    let grant = request
        .session_grant
        .clone()
        .unwrap_or_else(|| request.name.clone());
    let decide = move |decision: ApprovalDecision| {
        let turn = turn.clone();
        let approval_id = request.approval_id.clone();
        move |_| actions::answer(ctx, turn.clone(), approval_id.clone(), decision)
    };
    view! {
        <div class="approval" role="group" aria-label="Approval needed" data-approval=approval_id>
            <div class="approval-title">
                "Allow " <code>{request.name.clone()}</code> "?"
                <span class=format!("badge cat-{}", request.category.as_str())>{request.category.as_str()}</span>
            </div>
            {request.action.clone().map(|action| view! { <div class="approval-action">{action}</div> })}
            {request.subtask_title.clone().map(|title| view! {
                <div class="approval-from">"Asked by the subtask “" {title} "”"</div>
            })}
            {match request.preview.clone() {
                Some(preview) => view! {
                    {preview_view(preview)}
                    {args_details(args)}
                }.into_any(),
                None => view! { <pre class="approval-args">{args}</pre> }.into_any(),
            }}
            <p class="approval-grant">
                "“Allow for this chat” lets " <code>{grant}</code> " run without asking again in this chat."
            </p>
            <div class="approval-buttons">
                <button class="primary" node_ref=allow on:click=decide(ApprovalDecision::Allow)>
                    "Allow" <kbd>"Y"</kbd>
                </button>
                <button on:click=decide(ApprovalDecision::AllowSession)>
                    "Allow for this chat" <kbd>"A"</kbd>
                </button>
                <button class="danger" on:click=decide(ApprovalDecision::Deny)>
                    "Deny" <kbd>"N"</kbd>
                </button>
            </div>
        </div>
    }
}

/// What the call would do: the diff of a write, a new file's content, a command as a
/// shell line in its folder.
fn preview_view(preview: ApprovalPreview) -> AnyView {
    let changes_nothing = preview.changes_nothing();
    match preview {
        ApprovalPreview::Diff { path, .. } if changes_nothing => view! {
            <div class="preview-path no-change">
                "No change to " <code>{path}</code> ": it already holds exactly this."
            </div>
        }
        .into_any(),
        ApprovalPreview::Diff { path, diff } => view! {
            <div class="preview-path">"Changes to " <code>{path}</code></div>
            {diff_view(&diff)}
        }
        .into_any(),
        ApprovalPreview::NewFile { path, content } => view! {
            <div class="preview-path">"New file " <code>{path}</code></div>
            <pre class="approval-new-file">{content}</pre>
        }
        .into_any(),
        ApprovalPreview::Command { folder, command } => view! {
            <pre class="approval-command"><span class="shell-folder">{folder}</span>" $ "{command}</pre>
        }
        .into_any(),
    }
}

/// How the turn stands or ended: the state chip while it runs, then a budget
/// notice, an error with Retry, or a plan to run.
#[derive(Debug, Clone, PartialEq)]
struct Ending {
    chip: Option<String>,
    /// The model server the answer came from, when not the thread's own.
    server: Option<String>,
    finished: Option<TurnStatus>,
    budget: Option<String>,
    /// The answer was cut before the model finished it: what the user is told.
    cut: Option<&'static str>,
    prompt_cut: Option<String>,
    error: Option<String>,
    plan: bool,
    /// A `create_plan` draft of this answer, by its id.
    draft: Option<String>,
}

impl Ending {
    fn of(view: &TurnView) -> Self {
        Self {
            chip: Self::chip(view),
            server: view.server.clone(),
            finished: view.finished,
            budget: view.budget.as_ref().map(format::budget),
            cut: view.cut.map(Cut::said),
            prompt_cut: view.prompt_cut.as_ref().map(PromptCut::said),
            error: view.error.as_ref().map(|error| error.message.clone()),
            plan: view.plan.is_some(),
            draft: view.draft.clone(),
        }
    }

    /// What the turn is doing while nothing else moves: once the answer streams, its
    /// text is the sign of life.
    fn chip(view: &TurnView) -> Option<String> {
        if view.finished.is_some() || view.writing {
            return None;
        }
        Some(match (&view.waiting_for_slot, &view.reading) {
            (Some(server), _) => format!("Waiting for a free slot on {server}…"),
            (None, Some(reading))
                if reading.worth_showing()
                    && view.state == Some(cairn_protocol::AgentStateKind::Thinking) =>
            {
                format::reading(reading)
            }
            (None, _) => view
                .state
                .and_then(format::state_chip)
                .unwrap_or("Thinking…")
                .to_owned(),
        })
    }
}

/// Which answer an ending belongs to, and whether it is the thread's last (the one
/// that may be answered again or carried on).
#[derive(Clone)]
struct Answer {
    entry_id: String,
    is_last: bool,
    turn: ArcRwSignal<TurnView>,
}

fn ending(entry_id: String, turn: ArcRwSignal<TurnView>) -> impl IntoView {
    let ctx = ctx();
    // A restore being looked at: what it would do, before the user says do it.
    let restoring = RwSignal::new(None::<super::restore::Restoring>);
    let ending = ArcMemo::new({
        let turn = turn.clone();
        move |_| turn.with(Ending::of)
    });
    move || {
        let ending = ending.get();
        let answer = Answer {
            is_last: ctx
                .chat
                .entries
                .with(|entries| entries.last().map(EntryView::id))
                == Some(entry_id.clone()),
            entry_id: entry_id.clone(),
            turn: turn.clone(),
        };
        let plan_mode = ctx.chats.current.with(|thread| {
            thread
                .as_ref()
                .is_some_and(|t| t.mode == PermissionMode::Plan)
        });
        let offers_plan = ending.plan
            && ending.draft.is_none()
            && answer.is_last
            && plan_mode
            && ending.finished.is_some();
        view! {
            {ending.chip.clone().map(|chip| view! { <div class="chip" role="status"><span class="spinner"></span>{chip}</div> })}
            {ending.server.clone().filter(|_| ending.finished.is_some()).map(|server| view! {
                <div class="answer-server muted">{format!("Answered on {server}")}</div>
            })}
            {ending.budget.clone().map(|text| view! { <div class="notice budget">{text}</div> })}
            {ending.prompt_cut.clone().map(|text| view! { <div class="notice cut prompt-cut" role="status">{text}</div> })}
            {ending.cut.map(|text| view! { <div class="notice cut" role="status">{text}</div> })}
            {(ending.finished == Some(TurnStatus::Cancelled)).then(|| view! { <div class="notice muted">"Stopped."</div> })}
            {error_notice(&answer, &ending)}
            {draft_notice(&answer, &ending)}
            {ending.finished.is_some().then(|| answer_actions(&answer, ending.error.is_some(), restoring))}
            {offers_plan.then(plan_notice)}
        }
    }
}

fn error_notice(answer: &Answer, ending: &Ending) -> Option<impl IntoView + use<>> {
    let message = ending.error.clone()?;
    let ctx = ctx();
    // Offered once the turn is over: until its `done`, the thread is busy.
    let retry = (answer.is_last && ending.finished.is_some()).then(|| {
        let entry_id = answer.entry_id.clone();
        view! {
            <button class="retry" on:click=move |_| actions::answer_again(ctx, entry_id.clone(), actions::Again::Retry)>"Retry"</button>
        }
    });
    Some(view! {
        <div class="notice error" role="alert">
            <span>{message}</span>
            {retry}
        </div>
    })
}

fn draft_notice(answer: &Answer, ending: &Ending) -> Option<impl IntoView + use<>> {
    let plan_id = ending
        .draft
        .clone()
        .filter(|_| answer.is_last && ending.finished == Some(TurnStatus::Completed))?;
    let ctx = ctx();
    let run_id = plan_id.clone();
    let ask_id = plan_id.clone();
    Some(view! {
        <div class="notice plan draft">
            <span>{format!("Plan {plan_id} is a draft: nothing ran yet.")}</span>
            <button class="primary run-draft" on:click=move |_| actions::run_draft(ctx, run_id.clone(), None)>"Run it"</button>
            <button class="run-draft-asking" on:click=move |_| actions::run_draft(ctx, ask_id.clone(), Some(PermissionMode::Default))>"Run, asking before changes"</button>
        </div>
    })
}

/// A finished answer can be copied; the last one, once it ended without failing (a
/// failure offers Retry), can be given again.
fn answer_actions(
    answer: &Answer,
    failed: bool,
    restoring: RwSignal<Option<super::restore::Restoring>>,
) -> impl IntoView + use<> {
    let ctx = ctx();
    let entry_id = answer.entry_id.clone();
    let turn = answer.turn.clone();
    view! {
        <div class="answer-actions">
            {(answer.is_last && !failed).then(|| view! {
                <button class="ghost regenerate" title="Answer the same question again, in this answer's place"
                    on:click=move |_| actions::answer_again(ctx, entry_id.clone(), actions::Again::Regenerate)>"↻ Regenerate"</button>
            })}
            {copy_button(ctx, "copy-answer", "Copy this answer's text", {
                let turn = turn.clone();
                move || turn.with_untracked(TurnView::text)
            })}
            {super::restore::restore_button(turn.clone(), restoring)}
            {answer_usage(turn.clone())}
        </div>
        {super::restore::restore_panel(turn, restoring)}
    }
}

fn plan_notice() -> impl IntoView {
    let ctx = ctx();
    view! {
        <div class="notice plan">
            <span>"The plan is ready. Carry it out?"</span>
            <button class="primary" on:click=move |_| actions::run_plan(ctx, PermissionMode::Default)>"Run, asking before changes"</button>
            <button on:click=move |_| actions::run_plan(ctx, PermissionMode::Auto)>"Run without asking"</button>
        </div>
    }
}
