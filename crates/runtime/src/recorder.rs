//! Committing a running turn as it goes.
//!
//! events + journaled messages → one writer task → the assistant row, rewritten at
//! every tool boundary (a call starting or ending, a message journaled) and at most
//! every [`TEXT_FLUSH`] while text streams → the final commit with usage and the
//! model-call log. A crash, `kill -9`, a budget or Stop loses at most the text of the
//! last [`TEXT_FLUSH`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cairn_core::workspace::{Before, WriteLog};
use cairn_core::{CommitError, Journal, TreeBuilder, TurnOutcome, TurnPersistence};
use cairn_protocol::{ChatMessage, Event, MessageStatus, ToolCallStatus, TurnStatus, preview_cuts};
use cairn_store::{AnswerSnapshot, FileCheckpoint, Store, StoreError};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Longest a stretch of streamed text waits before it is written.
pub const TEXT_FLUSH: Duration = Duration::from_millis(250);

/// The persistence of one turn, in the store. Create it after [`Store::begin_turn`].
#[derive(Debug)]
pub struct Recorder {
    notes: mpsc::UnboundedSender<Note>,
}

#[derive(Debug)]
enum Note {
    // Boxed: an event is several times the size of the other notes.
    Event(Box<Event>),
    Root(ChatMessage),
    Commit(Box<TurnOutcome>, oneshot::Sender<Result<(), CommitError>>),
    /// A file the turn wrote, for the answer's checkpoint.
    Wrote(Box<FileCheckpoint>),
}

impl Recorder {
    /// Starts the writer for the assistant message `message_id` of `thread_id`.
    pub fn start(store: Store, thread_id: String, message_id: String) -> Arc<Self> {
        let (notes, receiver) = mpsc::unbounded_channel();
        tokio::spawn(write(store, thread_id, message_id, receiver));
        Arc::new(Self { notes })
    }
}

/// The turn's writes, kept with its answer as they happen (in order, by the one
/// writer: a path's first write keeps what was there before).
impl WriteLog for Recorder {
    fn wrote(&self, root: &Path, path: &str, before: Before, after: &[u8]) {
        self.keep(root, path, before, Some(after));
    }

    fn removed(&self, root: &Path, path: &str, before: Before) {
        self.keep(root, path, before, None);
    }
}

impl Recorder {
    fn keep(&self, root: &Path, path: &str, before: Before, after: Option<&[u8]>) {
        let (existed, before) = match before {
            Before::Absent => (false, None),
            Before::Held(bytes) => (true, Some(bytes)),
            Before::TooLarge => (true, None),
        };
        let _ = self.notes.send(Note::Wrote(Box::new(FileCheckpoint {
            path: path.to_owned(),
            workspace: root.display().to_string(),
            existed,
            before,
            after: after.map(<[u8]>::to_vec).unwrap_or_default(),
            removed: after.is_none(),
        })));
    }
}

impl Journal for Recorder {
    fn root_message(&self, message: &ChatMessage) {
        let _ = self.notes.send(Note::Root(message.clone()));
    }
}

#[async_trait]
impl TurnPersistence for Recorder {
    fn event(&self, event: &Event) {
        let _ = self.notes.send(Note::Event(Box::new(event.clone())));
    }

    async fn commit(&self, outcome: &TurnOutcome) -> Result<(), CommitError> {
        let (reply, answer) = oneshot::channel();
        self.notes
            .send(Note::Commit(Box::new(outcome.clone()), reply))
            .map_err(|_| CommitError::WriterGone)?;
        answer.await.unwrap_or(Err(CommitError::WriterGone))
    }
}

/// The assistant message as it builds up.
#[derive(Default)]
struct Draft {
    text: String,
    reasoning: String,
    replay: Vec<ChatMessage>,
    tree: TreeBuilder,
    /// A root message was journaled since the last text: the next text starts a new
    /// segment, separated as the final answer separates them.
    new_segment: bool,
}

impl Draft {
    /// Takes an event in; true when it is a tool boundary worth writing at once.
    fn apply(&mut self, event: &Event) -> bool {
        match event {
            Event::Chunk(chunk) => {
                self.tree.observe(event);
                if chunk.depth == 0 {
                    if self.new_segment && !self.text.is_empty() {
                        self.text.push_str("\n\n");
                    }
                    self.new_segment = false;
                    self.text.push_str(&chunk.content);
                }
                false
            }
            Event::Reasoning(reasoning) if reasoning.depth == 0 => {
                self.reasoning.push_str(&reasoning.content);
                false
            }
            Event::ToolCallUpdate(_) | Event::PlanCreated(_) | Event::PlanReview(_) => {
                self.tree.observe(event);
                true
            }
            _ => false,
        }
    }
}

