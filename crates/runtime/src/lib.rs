//! Turns over stored threads, the way every front end runs them.
//!
//! thread (mode, workspace, server) + prompt → history from the store → the user's
//! message and an open assistant message stored → the turn under the session
//! manager, recorded as it runs → committed → `done`. The CLI and the desktop shell
//! call the same [`Runtime`], so a thread behaves the same in both.

use answering::Lease;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

mod agents;
mod answering;
mod checkup;
mod error;
mod export;
mod keys;
mod llm;
mod logging;
mod model;
mod named;
mod recorder;
mod restore;
mod servers;
mod settings;
mod stored;
mod thread;
mod threads;
mod turns;
mod usage;
mod warmup;
mod windows;

use cairn_core::{
    Claim, ContextFit, Engine, Handover, RootView, SessionGrants, Sessions, Toolbelt, ToolsShown,
    TurnRequest,
};
use cairn_protocol::{ChatMessage, PermissionMode, ThreadInfo};
use cairn_store::{NewThread, Store, title_from_prompt};
use cairn_tools::mcp::{McpError, McpPolicy, McpServer};
use cairn_tools::{MemoryStore, Tool, Workspace};

pub use agents::agent_infos;
pub use checkup::{CHECKED_UP_TO_PARAMS, CallStyle, Checkup};
pub use error::{FailureKind, RuntimeError, provider_kind, store_kind};
pub use export::Export;
pub(crate) use export::export;
pub use keys::{delete_api_key, has_api_key, set_api_key};
pub use logging::{BadLogFilter, LOG_VARIABLE, log_filter};
pub use model::{
    DEFAULT_BASE_URL, DefaultModel, ModelChoice, ModelRequest, ServerName, api_key, resolve_model,
};
pub use named::{BadServerList, MAX_SLOTS, SERVERS_KEY, ServerReport, check_servers};
pub use recorder::{Recorder, TEXT_FLUSH, commit_turn};
pub use servers::{
    DETECT_TIMEOUT, detect_servers, list_models, list_models_said, models_said, pull_model,
};
pub use stored::{StoredMemory, StoredPlans, rule_set};
pub use thread::{CheckedOptions, ThreadOptions, check_workspace};

// What the front ends name of the crates behind this one: values and the traits they
// implement, never a handle on the store, the sessions or a model server (the layout
// test in `crates/testkit` holds them to this crate and the protocol).
pub use cairn_core::{Approvals, EventSink, Limits, LiveTurn};
pub use cairn_providers::{Detected, Endpoint, PRESETS, Preset, ProviderError, Said, Sampling};
pub use cairn_store::Redo;
pub use cairn_tools::mcp::McpConfig;

/// What a blank message gets instead of a model call: nothing is stored, and the
/// model is not asked (the window never sends one; the CLI prints this).
pub const CLARIFYING_QUESTION: &str = "What would you like me to do? Ask a question or describe a task, and I will answer or get to work.";

/// The setting that lists the MCP servers allowed to start.
const MCP_ALLOWED: &str = "mcp_allowed_servers";
/// The setting that lists the MCP servers whose read-only hints the user trusts.
const MCP_TRUSTED: &str = "mcp_trusted_servers";

/// Where the MCP servers file lives unless said otherwise: beside the database.
pub fn default_mcp_config_path() -> Option<std::path::PathBuf> {
    default_database_path().and_then(|db| db.parent().map(|dir| dir.join("mcp.json")))
}

/// Where the database lives unless said otherwise: the user's data folder.
pub fn default_database_path() -> Option<std::path::PathBuf> {
    Store::default_path()
}

/// The store, the running turns, and the per-thread grants, shared by a front end.
pub struct Runtime {
    store: Store,
    sessions: Arc<Sessions>,
    limits: Limits,
    /// "Allow for this chat": per thread, for as long as the app runs.
    grants: Mutex<HashMap<String, Arc<SessionGrants>>>,
    /// For `web_fetch`.
    http: reqwest::Client,
    /// Tools from outside (MCP servers), offered to every thread.
    extra_tools: Mutex<Vec<Arc<dyn Tool>>>,
    /// The MCP servers started, and why the others that were allowed did not start.
    mcp: Mutex<McpState>,
    /// The user's folder of agent profiles.
    agents_dir: Option<std::path::PathBuf>,
    /// How old a context window kept in the store may be and still be used, in ms.
    windows_trusted_for: std::sync::atomic::AtomicU64,
    /// The prompt a server is reading ahead of a question, if any.
    warm_ups: warmup::WarmUps,
    /// Each model server's slots, shared by every turn.
    slots: Arc<named::SlotTable>,
    /// The keychain, for the keys of the servers profiles name.
    secrets: named::Secrets,
}

