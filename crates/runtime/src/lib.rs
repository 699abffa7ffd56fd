//! Turns over stored threads, the way every front end runs them.
//!
//! thread (mode, workspace, server) + prompt → history from the store → the user's
//! message and an open assistant message stored → the turn under the session
//! manager, recorded as it runs → committed → `done`. The CLI and the desktop shell
//! call the same [`Runtime`], so a thread behaves the same in both.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use cairn_core::{
    Engine, Limits, LiveTurn, SessionError, SessionGrants, Sessions, Toolbelt, TurnRequest,
};
use cairn_protocol::{ChatMessage, PermissionMode, ThreadInfo};
use cairn_providers::{ModelClient, Sampling};
use cairn_store::{NewThread, Recorder, Store, StoreError, title_from_prompt};
use cairn_tools::Workspace;

/// The model a turn talks to, as the front end resolved it.
#[derive(Clone)]
pub struct ModelChoice {
    pub client: Arc<dyn ModelClient>,
    /// `ollama` or `openai`, remembered on the thread.
    pub dialect: String,
    pub base_url: String,
    pub model: String,
    pub sampling: Sampling,
}

impl std::fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelChoice")
            .field("dialect", &self.dialect)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("the thread's workspace folder cannot be used: {0}")]
    Workspace(String),
    #[error("an empty message cannot be sent")]
    EmptyPrompt,
}

/// The store, the running turns, and the per-thread grants, shared by a front end.
#[derive(Debug)]
pub struct Runtime {
    store: Store,
    sessions: Arc<Sessions>,
    limits: Limits,
    /// "Allow for this chat": per thread, for as long as the app runs.
    grants: Mutex<HashMap<String, Arc<SessionGrants>>>,
}

impl Runtime {
    pub fn new(store: Store, limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            store,
            sessions: Sessions::new(),
            limits,
            grants: Mutex::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    /// A new thread titled from its first prompt, in default mode unless said otherwise.
    pub async fn new_thread(
        &self,
        prompt: &str,
        mode: PermissionMode,
    ) -> Result<ThreadInfo, RuntimeError> {
        Ok(self
            .store
            .create_thread(NewThread {
                title: title_from_prompt(prompt),
                mode,
                ..NewThread::default()
            })
            .await?)
    }

    /// Sends a message in a thread and starts its turn. The thread's mode and
    /// workspace apply; the model choice is remembered on the thread.
    pub async fn send(
        &self,
        thread_id: &str,
        prompt: &str,
        choice: ModelChoice,
    ) -> Result<Arc<LiveTurn>, RuntimeError> {
        if prompt.trim().is_empty() {
            return Err(RuntimeError::EmptyPrompt);
        }
        if self.sessions.get(thread_id).is_some() {
            return Err(SessionError::AlreadyRunning.into());
        }
        let thread = self.store.thread(thread_id).await?;
        let workspace = thread
            .workspace
            .as_deref()
            .map(|root| Workspace::open(Path::new(root)).map(Arc::new))
            .transpose()
            .map_err(|err| RuntimeError::Workspace(err.to_string()))?;
        self.store
            .set_model(thread_id, &choice.dialect, &choice.base_url, &choice.model)
            .await?;
        let mut history = self.store.history(thread_id).await?;
        history.push(ChatMessage::user(prompt));
        let start = self.store.begin_turn(thread_id, prompt).await?;
        let recorder = Recorder::start(
            self.store.clone(),
            thread_id.to_owned(),
            start.assistant_id.clone(),
        );
        let request = TurnRequest {
            thread_id: thread_id.to_owned(),
            message_id: start.assistant_id,
            model: choice.model,
            history,
            mode: thread.mode,
            tools: toolbelt(workspace.is_some()),
            workspace,
            sampling: choice.sampling,
            rules: Default::default(),
        };
        let engine = Engine::new(choice.client, self.limits);
        Ok(self
            .sessions
            .start(engine, request, self.grants(thread_id), recorder)?)
    }

    fn grants(&self, thread_id: &str) -> Arc<SessionGrants> {
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(grants.entry(thread_id.to_owned()).or_default())
    }
}

/// The tools of a thread: the file tools only with a workspace.
fn toolbelt(has_workspace: bool) -> Toolbelt {
    let tools = if has_workspace {
        cairn_tools::file_tools()
    } else {
        Vec::new()
    };
    // The built-in tools have distinct names, none of them reserved.
    Toolbelt::new(tools).unwrap_or_default()
}
