//! Sending messages and following turns: to the webview that asked, and to the
//! shell (notifications, the tray) for every turn.

use std::path::PathBuf;
use std::sync::Arc;

use cairn_protocol::desktop::{NewThreadOptions, PendingApproval, Sent};
use cairn_protocol::{ApprovalDecision, Event, PermissionMode};
use cairn_runtime::{LiveTurn, Redo, ThreadOptions};

use super::coalesce::{Coalesce, WINDOW};
use super::{Desk, DeskError};

impl Desk {
    /// Sends a message: in `thread_id`, or in a new thread with `options`. `model`
    /// overrides the thread's model. Nothing is stored when the message cannot be
    /// sent (no model, a bad folder, a turn already running).
    pub async fn send_message(
        self: &Arc<Self>,
        thread_id: Option<&str>,
        prompt: &str,
        options: NewThreadOptions,
        model: Option<String>,
    ) -> Result<Arc<LiveTurn>, DeskError> {
        if prompt.trim().is_empty() {
            return Err(cairn_runtime::RuntimeError::EmptyPrompt.into());
        }
        let existing = self.runtime.thread_if(thread_id).await?;
        let choice = self.model_choice(existing.as_ref(), model).await?;
        // A new thread takes the options; an existing one keeps its own.
        let options = match &existing {
            Some(_) => ThreadOptions::default(),
            None => ThreadOptions {
                mode: Some(options.mode),
                workspace: options
                    .workspace
                    .as_deref()
                    .map(str::trim)
                    .filter(|folder| !folder.is_empty())
                    .map(PathBuf::from),
                agent: options.agent,
            },
        };
        let thread = self.runtime.open_thread(existing, prompt, &options).await?;
        if let (Some(_), Some(folder)) = (&options.workspace, &thread.workspace) {
            self.remember_workspace(folder).await?;
        }
        let live = self.runtime.send(&thread.id, prompt, choice).await?;
        self.watch(&live, thread.title);
        Ok(live)
    }

    /// Switches a thread to `mode` and carries out its plan (a draft, by `plan_id`).
    pub async fn run_plan(
        self: &Arc<Self>,
        thread_id: &str,
        mode: PermissionMode,
        plan_id: Option<&str>,
    ) -> Result<Arc<LiveTurn>, DeskError> {
        let thread = self.runtime.thread(thread_id).await?;
        let choice = self.model_choice(Some(&thread), None).await?;
        let live = self
            .runtime
            .run_plan(thread_id, mode, choice, plan_id)
            .await?;
        self.watch(&live, thread.title);
        Ok(live)
    }

    /// Answers a thread's last question again after its answer failed, with the
    /// server in Settings as it is now (the failure may have been a wrong address,
    /// fixed since) and `model`, else the thread's.
    pub async fn retry(
        self: &Arc<Self>,
        thread_id: &str,
        model: Option<String>,
    ) -> Result<Arc<LiveTurn>, DeskError> {
        self.redo(thread_id, Redo::Failed, model).await
    }

    /// Answers the last question again (Retry, Regenerate) or as rewritten (Edit),
    /// with the server in Settings as it is now and `model`, else the thread's.
    pub async fn redo(
        self: &Arc<Self>,
        thread_id: &str,
        redo: Redo<'_>,
        model: Option<String>,
    ) -> Result<Arc<LiveTurn>, DeskError> {
        let thread = self.runtime.thread(thread_id).await?;
        let model = model.or_else(|| thread.model.clone());
        let choice = self.model_choice(Some(&thread), model).await?;
        let live = self.runtime.redo(thread_id, redo, choice).await?;
        self.watch(&live, thread.title);
        Ok(live)
    }

    /// [`sent`] for an answer given again, with the files it took over from the one it
    /// replaced. Not knowing them only delays its Restore until a reload.
    pub async fn sent_again(&self, live: &LiveTurn) -> Sent {
        let mut sent = sent(live);
        sent.restorable = self
            .runtime
            .restorable(&sent.message_id)
            .await
            .unwrap_or_else(|err| {
                tracing::warn!(error = %err, "the files an answer took over could not be read");
                Vec::new()
            });
        sent
    }

    /// The running turn of a thread, if it has one.
    pub fn live_turn(&self, thread_id: &str) -> Option<Arc<LiveTurn>> {
        self.runtime.live_turn(thread_id)
    }

    pub fn stop_turn(&self, thread_id: &str) -> Result<(), DeskError> {
        Ok(self.runtime.stop_turn(thread_id)?)
    }

    pub fn answer_approval(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), DeskError> {
        Ok(self.runtime.answer_approval(approval_id, decision)?)
    }

    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        self.runtime.pending_approvals()
    }

    /// Tells the shell about every event of a turn, and when the running turns change.
    fn watch(self: &Arc<Self>, live: &Arc<LiveTurn>, title: String) {
        let desk = Arc::clone(self);
        let live = Arc::clone(live);
        self.shell.running_changed(&self.running());
        tokio::spawn(async move {
            let (seen, mut events) = live.attach();
            for event in seen {
                desk.shell.turn_event(&live.thread_id, &title, &event);
            }
            while let Some(event) = events.recv().await {
                desk.shell.turn_event(&live.thread_id, &title, &event);
                if matches!(event, Event::Done(_)) {
                    break;
                }
            }
            // The turn leaves the running set once it is committed.
            live.finished().await;
            desk.shell.running_changed(&desk.running());
        });
    }
}

/// What the webview is told a send started.
pub fn sent(live: &LiveTurn) -> Sent {
    Sent {
        thread_id: live.thread_id.clone(),
        message_id: live.message_id(),
        question: None,
        restorable: Vec::new(),
    }
}

/// Sends a turn's events to `out`: what already streamed, then the rest as it
/// comes, until `done` or until `out` says the receiver is gone. Streamed text is
/// joined into fewer messages on the way (see [`Coalesce`]).
pub fn forward(live: &LiveTurn, mut out: impl FnMut(Event) -> bool + Send + 'static) {
    let (seen, mut events) = live.attach();
    tokio::spawn(async move {
        let mut coalesce = Coalesce::default();
        // Whether the receiver is still there and the turn not done.
        let mut send = |events: Vec<Event>| {
            events.into_iter().all(|event| {
                let done = matches!(event, Event::Done(_));
                out(event) && !done
            })
        };
        for event in seen {
            if !send(coalesce.push(event)) {
                return;
            }
        }
        // What streamed before this front end came is sent at once.
        if !send(coalesce.flush().into_iter().collect()) {
            return;
        }
        // When the text waiting now must go, however fast more arrives.
        let mut due = None;
        loop {
            let next = match due {
                Some(at) => match tokio::time::timeout_at(at, events.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        due = None;
                        if !send(coalesce.flush().into_iter().collect()) {
                            return;
                        }
                        continue;
                    }
                },
                None => events.recv().await,
            };
            let Some(event) = next else {
                send(coalesce.flush().into_iter().collect());
                return;
            };
            if !send(coalesce.push(event)) {
                return;
            }
            due = match (coalesce.holding(), due) {
                (false, _) => None,
                (true, Some(due)) => Some(due),
                (true, None) => Some(tokio::time::Instant::now() + WINDOW),
            };
        }
    });
}
