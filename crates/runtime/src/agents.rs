//! Which profile a thread answers as, and the hand-over that continues a thread as
//! another one when the router calls `switch_agent`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use cairn_agents::{AgentDirs, Catalog};
use cairn_core::agent::{Agent, DEFAULT_AGENT};
use cairn_core::switch::MAX_CONSECUTIVE_SWITCHES;
use cairn_core::workspace::Workspace;
use cairn_core::{AgentSwitch, Engine, Handover, NextTurn, PortError, TurnOutcome, TurnRequest};
use cairn_protocol::{AgentInfo, ChatMessage, ThreadInfo};
use cairn_store::Store;

use crate::{Recorder, Runtime, RuntimeError};

/// The setting that names the profile new chats start with.
const DEFAULT_AGENT_SETTING: &str = "default_agent";

/// Whether `agent` is the router: a thread that ran as it keeps `switch_agent`
/// offered. (By its role, not by tools: `chat`'s `.*` names every tool.)
pub(crate) fn routes(agent: &Agent) -> bool {
    agent.routes()
}

/// Every profile a thread in `workspace` could use (the built-ins, those in the
/// folder `CAIRN_AGENTS_DIR` or the config folder holds, the workspace's), and every
/// file skipped, with why.
pub fn agent_infos(workspace: Option<&Path>) -> Vec<AgentInfo> {
    Catalog::load(&AgentDirs::from_env(workspace))
        .infos()
        .to_vec()
}

impl Runtime {
    /// [`agent_infos`] with this runtime's folder of user profiles.
    pub fn agent_infos(&self, workspace: Option<&Path>) -> Vec<AgentInfo> {
        self.agents(workspace).infos().to_vec()
    }

    /// The profiles for a thread in `workspace` (the built-ins, the user's, the
    /// workspace's). Files that could not be used are logged;
    /// [`Catalog::problems`] lists them for a front end to show.
    pub(crate) fn agents(&self, workspace: Option<&Path>) -> Catalog {
        let catalog = Catalog::load(&AgentDirs {
            user: self.agents_dir.clone(),
            workspace: workspace.map(cairn_agents::workspace_folder),
        });
        for problem in catalog.problems() {
            tracing::warn!(
                path = problem.path.as_deref().unwrap_or(""),
                reason = problem.error.as_deref().unwrap_or(""),
                "an agent profile was skipped"
            );
        }
        catalog
    }

    /// The profile new chats start with (a setting; `chat` unless changed).
    pub async fn default_agent(&self) -> Result<String, RuntimeError> {
        Ok(self
            .store
            .setting(DEFAULT_AGENT_SETTING)
            .await?
            .unwrap_or_else(|| DEFAULT_AGENT.to_owned()))
    }

    /// Makes `id` the profile new chats start with; it must be one a thread can use.
    pub async fn set_default_agent(&self, id: &str) -> Result<(), RuntimeError> {
        self.agents(None).choose(id)?;
        self.store.set_setting(DEFAULT_AGENT_SETTING, &id).await?;
        Ok(())
    }

    /// Gives a thread the profile `id` for its next turns.
    pub async fn set_thread_agent(
        &self,
        thread_id: &str,
        id: &str,
    ) -> Result<ThreadInfo, RuntimeError> {
        let thread = self.store.thread(thread_id).await?;
        let agent = self
            .agents(thread.workspace.as_deref().map(Path::new))
            .choose(id)?;
        self.give_agent(thread_id, &agent).await
    }

    /// Keeps `agent` as the thread's (a usable one), routing once it is the router.
    pub(crate) async fn give_agent(
        &self,
        thread_id: &str,
        agent: &Agent,
    ) -> Result<ThreadInfo, RuntimeError> {
        Ok(self
            .store
            .set_agent(thread_id, &agent.id, routes(agent))
            .await?)
    }

    /// The profile a turn of `thread` runs as, and whether the thread routes; the
    /// thread remembers both from its first turn on.
    pub(crate) async fn thread_agent(
        &self,
        thread: &ThreadInfo,
        catalog: &Catalog,
    ) -> Result<(Arc<Agent>, bool), RuntimeError> {
        let agent = catalog.choose(&self.agent_id(Some(thread)).await?)?;
        let routes = thread_routes(Some(thread), &agent);
        if thread.agent.is_none() || routes != thread.routes {
            self.store.set_agent(&thread.id, &agent.id, routes).await?;
        }
        Ok((agent, routes))
    }

    /// The profile a thread answers as: its own, else (a new chat's) the default.
    pub(crate) async fn agent_id(
        &self,
        thread: Option<&ThreadInfo>,
    ) -> Result<String, RuntimeError> {
        match thread.and_then(|thread| thread.agent.clone()) {
            Some(id) => Ok(id),
            None => self.default_agent().await,
        }
    }
}

/// Whether a thread running as `agent` routes: it has before, or `agent` is the router.
pub(crate) fn thread_routes(thread: Option<&ThreadInfo>, agent: &Agent) -> bool {
    thread.is_some_and(|thread| thread.routes) || routes(agent)
}

/// The runtime's side of a hand-over: the follow-up stored as a synthetic message,
/// a fresh answer opened, the next turn built as the target profile.
pub(crate) struct Handing {
    pub store: Store,
    pub catalog: Catalog,
    pub engine: Engine,
    /// The turn that started the chain; the next ones differ in profile and history.
    pub template: TurnRequest,
    /// Hand-overs left before the router must carry on itself.
    pub left: AtomicU32,
}

impl Handing {
    pub fn new(store: Store, catalog: Catalog, engine: Engine, template: TurnRequest) -> Self {
        Self {
            store,
            catalog,
            engine,
            template,
            left: AtomicU32::new(MAX_CONSECUTIVE_SWITCHES),
        }
    }
}

#[async_trait]
impl Handover for Handing {
    async fn next_turn(
        &self,
        outcome: &TurnOutcome,
        switch: &AgentSwitch,
    ) -> Result<NextTurn, PortError> {
        let agent = self
            .catalog
            .get(&switch.to)
            .cloned()
            .ok_or_else(|| PortError::new(format!("there is no agent `{}`", switch.to)))?;
        let thread_id = &outcome.thread_id;
        let mut history = self
            .store
            .history(thread_id)
            .await
            .map_err(PortError::new)?;
        history.push(ChatMessage::user(&switch.follow_up));
        let handover = cairn_protocol::Handover {
            from: switch.from.clone(),
            to: switch.to.clone(),
            reason: switch.reason.clone(),
        };
        let start = self
            .store
            .begin_handover(thread_id, &handover, &switch.follow_up)
            .await
            .map_err(PortError::new)?;
        let left = self.left.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        let persistence = Recorder::start(
            self.store.clone(),
            thread_id.clone(),
            start.assistant_id.clone(),
        );
        // The same folder, its writes now kept with the new answer.
        let workspace = self
            .template
            .workspace
            .as_deref()
            .map(|workspace| {
                Workspace::open(workspace.root())
                    .map(|opened| Arc::new(opened.with_log(persistence.clone())))
            })
            .transpose()
            .map_err(PortError::new)?;
        Ok(NextTurn {
            engine: self.engine.clone(),
            request: TurnRequest {
                message_id: start.assistant_id,
                history,
                agents: self.catalog.setup(agent, Some(left)),
                workspace,
                ..self.template.clone()
            },
            persistence,
        })
    }
}
