//! What the user's actions do: open a thread, send, stop, answer, export. Each
//! talks to the core and updates the shared signals; failures become a toast and
//! lose nothing (an unsent message goes back into the composer).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairn_protocol::desktop::commands::*;
use cairn_protocol::desktop::{CommandErrorKind, ExportFormat, NewThreadOptions, Sent};
use cairn_protocol::{ApprovalDecision, Event, PermissionMode, ThreadUsage};
use leptos::prelude::*;

use super::{Ctx, Draft, EntryView, Screen, ipc, now_ms};
use crate::pieces::{Pieces, Take};
use crate::slash::{self, LlmChange, Slash};
use crate::thread::{Entry, entries};
use crate::turn::TurnView;

/// Ids for entries the view makes before the core names them.
fn local_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

pub fn refresh_threads(ctx: Ctx) {
    leptos::task::spawn_local(async move {
        let page = ListThreads {
            offset: None,
            limit: None,
        };
        match ipc::call(&page).await {
            Ok(threads) => {
                // Keep the open thread's header in step (title, mode, workspace).
                if let Some(id) = ctx.current_id()
                    && let Some(fresh) = threads.iter().find(|t| t.id == id)
                {
                    ctx.chats.current.set(Some(fresh.clone()));
                }
                ctx.chats.threads.set(threads);
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

pub fn refresh_models(ctx: Ctx) {
    leptos::task::spawn_local(async move {
        let server = ListModels {
            dialect: None,
            base_url: None,
        };
        match ipc::call(&server).await {
            Ok(models) => ctx.chat.models.set(models),
            // No server yet: the picker says so; sending explains further.
            Err(_) => ctx.chat.models.set(Vec::new()),
        }
    });
}

/// Has a local model server read what the open chat's next turn would open with,
/// while the user writes the question (the shell sends nothing to a hosted API).
/// Once per chat, model, mode, folder and length: focusing the composer again asks
/// nothing new.
pub fn warm_prompt(ctx: Ctx) {
    // Untracked: the composer's focus effect runs this (focusing fires the event at
    // once), and must not come to depend on the chat's state and steal the focus back
    // from an approval whenever that changes.
    untrack(move || warm_prompt_now(ctx));
}

fn warm_prompt_now(ctx: Ctx) {
    thread_local! {
        static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    }
    let thread_id = ctx.current_id();
    if thread_id.as_deref().is_some_and(|id| ctx.is_running(id)) {
        return;
    }
    let question = WarmPrompt {
        thread_id,
        model: ctx.chat.model.get_untracked(),
        mode: ctx.chat.draft.with_untracked(|draft| draft.mode),
        workspace: ctx
            .chat
            .draft
            .with_untracked(|draft| draft.workspace.clone()),
    };
    let key = format!(
        "{:?}|{:?}|{:?}|{:?}|{}",
        question.thread_id,
        question.model,
        question.mode,
        question.workspace,
        ctx.chat.entries.with_untracked(Vec::len)
    );
    if LAST.with(|last| last.borrow().as_deref() == Some(key.as_str())) {
        return;
    }
    LAST.with(|last| *last.borrow_mut() = Some(key));
    leptos::task::spawn_local(async move {
        // Nothing to tell: a warm-up that cannot happen costs the user nothing.
        let _ = ipc::call(&question).await;
    });
}

pub fn new_chat(ctx: Ctx) {
    ctx.nav.narrow_sidebar.set(false);
    ctx.chats.generation.update(|g| *g += 1);
    ctx.chats.current.set(None);
    ctx.chat.entries.set(Vec::new());
    // The mode starts at Default, as a new chat's always does; the folder is the last.
    ctx.chat.draft.set(Draft {
        workspace: ctx.chat.last_workspace.get_untracked(),
        ..Draft::default()
    });
    ctx.chat.model.set(None);
    ctx.chat.usage.set(ThreadUsage::default());
    ctx.chat.editing.set(None);
    ctx.nav.screen.set(Screen::Chat);
    ctx.nav.focus.update(|n| *n += 1);
}

/// Reads again what the open chat's answers took (after it opens, and after each
/// answer in it ends).
pub fn refresh_usage(ctx: Ctx, thread_id: String) {
    let generation = ctx.chats.generation.get_untracked();
    leptos::task::spawn_local(async move {
        match ipc::call(&GetThreadUsage { thread_id }).await {
            Ok(usage) if ctx.chats.generation.get_untracked() == generation => {
                ctx.chat.usage.set(usage);
            }
            Ok(_) => {}
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Shows a thread: its stored messages, then, if a turn is running, the stream
/// from its start (what already streamed, then live).
pub fn open_thread(ctx: Ctx, thread_id: String) {
    ctx.nav.narrow_sidebar.set(false);
    ctx.chats.generation.update(|g| *g += 1);
    let generation = ctx.chats.generation.get_untracked();
    ctx.nav.screen.set(Screen::Chat);
    leptos::task::spawn_local(async move {
        let detail = match ipc::call(&LoadThread { thread_id }).await {
            Ok(detail) => detail,
            Err(err) => return ctx.say(err.message),
        };
        if ctx.chats.generation.get_untracked() != generation {
            return;
        }
        let mut views: Vec<EntryView> = entries(&detail.messages)
            .into_iter()
            .map(|entry| match entry {
                Entry::User { id, text } => EntryView::User { id, text },
                Entry::Assistant { id, view } => EntryView::Assistant {
                    id,
                    turn: ArcRwSignal::new(*view),
                },
                Entry::Synthetic { id, text, handover } => {
                    EntryView::Handover { id, handover, text }
                }
            })
            .collect();
        if detail.running {
            // The stored answer is partial: the live stream replaces it.
            let turn = ArcRwSignal::new(TurnView::new());
            if let Some(EntryView::Assistant { turn: last, .. }) = views.last_mut() {
                *last = turn.clone();
            }
            follow(
                ctx,
                Attach {
                    thread_id: detail.thread.id.clone(),
                },
                turn,
            );
        }
        ctx.chat.model.set(detail.thread.model.clone());
        ctx.chat.usage.set(ThreadUsage::default());
        ctx.chat.editing.set(None);
        refresh_usage(ctx, detail.thread.id.clone());
        ctx.chats.current.set(Some(detail.thread));
        ctx.chat.entries.set(views);
        ctx.nav.focus.update(|n| *n += 1);
    });
}

/// Streams a running turn's events into `turn`.
fn follow(ctx: Ctx, attach: Attach, turn: ArcRwSignal<TurnView>) {
    let (channel, _) = turn_channel(ctx, turn);
    leptos::task::spawn_local(async move {
        if let Err(err) = ipc::call_streaming(&attach, &channel).await {
            ctx.say(err.message);
        }
    });
}

/// Where a turn's events go: the answer they fill (none once `done` came), and the
/// streamed pieces waiting to be drawn.
struct Feed {
    target: RefCell<Option<ArcRwSignal<TurnView>>>,
    pieces: RefCell<Pieces>,
    /// The chat list's generation when the turn started: while it is the same, the
    /// turn's chat is the one on screen.
    generation: u64,
}

impl Feed {
    /// Applies `events` to the answer, in order, as one change.
    fn apply(&self, ctx: Ctx, events: &[Event]) {
        let target = self.target.borrow().clone();
        if let (Some(turn), false) = (target, events.is_empty()) {
            let now = now_ms();
            turn.update(|view| {
                for event in events {
                    view.apply(event, now);
                }
            });
            ctx.chat.stream_tick.update(|tick| *tick += 1);
        }
    }

    /// Whether the turn's chat is still the one on screen.
    fn shown(&self, ctx: Ctx) -> bool {
        ctx.chats.generation.get_untracked() == self.generation
    }

    /// Draws the held pieces at the next frame after `wait` ms.
    fn draw_in(feed: &Rc<Self>, ctx: Ctx, wait: f64) {
        let feed = Rc::clone(feed);
        let draw = move || {
            let pieces = feed.pieces.borrow_mut().draw(now_ms());
            feed.apply(ctx, &pieces);
        };
        if wait > 0.0 {
            set_timeout(
                move || request_animation_frame(draw),
                Duration::from_micros((wait * 1e3) as u64),
            );
        } else {
            request_animation_frame(draw);
        }
    }

    fn finished(&self, ctx: Ctx, done: &cairn_protocol::Done) {
        ctx.chats
            .running
            .update(|running| running.retain(|id| *id != done.thread_id));
        refresh_threads(ctx);
        if self.shown(ctx) {
            refresh_usage(ctx, done.thread_id.clone());
        }
        *self.target.borrow_mut() = None;
    }

    /// The next agent answers on: its follow-up and a fresh answer go under this one,
    /// and the rest of the stream fills that answer.
    fn hand_over(&self, ctx: Ctx, switched: &cairn_protocol::AgentSwitched) {
        let next = ArcRwSignal::new(TurnView::new());
        if self.shown(ctx) {
            ctx.chat.entries.update(|entries| {
                entries.push(EntryView::Handover {
                    id: local_id("handover"),
                    handover: Some(cairn_protocol::Handover {
                        from: switched.from.clone(),
                        to: switched.to.clone(),
                        reason: switched.reason.clone(),
                    }),
                    text: switched.follow_up.clone(),
                });
                entries.push(EntryView::Assistant {
                    id: switched.message_id.clone(),
                    turn: next.clone(),
                });
            });
            ctx.chats.current.update(|thread| {
                if let Some(thread) = thread.as_mut().filter(|t| t.id == switched.thread_id) {
                    thread.agent = Some(switched.to.clone());
                }
            });
        }
        *self.target.borrow_mut() = Some(next);
    }
}

/// A channel that applies a turn's events to `turn` and lets go of it at `done`, and
/// whether `done` came. A quick turn can end before the command that started it
/// returns (channel messages and the command's answer are not ordered): marking the
/// thread running after that would leave it "answering" for good. Streamed pieces are
/// applied at most once a frame (see [`Pieces`]).
fn turn_channel(ctx: Ctx, turn: ArcRwSignal<TurnView>) -> (ipc::Channel, Rc<Cell<bool>>) {
    let feed = Rc::new(Feed {
        target: RefCell::new(Some(turn)),
        pieces: RefCell::new(Pieces::new()),
        generation: ctx.chats.generation.get_untracked(),
    });
    let done = Rc::new(Cell::new(false));
    let seen_done = Rc::clone(&done);
    let channel = ipc::event_channel(move |event: Event| {
        if feed.target.borrow().is_none() {
            return;
        }
        let take = feed.pieces.borrow_mut().take(event, now_ms());
        let events = match take {
            Take::Held { wake_in_ms: None } => return,
            Take::Held {
                wake_in_ms: Some(wait),
            } => return Feed::draw_in(&feed, ctx, wait),
            Take::Apply(events) => events,
        };
        feed.apply(ctx, &events);
        if feed.shown(ctx)
            && let Some(words) = crate::announce::last_said(&events)
        {
            ctx.nav.announce.set(words);
        }
        // The event just taken in is the last applied.
        match events.last() {
            Some(Event::Done(done)) => {
                seen_done.set(true);
                feed.finished(ctx, done);
            }
            Some(Event::AgentSwitched(switched)) => feed.hand_over(ctx, switched),
            _ => {}
        }
    });
    (channel, done)
}

/// What the composer's Send does: a slash command, or a message.
pub fn submit(ctx: Ctx) {
    let text = ctx.chat.composer.get_untracked();
    if text.trim().is_empty() {
        return;
    }
    ctx.nav.follow.update(|n| *n += 1);
    match slash::parse(&text) {
        Some(Ok(command)) => {
            ctx.chat.composer.set(String::new());
            run_slash(ctx, command);
        }
        Some(Err(problem)) => ctx.say(problem.to_string()),
        None => {
            ctx.chat.composer.set(String::new());
            send(ctx, text);
        }
    }
}

/// Sends `prompt` in the open thread (or starts one). The message shows at once;
/// if the core refuses it, it goes back into the composer.
pub fn send(ctx: Ctx, prompt: String) {
    let thread_id = ctx.current_id();
    if let Some(id) = &thread_id
        && ctx.is_running(id)
    {
        ctx.chat.composer.set(prompt);
        return ctx.say("This chat is still answering: wait for it or press Stop.");
    }
    let draft = ctx.chat.draft.get_untracked();
    let command = SendMessage {
        thread_id,
        prompt: prompt.clone(),
        options: Some(NewThreadOptions {
            mode: draft.mode,
            workspace: draft.workspace,
            agent: draft.agent,
        }),
        model: ctx.chat.model.get_untracked(),
    };
    start_turn(ctx, command, prompt, true);
}

/// Carries out the open plan-mode thread's plan in `mode`.
pub fn run_plan(ctx: Ctx, mode: PermissionMode) {
    let Some(thread_id) = ctx.current_id() else {
        return;
    };
    start_turn(
        ctx,
        RunPlan {
            thread_id,
            mode,
            plan_id: None,
        },
        PLAN_STAND_IN.to_owned(),
        false,
    );
}

/// Runs the open thread's draft `plan_id`: in `mode`, else the thread's own (a
/// Plan-mode thread runs it in Auto, since nothing runs in Plan mode).
pub fn run_draft(ctx: Ctx, plan_id: String, mode: Option<PermissionMode>) {
    let Some(thread_id) = ctx.current_id() else {
        return;
    };
    let mode = mode.unwrap_or_else(|| match current_mode(ctx) {
        PermissionMode::Plan => PermissionMode::Auto,
        other => other,
    });
    start_turn(
        ctx,
        RunPlan {
            thread_id,
            mode,
            plan_id: Some(plan_id),
        },
        PLAN_STAND_IN.to_owned(),
        false,
    );
}

/// What the window shows of a plan's run until the core says the message it asked
/// with (`Sent::question`): the core words it, for the model.
const PLAN_STAND_IN: &str = "Run the plan";

/// Shows `prompt` and a new answer at once, then starts the turn with `command`; a
/// question the core worded itself replaces `prompt` once it says so. If the core
/// refuses, both go; a typed message (`typed`) goes back into the composer.
fn start_turn<C>(ctx: Ctx, command: C, prompt: String, typed: bool)
where
    C: Streaming<Reply = Sent> + 'static,
{
    ctx.nav.follow.update(|n| *n += 1);
    let user_id = local_id("user");
    let turn_id = local_id("turn");
    let turn = ArcRwSignal::new(TurnView::new());
    ctx.chat.entries.update(|entries| {
        entries.push(EntryView::User {
            id: user_id.clone(),
            text: prompt.clone(),
        });
        entries.push(EntryView::Assistant {
            id: turn_id.clone(),
            turn: turn.clone(),
        });
    });
    let generation = ctx.chats.generation.get_untracked();
    let (channel, done) = turn_channel(ctx, turn);
    leptos::task::spawn_local(async move {
        match ipc::call_streaming(&command, &channel).await {
            Ok(sent) => {
                if let Some(question) = sent.question {
                    // Under a new key: the list draws an entry once per key.
                    ctx.chat.entries.update(|entries| {
                        if let Some(asked) = entries.iter_mut().find(|e| e.id() == user_id) {
                            *asked = EntryView::User {
                                id: local_id("user"),
                                text: question,
                            };
                        }
                    });
                }
                mark_running(ctx, sent.thread_id.clone(), &done);
                if ctx.chats.generation.get_untracked() == generation && ctx.current_id().is_none()
                {
                    adopt_new_thread(ctx, sent.thread_id);
                } else {
                    refresh_threads(ctx);
                }
            }
            Err(err) => {
                ctx.chat
                    .entries
                    .update(|entries| entries.retain(|e| e.id() != user_id && e.id() != turn_id));
                if ctx.chat.composer.get_untracked().trim().is_empty() && typed {
                    ctx.chat.composer.set(prompt);
                }
                if err.kind == CommandErrorKind::NoModel {
                    refresh_models(ctx);
                }
                ctx.say(err.message);
            }
        }
    });
}

/// How the last question is answered again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Again {
    /// After a failed answer.
    Retry,
    /// After any answer: another one to the same question.
    Regenerate,
    /// The question rewritten as this first.
    Edit(String),
}

/// Answers the open thread's last question again, its answer (`entry_id`) giving way.
/// The new answer takes the old one's place once the core starts it; if it cannot,
/// the old answer (and the question as it was) stays and the reason is shown.
pub fn answer_again(ctx: Ctx, entry_id: String, again: Again) {
    // The turn knows its thread; a brand-new chat may not have adopted it yet.
    let answered_in = ctx.chat.entries.with_untracked(|entries| {
        entries.iter().find_map(|entry| match entry {
            EntryView::Assistant { id, turn } if *id == entry_id => {
                turn.with_untracked(|view| view.thread_id.clone())
            }
            _ => None,
        })
    });
    let Some(thread_id) = answered_in.or_else(|| ctx.current_id()) else {
        return;
    };
    if ctx.is_running(&thread_id) {
        return ctx.say("This chat is still answering: wait for it or press Stop.");
    }
    ctx.nav.follow.update(|n| *n += 1);
    let turn = ArcRwSignal::new(TurnView::new());
    let (channel, done) = turn_channel(ctx, turn.clone());
    let generation = ctx.chats.generation.get_untracked();
    leptos::task::spawn_local(async move {
        // The model picked now, on the server Settings name now.
        let model = ctx
            .chat
            .model
            .get_untracked()
            .or_else(|| ctx.config.settings.with_untracked(|s| s.model.clone()));
        match ask_again(&again, thread_id, model, &channel).await {
            Ok(sent) => {
                // What it took over from the answer it replaces; its own writes join
                // as they come (some may have come already).
                turn.update(|view| {
                    for path in sent.restorable {
                        if !view.restorable.contains(&path) {
                            view.restorable.push(path);
                        }
                    }
                });
                mark_running(ctx, sent.thread_id, &done);
                if ctx.chats.generation.get_untracked() == generation {
                    ctx.chat.editing.set(None);
                    answer_in_place(ctx, &entry_id, turn, again);
                }
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

async fn ask_again(
    again: &Again,
    thread_id: String,
    model: Option<String>,
    channel: &ipc::Channel,
) -> Result<Sent, cairn_protocol::desktop::CommandError> {
    let question = match again {
        Again::Retry => {
            let retry = RetryTurn { thread_id, model };
            return ipc::call_streaming(&retry, channel).await;
        }
        Again::Regenerate => None,
        Again::Edit(text) => Some(text.clone()),
    };
    let redo = RedoTurn {
        thread_id,
        question,
        model,
    };
    ipc::call_streaming(&redo, channel).await
}

/// The new answer in the old one's place, under the question as rewritten if it was.
fn answer_in_place(ctx: Ctx, entry_id: &str, turn: ArcRwSignal<TurnView>, again: Again) {
    ctx.chat.entries.update(|entries| {
        let Some(at) = entries.iter().position(|e| e.id() == entry_id) else {
            return;
        };
        entries[at] = EntryView::Assistant {
            id: local_id("turn"),
            turn,
        };
        // The question as rewritten, under a new key: the list draws an entry once
        // per key.
        if let Again::Edit(text) = again
            && let Some(asked) = entries[..at]
                .iter_mut()
                .rev()
                .find(|e| matches!(e, EntryView::User { .. }))
        {
            *asked = EntryView::User {
                id: local_id("user"),
                text,
            };
        }
    });
}

/// Shows a thread as running once the command that started its turn returned, unless
/// the turn's `done` already came on its channel.
fn mark_running(ctx: Ctx, thread_id: String, done: &Cell<bool>) {
    if done.get() {
        return;
    }
    ctx.chats.running.update(|running| {
        if !running.contains(&thread_id) {
            running.push(thread_id);
        }
    });
}

/// A new chat got its thread: it becomes the open one without reloading the view.
fn adopt_new_thread(ctx: Ctx, thread_id: String) {
    leptos::task::spawn_local(async move {
        let page = ListThreads {
            offset: None,
            limit: None,
        };
        if let Ok(threads) = ipc::call(&page).await {
            if let Some(thread) = threads.iter().find(|t| t.id == thread_id) {
                ctx.chat.model.set(thread.model.clone());
                ctx.chats.current.set(Some(thread.clone()));
            }
            ctx.chats.threads.set(threads);
        }
    });
}

pub fn stop(ctx: Ctx) {
    let Some(thread_id) = ctx.current_id() else {
        return;
    };
    leptos::task::spawn_local(async move {
        if let Err(err) = ipc::call(&StopTurn { thread_id }).await {
            ctx.say(err.message);
        }
    });
}

pub fn answer(
    ctx: Ctx,
    turn: ArcRwSignal<TurnView>,
    approval_id: String,
    decision: ApprovalDecision,
) {
    leptos::task::spawn_local(async move {
        let answer = AnswerApproval {
            approval_id: approval_id.clone(),
            decision,
        };
        match ipc::call(&answer).await {
            Ok(()) => {
                turn.update(|view| view.answered(&approval_id));
                focus_after_answer(ctx, &approval_id);
            }
            Err(err) => {
                // Answered elsewhere or its turn ended: the card cannot wait any more.
                if err.kind == CommandErrorKind::NotFound {
                    turn.update(|view| view.answered(&approval_id));
                }
                ctx.say(err.message);
            }
        }
    });
}

/// After an answer the keys go on to the next question still open, else back to the
/// composer, where the keyboard user left off.
fn focus_after_answer(ctx: Ctx, answered: &str) {
    // The answered card may not have left the page yet: it is passed over by its id.
    let others = format!(".approval:not([data-approval='{answered}']) .approval-buttons .primary");
    let next = web_sys::window()
        .and_then(|window| window.document())
        .and_then(|document| document.query_selector(&others).ok().flatten())
        .and_then(|element| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(element).ok());
    match next {
        Some(button) => drop(button.focus()),
        None => ctx.nav.focus.update(|n| *n += 1),
    }
}

pub fn set_mode(ctx: Ctx, mode: PermissionMode) {
    let Some(thread_id) = ctx.current_id() else {
        return ctx.chat.draft.update(|draft| draft.mode = mode);
    };
    leptos::task::spawn_local(async move {
        match ipc::call(&SetMode { thread_id, mode }).await {
            Ok(thread) => {
                if ctx.is_running(&thread.id) {
                    ctx.say("The new mode applies from the next message.");
                }
                ctx.chats.current.set(Some(thread));
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Gives the open chat (or the new one) the agent `id` from its next message on.
pub fn set_agent(ctx: Ctx, id: String) {
    ctx.nav.agent_menu.set(false);
    let Some(thread_id) = ctx.current_id() else {
        // Checked here, against the list: a new chat has nothing stored to refuse it.
        let usable = ctx.chat.agents.with_untracked(|agents| {
            agents
                .iter()
                .any(|a| a.id == id && a.error.is_none() && !a.hidden)
        });
        if usable || ctx.chat.agents.with_untracked(Vec::is_empty) {
            ctx.chat.draft.update(|draft| draft.agent = Some(id));
        } else {
            ctx.say(format!(
                "There is no agent `{id}` for a chat; /agents lists them."
            ));
        }
        return;
    };
    leptos::task::spawn_local(async move {
        match ipc::call(&SetAgent {
            thread_id,
            agent: id,
        })
        .await
        {
            Ok(thread) => {
                if ctx.is_running(&thread.id) {
                    ctx.say("The new agent answers from the next message.");
                }
                ctx.chats.current.set(Some(thread));
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Lists the agent profiles again (the user may have added a file).
pub fn refresh_agents(ctx: Ctx) {
    leptos::task::spawn_local(async move {
        match ipc::call(&ListAgents {
            thread_id: ctx.current_id(),
        })
        .await
        {
            Ok(agents) => ctx.chat.agents.set(agents),
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Sets the open thread's folder (or the new chat's); `None` clears it.
pub fn set_workspace(ctx: Ctx, folder: Option<String>) {
    leptos::task::spawn_local(async move {
        match (ctx.current_id(), folder) {
            (Some(thread_id), folder) => {
                match ipc::call(&SetWorkspace { thread_id, folder }).await {
                    Ok(thread) => {
                        if thread.workspace.is_some() {
                            ctx.chat.last_workspace.set(thread.workspace.clone());
                        }
                        ctx.chats.current.set(Some(thread));
                    }
                    Err(err) => ctx.say(err.message),
                }
            }
            (None, Some(folder)) => match ipc::call(&CheckWorkspace { folder }).await {
                Ok(folder) => {
                    ctx.chat.last_workspace.set(Some(folder.clone()));
                    ctx.chat
                        .draft
                        .update(|draft| draft.workspace = Some(folder));
                }
                Err(err) => ctx.say(err.message),
            },
            (None, None) => ctx.chat.draft.update(|draft| draft.workspace = None),
        }
    });
}

/// Opens a link from an answer in the system's browser; a refused one is explained.
pub fn open_link(ctx: Ctx, url: String) {
    leptos::task::spawn_local(async move {
        if let Err(err) = ipc::call(&OpenLink { url }).await {
            ctx.say(err.message);
        }
    });
}

pub fn export(ctx: Ctx, thread_id: String, format: ExportFormat) {
    leptos::task::spawn_local(async move {
        match ipc::call(&ExportThread { thread_id, format }).await {
            Ok(Some(path)) => ctx.say(format!("Saved to {path}")),
            Ok(None) => {}
            Err(err) => ctx.say(err.message),
        }
    });
}

fn notice(ctx: Ctx, text: String) {
    ctx.chat.entries.update(|entries| {
        entries.push(EntryView::Notice {
            id: local_id("notice"),
            text,
        });
    });
}

fn run_slash(ctx: Ctx, command: Slash) {
    match command {
        Slash::Help => notice(ctx, slash::help()),
        Slash::Tools => list_tools(ctx),
        Slash::Mode(None) => {
            let mode = current_mode(ctx);
            notice(
                ctx,
                format!(
                    "Mode: {} — {}",
                    crate::format::mode_label(mode),
                    crate::format::mode_hint(mode)
                ),
            );
        }
        Slash::Mode(Some(mode)) => set_mode(ctx, mode),
        Slash::Model(None) => {
            let model = ctx
                .chat
                .model
                .get_untracked()
                .or_else(|| ctx.config.settings.with_untracked(|s| s.model.clone()));
            let text = match model {
                Some(model) => format!("Model: {model}"),
                None => {
                    "No model is chosen; pick one in the menu below the message box.".to_owned()
                }
            };
            notice(ctx, text);
        }
        Slash::Model(Some(model)) => {
            ctx.chat.model.set(Some(model.clone()));
            notice(ctx, format!("The next message goes to {model}."));
        }
        Slash::Agent(None) => notice(ctx, format!("Agent: {}", ctx.agent())),
        Slash::Agent(Some(id)) => set_agent(ctx, id),
        Slash::Agents => list_agents(ctx),
        Slash::Llm(change) => llm(ctx, change),
        Slash::Mcp => list_mcp_servers(ctx),
        Slash::Clear => new_chat(ctx),
        Slash::Export(format) => match ctx.current_id() {
            Some(id) => export(ctx, id, format),
            None => ctx.say("Nothing to export yet: this chat has no messages."),
        },
    }
}

/// `/tools`: the tools a message here may use, and how to get the file ones.
fn list_tools(ctx: Ctx) {
    leptos::task::spawn_local(async move {
        let listing = ListTools {
            thread_id: ctx.current_id(),
        };
        match ipc::call(&listing).await {
            Ok(tools) => {
                let lines: Vec<String> = tools
                    .iter()
                    .map(|tool| {
                        format!(
                            "{} ({}) — {}",
                            tool.name,
                            tool.category.as_str(),
                            first_line(&tool.description)
                        )
                    })
                    .collect();
                let folder = if ctx
                    .chats
                    .current
                    .with_untracked(|t| t.as_ref().is_some_and(|t| t.workspace.is_some()))
                    || ctx.chat.draft.with_untracked(|d| d.workspace.is_some())
                {
                    ""
                } else {
                    "\nChoose a folder to add the file and command tools."
                };
                notice(ctx, format!("Tools:\n{}{folder}", lines.join("\n")));
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

/// `/agents`: the profiles a chat can run as, and the files that were skipped.
fn list_agents(ctx: Ctx) {
    leptos::task::spawn_local(async move {
        let listing = ListAgents {
            thread_id: ctx.current_id(),
        };
        match ipc::call(&listing).await {
            Ok(agents) => {
                let lines: Vec<String> = agents
                    .iter()
                    .filter(|a| !a.hidden && a.error.is_none())
                    .map(|a| format!("{} — {}", a.id, first_line(&a.description)))
                    .chain(agents.iter().filter_map(|a| {
                        let error = a.error.as_ref()?;
                        Some(format!(
                            "skipped {}: {error}",
                            a.path.as_deref().unwrap_or(&a.id)
                        ))
                    }))
                    .collect();
                ctx.chat.agents.set(agents);
                notice(
                    ctx,
                    format!("Agents (/agent ID to choose):\n{}", lines.join("\n")),
                );
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

/// `/mcp`: the MCP servers, how each stands, and the tools they give.
fn list_mcp_servers(ctx: Ctx) {
    leptos::task::spawn_local(async move {
        let tools = ListTools {
            thread_id: ctx.current_id(),
        };
        let listed = match ipc::call(&ListMcpServers {}).await {
            Ok(servers) => ipc::call(&tools).await.map(|tools| (servers, tools)),
            Err(err) => Err(err),
        };
        match listed {
            Ok((servers, tools)) => notice(ctx, crate::format::mcp_listing(&servers, &tools)),
            Err(err) => ctx.say(err.message),
        }
    });
}

/// `/llm`: the open chat's model parameters (a new chat's are the defaults), shown or
/// changed, then shown.
fn llm(ctx: Ctx, change: LlmChange) {
    leptos::task::spawn_local(async move {
        let thread_id = ctx.current_id();
        let scope = if thread_id.is_some() {
            "this chat"
        } else {
            "the defaults for new chats"
        };
        let view = match change {
            LlmChange::Show => ipc::call(&GetLlm { thread_id }).await,
            LlmChange::Set(key, value) => {
                ipc::call(&SetLlm {
                    thread_id,
                    key: Some(key),
                    value: Some(value),
                })
                .await
            }
            LlmChange::Reset(key) => {
                ipc::call(&SetLlm {
                    thread_id,
                    key,
                    value: None,
                })
                .await
            }
        };
        match view {
            Ok(view) => {
                let in_settings = ctx.config.settings.with_untracked(|s| s.llm_params());
                let lines: Vec<String> = cairn_protocol::LLM_KEYS
                    .iter()
                    .map(|key| {
                        let from = match view.source(key) {
                            Some(cairn_protocol::LlmSource::Thread) => " (this chat)",
                            Some(cairn_protocol::LlmSource::Default) => " (default)",
                            None => "",
                        };
                        // Unset here, the value in force is Settings', else the server's.
                        let value = view.effective.get(key).map_or_else(
                            || match in_settings.get(key) {
                                Some(value) => format!("{value} (Settings)"),
                                None if *key == "model" => "the one chosen below".to_owned(),
                                None => "the server's default".to_owned(),
                            },
                            |value| format!("{value}{from}"),
                        );
                        format!("{key}: {value}")
                    })
                    .collect();
                notice(
                    ctx,
                    format!("Model parameters ({scope}):\n{}", lines.join("\n")),
                );
            }
            Err(err) => ctx.say(err.message),
        }
    });
}

pub fn current_mode(ctx: Ctx) -> PermissionMode {
    ctx.chats
        .current
        .with_untracked(|thread| thread.as_ref().map(|t| t.mode))
        .unwrap_or_else(|| ctx.chat.draft.with_untracked(|d| d.mode))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn set_zoom(ctx: Ctx, percent: u16) {
    leptos::task::spawn_local(async move {
        match ipc::call(&SetZoom { percent }).await {
            Ok(percent) => ctx.config.settings.update(|s| s.zoom_percent = percent),
            Err(err) => ctx.say(err.message),
        }
    });
}

/// Esc puts away the chats covering a narrow window, else stops the open thread's
/// turn, from anywhere (the composer has the focus most of the time). Ctrl+= / Ctrl+- / Ctrl+0 zoom the page. Y / A / N answer the first approval waiting in it, unless the key goes
/// into a text field.
pub fn keyboard_shortcuts(ctx: Ctx) {
    let handle = window_event_listener(leptos::ev::keydown, move |event| {
        if event.key() == "Escape" {
            if escape(ctx) {
                event.prevent_default();
            }
            return;
        }
        if ctx.nav.confirm_quit.get_untracked() {
            // The quit question has the keyboard.
            return;
        }
        if event.ctrl_key() && !event.alt_key() && !event.meta_key() {
            let current = ctx.config.settings.with_untracked(|s| s.zoom_percent);
            if let Some(percent) = crate::zoom::step(current, &event.key()) {
                event.prevent_default();
                set_zoom(ctx, percent);
            }
            return;
        }
        if event.ctrl_key() || event.alt_key() || event.meta_key() || typing(&event) {
            return;
        }
        let decision = match event.key().as_str() {
            "y" | "Y" => ApprovalDecision::Allow,
            "a" | "A" => ApprovalDecision::AllowSession,
            "n" | "N" => ApprovalDecision::Deny,
            _ => return,
        };
        if let Some((turn, approval_id)) = first_waiting_approval(ctx) {
            event.prevent_default();
            answer(ctx, turn, approval_id, decision);
        }
    });
    // The listener lives as long as the app.
    std::mem::forget(handle);
    // A click anywhere but in an open menu (or on its own button) closes it.
    let clicks = window_event_listener(leptos::ev::mousedown, move |event| {
        use wasm_bindgen::JsCast;
        let within = |selector: &str| {
            event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .and_then(|element| element.closest(selector).ok().flatten())
                .is_some()
        };
        if ctx.nav.open_menu.with_untracked(Option::is_some)
            && !within(".menu, .thread-menu, .head-menu")
        {
            ctx.nav.open_menu.set(None);
        }
        if ctx.nav.agent_menu.get_untracked() && !within(".agent-wrap") {
            ctx.nav.agent_menu.set(false);
        }
    });
    std::mem::forget(clicks);
}

/// What Escape closes, the innermost first: the quit question (Cairn keeps running),
/// a menu, the narrow window's chat list; else it stops the chat's turn. Whether the
/// key stopped a turn (the page then does nothing else with it).
fn escape(ctx: Ctx) -> bool {
    if ctx.nav.confirm_quit.get_untracked() {
        ctx.nav.confirm_quit.set(false);
    } else if ctx.nav.open_menu.with_untracked(Option::is_some) {
        ctx.nav.open_menu.set(None);
    } else if ctx.nav.agent_menu.get_untracked() {
        ctx.nav.agent_menu.set(false);
    } else if ctx.nav.narrow_sidebar.get_untracked() {
        ctx.nav.narrow_sidebar.set(false);
    } else if ctx.current_id().is_some_and(|id| ctx.is_running(&id)) {
        stop(ctx);
        return true;
    }
    false
}

/// The first approval on screen still waiting for an answer, and its turn.
fn first_waiting_approval(ctx: Ctx) -> Option<(ArcRwSignal<TurnView>, String)> {
    ctx.chat.entries.with_untracked(|entries| {
        entries.iter().find_map(|entry| match entry {
            EntryView::Assistant { turn, .. } => turn
                .with_untracked(|view| {
                    view.pending_approvals()
                        .first()
                        .map(|a| a.approval_id.clone())
                })
                .map(|id| (turn.clone(), id)),
            _ => None,
        })
    })
}

/// Whether a key goes into a text field (then it is text, not a shortcut).
fn typing(event: &leptos::ev::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    event
        .target()
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|element| {
            matches!(element.tag_name().as_str(), "TEXTAREA" | "INPUT" | "SELECT")
        })
}