async fn write(
    store: Store,
    thread_id: String,
    message_id: String,
    mut notes: mpsc::UnboundedReceiver<Note>,
) {
    let mut draft = Draft::default();
    let mut dirty = false;
    let mut last_flush = Instant::now();
    loop {
        let note = if dirty {
            match tokio::time::timeout_at(last_flush + TEXT_FLUSH, notes.recv()).await {
                Ok(note) => note,
                Err(_) => {
                    flush(&store, &thread_id, &message_id, &draft).await;
                    (dirty, last_flush) = (false, Instant::now());
                    continue;
                }
            }
        } else {
            notes.recv().await
        };
        let boundary = match note {
            None => {
                // The turn went away without committing (its task was dropped): keep
                // what there is, still marked partial.
                if dirty {
                    flush(&store, &thread_id, &message_id, &draft).await;
                }
                return;
            }
            Some(Note::Commit(outcome, reply)) => {
                let result = commit_turn(&store, &thread_id, &message_id, &outcome).await;
                let _ = reply.send(result.map_err(|err| CommitError::Store(Box::new(err))));
                return;
            }
            Some(Note::Root(message)) => {
                draft.replay.push(message);
                draft.new_segment = true;
                true
            }
            Some(Note::Event(event)) => {
                track_approval(&store, &thread_id, &message_id, &event).await;
                keep_whole_result(&store, &message_id, &event).await;
                draft.apply(&event)
            }
            Some(Note::Wrote(file)) => {
                if let Err(err) = store.record_write(&message_id, &file).await {
                    tracing::warn!(path = %file.path, "the answer's checkpoint lost a file: {err}");
                }
                false
            }
        };
        if boundary || last_flush.elapsed() >= TEXT_FLUSH {
            flush(&store, &thread_id, &message_id, &draft).await;
            (dirty, last_flush) = (false, Instant::now());
        } else {
            dirty = true;
        }
    }
}

async fn flush(store: &Store, thread_id: &str, message_id: &str, draft: &Draft) {
    let tree = draft.tree.snapshot();
    let snapshot = AnswerSnapshot {
        content: &draft.text,
        reasoning: &draft.reasoning,
        replay: &draft.replay,
        tree: &tree,
        usage: None,
        status: MessageStatus::Partial,
        error: None,
    };
    if let Err(err) = store.save_assistant(thread_id, message_id, snapshot).await {
        // The final commit reports failures to the user; a missed intermediate save
        // only widens what a crash would lose.
        tracing::warn!(error = %err, "could not save the answer so far");
    }
}

/// A result longer than the preview the execution tree keeps is kept whole beside it
/// (what a card's "Show all" reads after a reload).
async fn keep_whole_result(store: &Store, message_id: &str, event: &Event) {
    let Event::ToolCallUpdate(update) = event else {
        return;
    };
    let Some(result) = update
        .result
        .as_ref()
        .filter(|_| update.status == ToolCallStatus::End)
    else {
        return;
    };
    let text = match result {
        Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
        other => std::borrow::Cow::Owned(other.to_string()),
    };
    if !preview_cuts(&text) {
        return;
    }
    if let Err(err) = store
        .keep_result(message_id, &update.tool_call_id, &text)
        .await
    {
        tracing::warn!(call = %update.tool_call_id, "a whole result was not kept: {err}");
    }
}

async fn track_approval(store: &Store, thread_id: &str, message_id: &str, event: &Event) {
    let result = match event {
        Event::ToolApprovalRequest(request) => {
            store
                .add_pending_approval(thread_id, message_id, request)
                .await
        }
        Event::ToolCallUpdate(update) if update.status == ToolCallStatus::End => {
            store
                .remove_pending_approval(message_id, &update.tool_call_id)
                .await
        }
        _ => Ok(()),
    };
    if let Err(err) = result {
        tracing::warn!(error = %err, "could not record a pending approval");
    }
}

/// Writes a finished turn into its assistant message: text, reasoning, replay
/// history, execution tree, usage, status, and the model-call log.
pub async fn commit_turn(
    store: &Store,
    thread_id: &str,
    message_id: &str,
    outcome: &TurnOutcome,
) -> Result<(), StoreError> {
    let (status, error) = match outcome.status {
        TurnStatus::Completed => match outcome.cut {
            Some(cut) => (MessageStatus::Partial, Some(cut.said().to_owned())),
            None => (MessageStatus::Complete, None),
        },
        TurnStatus::Cancelled => (MessageStatus::Cancelled, None),
        TurnStatus::BudgetExceeded => (
            MessageStatus::Partial,
            outcome.budget.map(|b| {
                format!(
                    "budget exceeded: {} ({} of {})",
                    b.reason.as_str(),
                    b.observed,
                    b.limit
                )
            }),
        ),
        TurnStatus::Failed => (
            MessageStatus::Failed,
            outcome.error.as_ref().map(|e| e.message.clone()),
        ),
    };
    let answer = AnswerSnapshot {
        content: &outcome.text,
        reasoning: &outcome.reasoning,
        replay: &outcome.messages,
        tree: &outcome.tree,
        usage: Some(&outcome.usage),
        status,
        error: error.as_deref(),
    };
    store
        .finish_turn(thread_id, message_id, answer, &outcome.calls)
        .await
}
