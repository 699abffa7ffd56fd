//! The session manager: every running turn, one per thread, many threads at once.
//!
//! start → the turn runs in its own task (it outlives any window) → every event is
//! buffered, handed to the persistence layer, and sent to attached front ends → the
//! outcome is committed → `done`. A front end that attaches late (a reopened window)
//! first gets what already streamed, then the live events; approvals are answered by
//! id whichever turn asked. Front ends never own turn state.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use cairn_protocol::{
    AgentSwitched, ApprovalDecision, ChatMessage, ErrorEvent, ErrorKind, Event, ToolApprovalRequest,
};
use tokio::sync::{mpsc, watch};

use crate::agent::AgentSwitch;
use crate::approvals::{ApprovalError, Approvals};
use crate::events::{EventSink, Journal};
use crate::gate::SessionGrants;
use crate::turn::{Engine, TurnControl, TurnOutcome, TurnRequest};

/// Where a running turn is kept: observed as it goes, committed at its end.
#[async_trait]
pub trait TurnPersistence: Journal {
    /// Every event, as it is emitted. Must not block: hand work to a writer.
    fn event(&self, event: &Event);

    /// Commits the finished turn. `done` is sent only after this returns.
    async fn commit(&self, outcome: &TurnOutcome) -> Result<(), CommitError>;
}

/// Why a finished turn could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The store failed or refused.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// The writer that keeps the turn stopped before the turn's end.
    #[error("the writer stopped before the end of the turn")]
    WriterGone,
}

/// How a thread goes on when its turn handed it to another profile
/// (`switch_agent`): the runtime stores the follow-up and prepares the next turn.
#[async_trait]
pub trait Handover: Send + Sync {
    /// The next turn of `outcome`'s thread, answering `switch.follow_up` as
    /// `switch.to`; the error says why the thread cannot go on.
    async fn next_turn(
        &self,
        outcome: &TurnOutcome,
        switch: &AgentSwitch,
    ) -> Result<NextTurn, crate::PortError>;
}

/// A turn ready to run in a thread that is already held.
pub struct NextTurn {
    pub engine: Engine,
    pub request: TurnRequest,
    pub persistence: Arc<dyn TurnPersistence>,
}

impl std::fmt::Debug for NextTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NextTurn")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// For front ends that keep nothing (tests, a throwaway run).
#[derive(Debug, Default)]
pub struct NoPersistence;

impl Journal for NoPersistence {
    fn root_message(&self, _message: &ChatMessage) {}
}

#[async_trait]
impl TurnPersistence for NoPersistence {
    fn event(&self, _event: &Event) {}

    async fn commit(&self, _outcome: &TurnOutcome) -> Result<(), CommitError> {
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("a turn is already running in this thread; stop it or wait for it to finish")]
    AlreadyRunning,
    #[error("no turn is running in thread `{0}`")]
    NotRunning(String),
}

/// All running turns.
#[derive(Debug, Default)]
pub struct Sessions {
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    turns: HashMap<String, Arc<LiveTurn>>,
    /// Threads whose next turn is being prepared (see [`Claim`]).
    claimed: HashSet<String>,
}

/// A thread held for a turn that is still being prepared: no other turn can claim or
/// start in it until this one is started or dropped. Taken before anything is
/// stored, so two sends racing on one thread cannot both write their messages.
#[derive(Debug)]
pub struct Claim {
    sessions: Arc<Sessions>,
    thread_id: String,
}

/// One running turn, shared by the task that runs it and every front end watching.
/// After a hand-over the thread's next turn runs under the same one: one Stop, one
/// stream, one `done`.
#[derive(Debug)]
pub struct LiveTurn {
    pub thread_id: String,
    /// The answer being written now (a hand-over starts another).
    message_id: Mutex<String>,
    control: TurnControl,
    stream: Mutex<Stream>,
    outcome: watch::Sender<Option<TurnOutcome>>,
}

#[derive(Debug, Default)]
struct Stream {
    /// Everything emitted so far, consecutive text deltas merged.
    buffer: Vec<Event>,
    watchers: Vec<mpsc::UnboundedSender<Event>>,
}

impl Sessions {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Holds `thread_id` for a turn about to start. Fails if a turn runs there or
    /// another is being prepared.
    pub fn claim(self: &Arc<Self>, thread_id: &str) -> Result<Claim, SessionError> {
        let mut slots = self.lock();
        if slots.turns.contains_key(thread_id) || !slots.claimed.insert(thread_id.to_owned()) {
            return Err(SessionError::AlreadyRunning);
        }
        Ok(Claim {
            sessions: Arc::clone(self),
            thread_id: thread_id.to_owned(),
        })
    }