#[derive(Debug, Default)]
struct McpState {
    started: Vec<Arc<McpServer>>,
    failed: Vec<McpError>,
}

/// What a model's context leaves a turn (see [`Runtime::context_report`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextReport {
    pub fit: ContextFit,
    /// How the tools are shown: some on demand, and which groups.
    pub tools: ToolsShown,
    /// The model's chat template takes no tools: they are described in its prompt.
    pub tools_in_text: bool,
}

/// How one configured MCP server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerStatus {
    pub name: String,
    /// The command line or the address.
    pub target: String,
    pub allowed: bool,
    pub trusted: bool,
    /// Started in this run, with this many tools.
    pub tools: Option<usize>,
    /// Why it did not start (or stopped), if it was allowed to.
    pub error: Option<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("store", &self.store)
            .field("running", &self.sessions.running())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Opens (creating and migrating if need be) the database at `path`, and a
    /// runtime over it.
    pub async fn open(path: &Path, limits: Limits) -> Result<Arc<Self>, RuntimeError> {
        Ok(Self::new(Store::open(path).await?, limits))
    }

    /// A runtime that reads the user's agent profiles where the environment says
    /// (`CAIRN_AGENTS_DIR`, else the config folder).
    pub fn new(store: Store, limits: Limits) -> Arc<Self> {
        let agents_dir = cairn_agents::AgentDirs::from_env(None).user;
        Self::with_agents_dir(store, limits, agents_dir)
    }

    /// A runtime that reads the user's agent profiles from `agents_dir`.
    pub fn with_agents_dir(
        store: Store,
        limits: Limits,
        agents_dir: Option<std::path::PathBuf>,
    ) -> Arc<Self> {
        // Without TLS roots web_fetch cannot work, but chat still can.
        let http = cairn_providers::http::client_builder()
            .user_agent(concat!("cairn/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Arc::new(Self {
            store,
            sessions: Sessions::new(),
            limits,
            grants: Mutex::default(),
            http,
            extra_tools: Mutex::default(),
            mcp: Mutex::default(),
            agents_dir,
            windows_trusted_for: std::sync::atomic::AtomicU64::new(millis(windows::KEPT_FOR)),
            warm_ups: warmup::WarmUps::default(),
            slots: Arc::default(),
            secrets: named::Secrets::new(),
        })
    }

    /// How old a context window the store keeps may be and still be used instead of
    /// asking the server. A front end that lives long asks afresh when it starts (zero)
    /// and keeps what it learns in memory a few minutes; each `cairn run` is a new
    /// process, and would otherwise ask before every first call.
    pub fn trust_stored_windows_for(&self, age: std::time::Duration) {
        self.windows_trusted_for
            .store(millis(age), std::sync::atomic::Ordering::Relaxed);
    }

    /// Adds tools every later turn offers (the tools of started MCP servers).
    pub fn add_tools(&self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        self.extra_tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(tools);
    }

    /// The MCP servers the user allowed (a setting), by name.
    pub async fn allowed_mcp_servers(&self) -> Result<Vec<String>, RuntimeError> {
        Ok(self.store.setting(MCP_ALLOWED).await?.unwrap_or_default())
    }

    /// The MCP servers whose read-only hints the user trusts (a setting), by name.
    pub async fn trusted_mcp_servers(&self) -> Result<Vec<String>, RuntimeError> {
        Ok(self.store.setting(MCP_TRUSTED).await?.unwrap_or_default())
    }

    /// Allows or disallows an MCP server by name.
    pub async fn allow_mcp_server(
        &self,
        name: &str,
        allowed: bool,
    ) -> Result<Vec<String>, RuntimeError> {
        self.set_member(MCP_ALLOWED, name, allowed).await
    }

    /// Trusts an MCP server's own read-only hints, or stops trusting them; a started
    /// server's tools change category from their next call on.
    pub async fn trust_mcp_server(
        &self,
        name: &str,
        trusted: bool,
    ) -> Result<Vec<String>, RuntimeError> {
        let names = self.set_member(MCP_TRUSTED, name, trusted).await?;
        for server in &self.lock_mcp().started {
            if server.name() == name {
                server.set_trusted(trusted);
            }
        }
        Ok(names)
    }

    /// Adds `name` to (or removes it from) the list kept in the setting `key`.
    async fn set_member(
        &self,
        key: &str,
        name: &str,
        member: bool,
    ) -> Result<Vec<String>, RuntimeError> {
        let mut names: Vec<String> = self.store.setting(key).await?.unwrap_or_default();
        names.retain(|known| known != name);
        if member {
            names.push(name.to_owned());
            names.sort();
        }
        self.store.set_setting(key, &names).await?;
        Ok(names)
    }

    /// Starts the allowed servers of `config` and offers their tools from now on.
    /// Returns why the others that were allowed did not start.
    pub async fn start_mcp(&self, config: &McpConfig) -> Result<Vec<McpError>, RuntimeError> {
        let started: Vec<String> = self
            .lock_mcp()
            .started
            .iter()
            .map(|server| server.name().to_owned())
            .collect();
        let mut allowed = self.allowed_mcp_servers().await?;
        // One process per server: those already running stay as they are.
        allowed.retain(|name| !started.contains(name));
        let policy = McpPolicy {
            allowed,
            trusted: self.trusted_mcp_servers().await?,
            call_timeout: cairn_tools::mcp::call_timeout_from(|name| std::env::var(name).ok())
                .map_err(RuntimeError::Mcp)?,
        };
        let (servers, failures) =
            cairn_tools::mcp::start_allowed(config, &policy, self.http.clone()).await;
        self.add_tools(servers.iter().flat_map(McpServer::tools));
        let mut mcp = self.lock_mcp();
        mcp.failed.retain(|failure| {
            !policy
                .allowed
                .iter()
                .any(|name| failure.server() == Some(name.as_str()))
        });
        mcp.failed.extend(failures.iter().cloned());
        mcp.started.extend(servers);
        Ok(failures)
    }

    /// Stops a started MCP server; its tools are no longer offered.
    pub async fn stop_mcp_server(&self, name: &str) {
        let stopped: Vec<Arc<McpServer>> = {
            let mut mcp = self.lock_mcp();
            mcp.failed.retain(|failure| failure.server() != Some(name));
            let (stopped, kept) = std::mem::take(&mut mcp.started)
                .into_iter()
                .partition(|server| server.name() == name);
            mcp.started = kept;
            stopped
        };
        let prefix = format!("mcp__{name}__");
        self.extra_tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|tool| !tool.name().starts_with(&prefix));
        for server in stopped {
            server.stop().await;
        }
    }

    /// Every server of `config`: allowed, trusted, started or why not.
    pub async fn mcp_status(
        &self,
        config: &McpConfig,
    ) -> Result<Vec<McpServerStatus>, RuntimeError> {
        let allowed = self.allowed_mcp_servers().await?;
        let trusted = self.trusted_mcp_servers().await?;
        let mcp = self.lock_mcp();
        Ok(config
            .servers
            .iter()
            .map(|(name, server)| McpServerStatus {
                name: name.clone(),
                target: server.target(),
                allowed: allowed.contains(name),
                trusted: trusted.contains(name),
                tools: mcp
                    .started
                    .iter()
                    .find(|server| server.name() == name)
                    .map(|server| server.tools().len()),
                error: mcp
                    .failed
                    .iter()
                    .find(|failure| failure.server() == Some(name.as_str()))
                    .map(ToString::to_string)
                    .or_else(|| {
                        mcp.started
                            .iter()
                            .find(|server| server.name() == name)
                            .and_then(|server| server.problem())
                            .map(|problem| format!("off for this session: {problem}"))
                    }),
            })
            .collect())
    }

    fn lock_mcp(&self) -> std::sync::MutexGuard<'_, McpState> {
        self.mcp.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Switches a thread to `mode` and asks it to carry out its plan: the plan-mode
    /// answer above, or its stored draft `plan_id`.
    pub async fn run_plan(
        &self,
        thread_id: &str,
        mode: PermissionMode,
        choice: ModelChoice,
        plan_id: Option<&str>,
    ) -> Result<Arc<LiveTurn>, RuntimeError> {
        if mode == PermissionMode::Plan {
            return Err(RuntimeError::Plan);
        }
        // Claimed first: a thread that is busy keeps its mode.
        let claim = self.claim(thread_id).await?;
        self.store.set_mode(thread_id, mode).await?;
        let prompt = run_plan_prompt(plan_id);
        let shown = run_plan_shown(plan_id);
        // A stored draft runs through create_plan, shown from the start.
        let preload = plan_id.map(|_| vec![cairn_core::plan::PLAN_TOOLS.to_owned()]);
        self.start_claimed(
            claim,
            thread_id,
            Opening::Ask {
                prompt: &prompt,
                shown: Some(&shown),
            },
            choice,
            preload.unwrap_or_default(),
        )
        .await
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
        // Held from before anything is stored until the turn runs: a second send to
        // this thread meanwhile is refused instead of storing a message no turn answers.
        let claim = self.claim(thread_id).await?;
        let opening = Opening::Ask {
            prompt,
            shown: None,
        };
        self.start_claimed(claim, thread_id, opening, choice, Vec::new())
            .await
    }

    /// Answers a thread's last question again after its answer failed: the failed
    /// answer is replaced, the question is not repeated.
    pub async fn retry(
        &self,
        thread_id: &str,
        choice: ModelChoice,
    ) -> Result<Arc<LiveTurn>, RuntimeError> {
        self.redo(thread_id, Redo::Failed, choice).await
    }

    /// Answers the thread's last question again after an answer that ended (failed
    /// or not: Retry, Regenerate), or rewritten as `Redo::Edited` (Edit and resend).
    pub async fn redo(
        &self,
        thread_id: &str,
        redo: Redo<'_>,
        choice: ModelChoice,
    ) -> Result<Arc<LiveTurn>, RuntimeError> {
        let claim = self.claim(thread_id).await?;
        self.start_claimed(claim, thread_id, Opening::Redo(redo), choice, Vec::new())
            .await
    }

    /// Claims `thread_id` for a turn: in this process, and against the others that
    /// share the database.
    async fn claim(&self, thread_id: &str) -> Result<(Claim, Lease), RuntimeError> {
        let claim = self.sessions.claim(thread_id)?;
        let lease = Lease::take(&self.store, thread_id).await?;
        Ok((claim, lease))
    }

    async fn start_claimed(
        &self,
        (claim, lease): (Claim, Lease),
        thread_id: &str,
        opening: Opening<'_>,
        choice: ModelChoice,
        load_tools: Vec<String>,
    ) -> Result<Arc<LiveTurn>, RuntimeError> {
        // What was learned of the model is used; a small one never checked is first.
        self.fit_harness(&choice).await?;
        let thread = self.store.thread(thread_id).await?;
        let workspace = thread
            .workspace
            .as_deref()
            .map(|root| Workspace::open(Path::new(root)))
            .transpose()
            .map_err(|err| RuntimeError::Workspace(err.to_string()))?;
        let catalog = self.agents(workspace.as_ref().map(Workspace::root));
        let (agent, routes) = self.thread_agent(&thread, &catalog).await?;
        let client = self.remembered(choice.client.clone(), &choice.base_url);
        let (home, servers) = self.engine_servers(&choice, client.clone(), &agent).await?;
        self.store
            .set_model(thread_id, &choice.dialect, &choice.base_url, &choice.model)
            .await?;
        let instructions = workspace.as_ref().and_then(project_instructions);
        let tools = self.thread_toolbelt(thread_id, workspace.is_some())?;
        let rules = Arc::new(rule_set(&self.store).await?);
        let (history, start) = match opening {
            Opening::Ask { prompt, shown } => {
                let mut history = self.store.history(thread_id).await?;
                history.push(ChatMessage::user(prompt));
                let start = match shown {
                    Some(shown) => {
                        self.store
                            .begin_turn_shown(thread_id, prompt, shown)
                            .await?
                    }
                    None => self.store.begin_turn(thread_id, prompt).await?,
                };
                (history, start)
            }
            // The question is already the history's last message once the failed
            // answer is gone. What that answer wrote and left as it was passes to the
            // new one; a file changed since keeps the change as its way back.
            Opening::Redo(redo) => {
                let carry = |file: &cairn_store::FileCheckpoint| {
                    workspace
                        .as_ref()
                        .is_some_and(|workspace| restore::still_as_left(workspace, file))
                };
                let start = self.store.redo_turn(thread_id, redo, &carry).await?;
                (self.store.history(thread_id).await?, start)
            }
        };
        let recorder = Recorder::start(
            self.store.clone(),
            thread_id.to_owned(),
            start.assistant_id.clone(),
        );
        // What the answer writes is kept with it, to be taken back (see restore.rs).
        let workspace = workspace.map(|workspace| Arc::new(workspace.with_log(recorder.clone())));
        let switches = routes.then_some(cairn_core::switch::MAX_CONSECUTIVE_SWITCHES);
        let request = TurnRequest {
            thread_id: thread_id.to_owned(),
            message_id: start.assistant_id,
            model: choice.model,
            history,
            mode: thread.mode,
            tools,
            workspace,
            sampling: choice.sampling,
            rules,
            instructions,
            agents: catalog.setup(agent, switches),
            plans: Some(Arc::new(StoredPlans {
                store: self.store.clone(),
                thread_id: thread_id.to_owned(),
            })),
            load_tools,
        };
        let engine = Engine::new(client, self.limits).with_servers(home, servers);
        let handover: Option<Arc<dyn Handover>> = routes.then(|| {
            Arc::new(agents::Handing::new(
                self.store.clone(),
                catalog,
                engine.clone(),
                TurnRequest {
                    history: Vec::new(),
                    ..request.clone()
                },
            )) as Arc<dyn Handover>
        });
        let live = claim.start_with(engine, request, self.grants(thread_id), recorder, handover);
        let watched = Arc::clone(&live);
        tokio::spawn(async move {
            watched.finished().await;
            lease.release().await;
        });
        Ok(live)
    }

    /// A thread's tools: [`Runtime::toolbelt`]'s, and `set_llm_params` for its own
    /// model parameters.
    fn thread_toolbelt(
        &self,
        thread_id: &str,
        has_workspace: bool,
    ) -> Result<Toolbelt, RuntimeError> {
        let mut tools = self.tools(has_workspace);
        tools.push(llm::set_llm_params_tool(&self.store, thread_id));
        Toolbelt::new(tools).map_err(RuntimeError::Tools)
    }

    /// The tools a thread's next turn offers (a new chat's, without `thread_id`): the
    /// web, memory and the todo list always; files and commands with a workspace; and
    /// whatever MCP servers were started.
    pub async fn tool_infos(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Vec<cairn_protocol::desktop::ToolInfo>, RuntimeError> {
        let has_workspace = self
            .thread_if(thread_id)
            .await?
            .is_some_and(|thread| thread.workspace.is_some());
        let toolbelt = Toolbelt::new(self.tools(has_workspace)).map_err(RuntimeError::Tools)?;
        Ok(toolbelt
            .tools()
            .iter()
            .map(|tool| cairn_protocol::desktop::ToolInfo {
                name: tool.name().to_owned(),
                category: tool.category(),
                description: tool.description().to_owned(),
            })
            .collect())
    }

    fn tools(&self, has_workspace: bool) -> Vec<Arc<dyn Tool>> {
        let memory: Arc<dyn MemoryStore> = Arc::new(StoredMemory(self.store.clone()));
        let mut tools = cairn_tools::common_tools(self.http.clone(), memory);
        if has_workspace {
            tools.extend(cairn_tools::workspace_tools());
        }
        tools.extend(
            self.extra_tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned(),
        );
        tools
    }

    /// What a turn with `choice` would have to work in: the model's context window as
    /// its server reports it, and whether the tools would be shown on demand to fit
    /// it. For a thread, its mode and workspace; for a new chat, `draft` ones.
    pub async fn context_report(
        &self,
        thread_id: Option<&str>,
        draft: (PermissionMode, Option<&str>),
        choice: &ModelChoice,
    ) -> Result<ContextReport, RuntimeError> {
        let (request, client) = self.draft_request(thread_id, draft, choice).await?;
        let window = client.context_window(&choice.model).await;
        let fit = ContextFit::new(self.limits, window, choice.sampling.max_tokens)
            .for_model(client.params(&choice.model));
        let root = RootView::new(
            &request,
            self.limits,
            choice.client.can_call_tools(&choice.model),
            &fit,
        );
        Ok(ContextReport {
            tools: root.tools_shown(&request, &fit),
            tools_in_text: client.tools_in_text(&choice.model),
            fit,
        })
    }

    /// Has the model's server read what the next turn here would open with (the
    /// instructions, the tools, the thread so far) while the user is still writing
    /// the question, so that the question is all it has left to read. For a thread,
    /// its mode, workspace and history; for a new chat, `draft` ones. Nothing is
    /// stored; a server that bills its prompts, or says nothing of its window, is
    /// sent nothing.
    pub async fn warm(
        &self,
        thread_id: Option<&str>,
        draft: (PermissionMode, Option<&str>),
        choice: &ModelChoice,
    ) -> Result<(), RuntimeError> {
        let (mut request, client) = self.draft_request(thread_id, draft, choice).await?;
        if let Some(id) = thread_id {
            request.history = self.store.history(id).await?;
        }
        let engine = Engine::new(client, self.limits);
        self.warm_ups
            .run(&choice.base_url, engine.warm(request))
            .await;
        Ok(())
    }

    /// The request a turn with `choice` would start from, before its question, and
    /// the client it would ask (what its server says of windows kept in the store).
    async fn draft_request(
        &self,
        thread_id: Option<&str>,
        draft: (PermissionMode, Option<&str>),
        choice: &ModelChoice,
    ) -> Result<(TurnRequest, Arc<dyn cairn_providers::ModelClient>), RuntimeError> {
        let thread = match thread_id {
            Some(id) => Some(self.store.thread(id).await?),
            None => None,
        };
        let (mode, folder) = match &thread {
            Some(thread) => (thread.mode, thread.workspace.clone()),
            None => (draft.0, draft.1.map(str::to_owned)),
        };
        // A folder that cannot be opened gives the thread no file tools, as a turn would
        // refuse to start there anyway.
        let workspace = folder.and_then(|root| Workspace::open(Path::new(&root)).ok());
        // A new chat's tools are the ones its first turn will have, `set_llm_params`
        // among them (never run from here, so it needs no thread yet): what is read
        // ahead must be what that turn sends.
        let tools = self.thread_toolbelt(thread_id.unwrap_or_default(), workspace.is_some())?;
        let catalog = self.agents(workspace.as_ref().map(Workspace::root));
        // A profile that can no longer be used fails the turn itself; here the
        // default one stands in.
        let agent = catalog
            .choose(&self.agent_id(thread.as_ref()).await?)
            .unwrap_or_else(|_| Arc::new(cairn_core::Agent::default()));
        let routes = agents::thread_routes(thread.as_ref(), &agent);
        let client = self.remembered(Arc::clone(&choice.client), &choice.base_url);
        let instructions = workspace.as_ref().and_then(project_instructions);
        let request = TurnRequest {
            thread_id: String::new(),
            message_id: String::new(),
            model: choice.model.clone(),
            history: Vec::new(),
            mode,
            tools,
            workspace: workspace.map(Arc::new),
            sampling: choice.sampling,
            rules: Arc::default(),
            instructions,
            agents: catalog.setup(
                agent,
                routes.then_some(cairn_core::switch::MAX_CONSECUTIVE_SWITCHES),
            ),
            plans: None,
            load_tools: Vec::new(),
        };
        Ok((request, client))
    }

    /// `client`, with what its server says of context windows kept in the store, its
    /// answers starting once no warm-up is in flight.
    fn remembered(
        &self,
        client: Arc<dyn cairn_providers::ModelClient>,
        server: &str,
    ) -> Arc<dyn cairn_providers::ModelClient> {
        let trusted_for = std::time::Duration::from_millis(
            self.windows_trusted_for
                .load(std::sync::atomic::Ordering::Relaxed),
        );
        self.warm_ups.after(
            server,
            windows::RememberedWindows::wrap(client, self.store.clone(), server, trusted_for),
        )
    }

    fn grants(&self, thread_id: &str) -> Arc<SessionGrants> {
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(grants.entry(thread_id.to_owned()).or_default())
    }
}