    /// Starts a turn in its own task. Fails if the thread already has one running.
    pub fn start(
        self: &Arc<Self>,
        engine: Engine,
        request: TurnRequest,
        grants: Arc<SessionGrants>,
        persistence: Arc<dyn TurnPersistence>,
    ) -> Result<Arc<LiveTurn>, SessionError> {
        let claim = self.claim(&request.thread_id)?;
        Ok(claim.start(engine, request, grants, persistence))
    }

    /// The running turn of a thread.
    pub fn get(&self, thread_id: &str) -> Option<Arc<LiveTurn>> {
        self.lock().turns.get(thread_id).cloned()
    }

    /// The threads with a running turn.
    pub fn running(&self) -> Vec<String> {
        let mut threads: Vec<_> = self.lock().turns.keys().cloned().collect();
        threads.sort();
        threads
    }

    /// Stops a thread's turn; its partial answer is kept.
    pub fn stop(&self, thread_id: &str) -> Result<(), SessionError> {
        let turn = self
            .get(thread_id)
            .ok_or_else(|| SessionError::NotRunning(thread_id.to_owned()))?;
        turn.control.cancel.cancel();
        Ok(())
    }

    /// Answers an approval, whichever turn asked for it.
    pub fn answer(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), ApprovalError> {
        let turns: Vec<_> = self.lock().turns.values().cloned().collect();
        for turn in turns {
            match turn.control.approvals.answer(approval_id, decision) {
                Err(ApprovalError::Unknown(_)) => continue,
                other => return other,
            }
        }
        Err(ApprovalError::Unknown(approval_id.to_owned()))
    }