/// The workspace's `AGENTS.md`, when it has one that reads as text.
fn project_instructions(workspace: &Workspace) -> Option<String> {
    let bytes = workspace.read("AGENTS.md").ok()?;
    String::from_utf8(bytes)
        .ok()
        .filter(|text| !text.trim().is_empty())
}

/// The message that asks a thread to carry out its plan: the answer above, or the
/// stored draft `plan_id` (named, so the model runs it as it is instead of planning
/// again).
pub fn run_plan_prompt(plan_id: Option<&str>) -> String {
    match plan_id {
        None => "Carry out the plan above.".to_owned(),
        Some(id) => format!(
            "Run plan {id} as it is: call create_plan with plan_id \"{id}\" and \
             execution_mode \"auto_execute\"."
        ),
    }
}

/// The question a plan run shows for the user: what they did, in their words.
pub fn run_plan_shown(plan_id: Option<&str>) -> String {
    match plan_id {
        None => "Carry out the plan".to_owned(),
        Some(id) => format!("Run plan {id}"),
    }
}

/// How a turn's messages begin: a new question, or the last one asked again.
enum Opening<'a> {
    /// A new question: what the model reads, and what the window shows instead when
    /// Cairn wrote it on the user's behalf.
    Ask {
        prompt: &'a str,
        shown: Option<&'a str>,
    },
    /// The last question again (retried, regenerated or edited).
    Redo(Redo<'a>),
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