    /// Every approval waiting for the user, with its thread.
    pub fn pending(&self) -> Vec<(String, ToolApprovalRequest)> {
        let turns: Vec<_> = self.lock().turns.values().cloned().collect();
        turns
            .iter()
            .flat_map(|turn| {
                turn.control
                    .approvals
                    .pending()
                    .into_iter()
                    .map(|request| (turn.thread_id.clone(), request))
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Claim {
    /// Starts the turn in its own task; `request` is for the claimed thread.
    pub fn start(
        self,
        engine: Engine,
        request: TurnRequest,
        grants: Arc<SessionGrants>,
        persistence: Arc<dyn TurnPersistence>,
    ) -> Arc<LiveTurn> {
        self.start_with(engine, request, grants, persistence, None)
    }

    /// Starts the turn; when it hands the thread over, `handover` prepares the next
    /// one, which runs at once under the same [`LiveTurn`].
    pub fn start_with(
        mut self,
        engine: Engine,
        request: TurnRequest,
        grants: Arc<SessionGrants>,
        persistence: Arc<dyn TurnPersistence>,
        handover: Option<Arc<dyn Handover>>,
    ) -> Arc<LiveTurn> {
        debug_assert_eq!(
            request.thread_id, self.thread_id,
            "a turn for another thread"
        );
        let control = TurnControl {
            grants,
            ..TurnControl::default()
        };
        let (outcome, _) = watch::channel(None);
        let turn = Arc::new(LiveTurn {
            thread_id: request.thread_id.clone(),
            message_id: Mutex::new(request.message_id.clone()),
            control: control.clone(),
            stream: Mutex::default(),
            outcome,
        });
        {
            // One lock: the claim turns into the running turn with no gap between.
            let mut slots = self.sessions.lock();
            // Taken, so dropping the spent claim cannot free a later claim's hold.
            slots.claimed.remove(&std::mem::take(&mut self.thread_id));
            slots
                .turns
                .insert(turn.thread_id.clone(), Arc::clone(&turn));
        }
        let sessions = Arc::clone(&self.sessions);
        let running = Arc::clone(&turn);
        tokio::spawn(async move {
            let mut next = NextTurn {
                engine,
                request,
                persistence,
            };
            let (outcome, sink) = loop {
                let (outcome, sink, committed) = running.run_one(next, control.clone()).await;
                // A thread whose answer was not kept, or that was stopped, goes no further.
                let Some(switch) = outcome
                    .switch
                    .clone()
                    .filter(|_| committed && !control.cancel.is_cancelled())
                else {
                    break (outcome, sink);
                };
                let Some(handover) = &handover else {
                    break (outcome, sink);
                };
                match handover.next_turn(&outcome, &switch).await {
                    Ok(turn) => {
                        *running.lock_message_id() = turn.request.message_id.clone();
                        running.hand_over(Event::AgentSwitched(AgentSwitched {
                            from: switch.from,
                            to: switch.to,
                            reason: switch.reason,
                            follow_up: switch.follow_up,
                            thread_id: running.thread_id.clone(),
                            message_id: turn.request.message_id.clone(),
                        }));
                        next = turn;
                    }
                    Err(problem) => {
                        tracing::error!(thread = %running.thread_id, %problem, "the hand-over failed");
                        sink.emit(Event::Error(ErrorEvent {
                            message: format!(
                                "`{}` could not take over from `{}`: {problem}",
                                switch.to, switch.from
                            ),
                            kind: ErrorKind::Config,
                        }));
                        break (outcome, sink);
                    }
                }
            };
            // The thread is free before anyone hears `done`: a front end that answers
            // `done` with the next turn (Retry) must not find this one still running.
            let done = outcome.done_event();
            sessions.lock().turns.remove(&running.thread_id);
            running.outcome.send_replace(Some(outcome));
            sink.emit(done);
        });
        turn
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // A claim given up before its turn started frees the thread.
        if !self.thread_id.is_empty() {
            self.sessions.lock().claimed.remove(&self.thread_id);
        }
    }
}

impl LiveTurn {
    /// Runs one turn of the chain and commits it; `done` is left to the chain's end.
    async fn run_one(
        self: &Arc<Self>,
        turn: NextTurn,
        mut control: TurnControl,
    ) -> (TurnOutcome, Arc<Outlet>, bool) {
        let journal: Arc<dyn Journal> = turn.persistence.clone();
        control.journal = Some(journal);
        let sink = self.outlet(&turn.persistence);
        let outcome = turn
            .engine
            .run_turn(turn.request, control, sink.clone())
            .await;
        let committed = turn.persistence.commit(&outcome).await;
        if let Err(problem) = &committed {
            tracing::error!(thread = %self.thread_id, %problem, "the turn could not be saved");
            sink.emit(Event::Error(ErrorEvent {
                message: format!("the answer could not be saved: {problem}"),
                kind: ErrorKind::Storage,
            }));
        }
        (outcome, sink, committed.is_ok())
    }

    fn outlet(self: &Arc<Self>, persistence: &Arc<dyn TurnPersistence>) -> Arc<Outlet> {
        Arc::new(Outlet {
            turn: Arc::clone(self),
            persistence: Arc::clone(persistence),
        })
    }

    /// Starts the chain's next answer: the front ends watching hear of the hand-over,
    /// and a front end that attaches later replays only the new answer (the ones
    /// before it are committed: it reads them from the store, the follow-up too).
    fn hand_over(&self, event: Event) {
        let mut stream = self.lock();
        stream
            .watchers
            .retain(|watcher| watcher.send(event.clone()).is_ok());
        stream.buffer.clear();
    }

    /// The answer being written now.
    pub fn message_id(&self) -> String {
        self.lock_message_id().clone()
    }

    fn lock_message_id(&self) -> std::sync::MutexGuard<'_, String> {
        self.message_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// What already streamed, and a receiver for everything after it: no gap, no
    /// repeat. A question already answered is left out of the replay: its call may
    /// still run, and a front end that saw the question would offer to answer it.
    pub fn attach(&self) -> (Vec<Event>, mpsc::UnboundedReceiver<Event>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut stream = self.lock();
        stream.watchers.push(sender);
        let approvals = &self.control.approvals;
        let seen = stream
            .buffer
            .iter()
            .filter(|event| match event {
                Event::ToolApprovalRequest(request) => approvals.is_pending(&request.approval_id),
                _ => true,
            })
            .cloned()
            .collect();
        (seen, receiver)
    }

    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.control.approvals
    }

    pub fn stop(&self) {
        self.control.cancel.cancel();
    }

    /// Waits for the turn to be committed and returns how it ended. (`None` cannot
    /// happen while `self` lives: it holds the sender.)
    pub async fn finished(&self) -> Option<TurnOutcome> {
        let mut outcome = self.outcome.subscribe();
        let done = outcome.wait_for(Option::is_some).await.ok()?;
        done.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stream> {
        self.stream.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sink of a session turn: persistence first, then the buffer and the watchers.
struct Outlet {
    turn: Arc<LiveTurn>,
    persistence: Arc<dyn TurnPersistence>,
}

impl EventSink for Outlet {
    fn emit(&self, event: Event) {
        self.persistence.event(&event);
        let mut stream = self.turn.lock();
        stream
            .watchers
            .retain(|watcher| watcher.send(event.clone()).is_ok());
        match (stream.buffer.last_mut(), &event) {
            (Some(Event::Chunk(last)), Event::Chunk(next))
                if last.parent_id == next.parent_id && last.depth == next.depth =>
            {
                last.content.push_str(&next.content);
            }
            (Some(Event::Reasoning(last)), Event::Reasoning(next))
                if last.parent_id == next.parent_id && last.depth == next.depth =>
            {
                last.content.push_str(&next.content);
            }
            _ => stream.buffer.push(event),
        }
    }
}
