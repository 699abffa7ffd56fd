//! The model servers the user named (`cairn servers`, Settings' server list), kept in
//! the store with the other settings; how many requests each is sent at once; and the
//! directory a turn's profiles pick their server from (`server: NAME` in a profile).
//!
//! Slots are the server's, not a turn's: every turn of this process that asks a
//! server shares one semaphore for it, sized by the user's setting, else by what the
//! server says (llama.cpp's `total_slots`), else by its kind.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use cairn_core::PortError;
use cairn_core::servers::{ModelServer, ProbeFuture, ServerDirectory, ServerFuture};
use cairn_protocol::Dialect;
use cairn_protocol::desktop::SavedEndpoint;
use cairn_providers::{Endpoint, PRESETS, Server, ServerFacts, ServerKind};
use cairn_secrets::SecretStore;
use tokio::sync::{OnceCell, Semaphore};

use crate::{Runtime, RuntimeError};

/// Where the list is kept.
pub const SERVERS_KEY: &str = "servers";

/// How long a server may take to say what it is before its kind's default applies.
const FACTS_TIMEOUT: Duration = Duration::from_secs(3);

/// The most slots a server may be given: beyond it the per-turn limit decides anyway.
pub const MAX_SLOTS: u32 = 64;

/// A named server as it stands now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    pub server: SavedEndpoint,
    /// What it said of itself; `None` when it did not answer (`error` says why).
    pub facts: Option<ServerFacts>,
    /// The requests it is sent at once, as things stand.
    pub slots: u32,
    pub error: Option<String>,
}

/// The servers' slots, shared by every turn of the process, and what each server
/// said of itself (asked once per process).
#[derive(Debug, Default)]
pub(crate) struct SlotTable {
    semaphores: Mutex<HashMap<String, (u32, Arc<Semaphore>)>>,
    /// One entry per server, so that subtasks starting together share one question:
    /// two asking apart could hear different answers (one timing out) and count the
    /// same server's slots on two semaphores.
    said: Mutex<HashMap<String, Arc<Said>>>,
}

/// What a server said of itself, each asked once per process.
#[derive(Debug, Default)]
struct Said {
    facts: OnceCell<Option<ServerFacts>>,
    /// The one model it serves, when it serves one.
    model: OnceCell<Option<String>>,
}

impl SlotTable {
    /// The semaphore of the server at `base` with `count` slots: the same one for
    /// every turn while the count stands.
    fn semaphore(&self, base: &str, count: u32) -> Arc<Semaphore> {
        let mut table = self
            .semaphores
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match table.get(base) {
            Some((kept, semaphore)) if *kept == count => Arc::clone(semaphore),
            _ => {
                let semaphore = Arc::new(Semaphore::new(count as usize));
                table.insert(base.to_owned(), (count, Arc::clone(&semaphore)));
                semaphore
            }
        }
    }

    fn said(&self, base: &str) -> Arc<Said> {
        Arc::clone(
            self.said
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(base.to_owned())
                .or_default(),
        )
    }

    /// What the server at `base` says of itself, asked the first time only; callers
    /// arriving while it is being asked wait for that answer.
    async fn facts(&self, base: &str, server: &Server) -> Option<ServerFacts> {
        *self
            .said(base)
            .facts
            .get_or_init(|| async {
                tokio::time::timeout(FACTS_TIMEOUT, server.facts())
                    .await
                    .ok()
                    .and_then(Result::ok)
            })
            .await
    }

    /// The one model the server at `base` serves, if it lists exactly one; asked as
    /// [`Self::facts`] is.
    async fn served_model(&self, base: &str, server: &Server) -> Option<String> {
        self.said(base)
            .model
            .get_or_init(|| async {
                let listed = tokio::time::timeout(FACTS_TIMEOUT, server.list_models()).await;
                match listed {
                    Ok(Ok(models)) if models.len() == 1 => models.into_iter().next(),
                    _ => None,
                }
            })
            .await
            .clone()
    }

    /// The server at `base`, named `name`, asked through `client`, with `count` slots
    /// shared with every other turn that asks it.
    fn connect(
        &self,
        name: &str,
        base: &str,
        count: u32,
        client: Arc<dyn cairn_core::model::ModelClient>,
    ) -> ModelServer {
        ModelServer::sharing(name, client, self.semaphore(base, count), count as usize)
    }
}

/// The slots a server gets when the user set none: its own figure, else its kind's
/// default, else (it did not answer) its dialect's.
fn slots_said(facts: Option<ServerFacts>, dialect: Dialect) -> u32 {
    match facts {
        Some(facts) => facts.slots.unwrap_or_else(|| facts.kind.default_slots()),
        None => match dialect {
            Dialect::Ollama => ServerKind::Ollama.default_slots(),
            Dialect::Openai => ServerKind::OpenaiCompatible.default_slots(),
        },
    }
}

/// What is wrong with a list of named servers, said so the user can fix it.
#[derive(Debug, thiserror::Error)]
pub enum BadServerList {
    #[error("the server at {0} needs a name")]
    NoName(String),
    #[error("the server name {0:?} has control characters")]
    ControlCharacters(String),
    #[error("two servers are named `{0}`")]
    SameName(String),
    #[error("server `{name}`: {why}")]
    Address {
        name: String,
        why: cairn_providers::ProviderError,
    },
    #[error("server `{name}`: slots must be between 1 and {MAX_SLOTS}, not {slots}")]
    Slots { name: String, slots: u32 },
}

/// The list tidied, or what is wrong with it.
pub fn check_servers(servers: &mut [SavedEndpoint]) -> Result<(), BadServerList> {
    let mut names = std::collections::HashSet::new();
    for server in servers.iter_mut() {
        server.name = server.name.trim().to_owned();
        server.base_url = server.base_url.trim().to_owned();
        let SavedEndpoint {
            name,
            dialect,
            base_url,
            slots,
        } = &*server;
        if name.is_empty() {
            return Err(BadServerList::NoName(base_url.clone()));
        }
        if name.chars().any(char::is_control) {
            return Err(BadServerList::ControlCharacters(name.clone()));
        }
        if !names.insert(name.clone()) {
            return Err(BadServerList::SameName(name.clone()));
        }
        Endpoint::new(*dialect, base_url)
            .normalized_base()
            .map_err(|why| BadServerList::Address {
                name: name.clone(),
                why,
            })?;
        if let Some(slots) = slots
            && !(1..=MAX_SLOTS).contains(slots)
        {
            return Err(BadServerList::Slots {
                name: name.clone(),
                slots: *slots,
            });
        }
    }
    Ok(())
}

impl Runtime {
    /// The servers the user named, in the order they were added.
    pub async fn servers(&self) -> Result<Vec<SavedEndpoint>, RuntimeError> {
        Ok(self.store.setting(SERVERS_KEY).await?.unwrap_or_default())
    }

    /// Keeps `servers` as the whole list, checked first: nothing is kept when one is
    /// wrong.
    pub async fn set_servers(
        &self,
        mut servers: Vec<SavedEndpoint>,
    ) -> Result<Vec<SavedEndpoint>, RuntimeError> {
        check_servers(&mut servers).map_err(|bad| RuntimeError::BadValue(bad.to_string()))?;
        self.store.set_setting(SERVERS_KEY, &servers).await?;
        Ok(servers)
    }

    /// Adds `server`; a name already taken is refused.
    pub async fn add_server(&self, server: SavedEndpoint) -> Result<(), RuntimeError> {
        let mut servers = self.servers().await?;
        let name = server.name.trim();
        if servers.iter().any(|kept| kept.name == name) {
            return Err(RuntimeError::BadValue(format!(
                "a server is already named `{name}`; remove it first, or choose another name"
            )));
        }
        servers.push(server);
        self.set_servers(servers).await.map(drop)
    }

    /// Forgets the server called `name`.
    pub async fn remove_server(&self, name: &str) -> Result<(), RuntimeError> {
        let mut servers = self.servers().await?;
        let before = servers.len();
        servers.retain(|kept| kept.name != name);
        if servers.len() == before {
            return Err(unknown_server(name, &servers));
        }
        self.set_servers(servers).await.map(drop)
    }

    /// Every named server with what it says of itself now, asked all at once.
    pub async fn server_reports(&self) -> Result<Vec<ServerReport>, RuntimeError> {
        let servers = self.servers().await?;
        let asked = servers.into_iter().map(|server| async move {
            let endpoint = Endpoint::new(server.dialect, &server.base_url);
            let said = match Server::connect(&endpoint) {
                Ok(connected) => tokio::time::timeout(FACTS_TIMEOUT, connected.facts())
                    .await
                    .unwrap_or_else(|_| Err(timed_out(&server.base_url)))
                    .map_err(|err| err.to_string()),
                Err(err) => Err(err.to_string()),
            };
            let (facts, error) = match said {
                Ok(facts) => (Some(facts), None),
                Err(error) => (None, Some(error)),
            };
            ServerReport {
                slots: server
                    .slots
                    .unwrap_or_else(|| slots_said(facts, server.dialect)),
                server,
                facts,
                error,
            }
        });
        Ok(futures_util::future::join_all(asked).await)
    }

    /// Where API keys are read from for the servers profiles name (the thread's own
    /// comes with its [`crate::ModelChoice`]). Without it, they are sent no key.
    pub fn use_secrets(&self, secrets: Arc<dyn SecretStore>) {
        let _ = self.secrets.set(secrets);
    }

    /// The thread's server as a turn asks it: by the name the user gave it, else its
    /// preset's id, else its address; with its slots.
    pub(crate) async fn home_server(
        &self,
        choice: &crate::ModelChoice,
        client: Arc<dyn cairn_core::model::ModelClient>,
        named: &[SavedEndpoint],
    ) -> Result<Arc<ModelServer>, RuntimeError> {
        let dialect: Dialect =
            choice
                .dialect
                .parse()
                .map_err(|err: cairn_protocol::UnknownDialect| {
                    RuntimeError::BadValue(err.to_string())
                })?;
        // The address as clients name it, without building one: this runs before
        // every turn.
        let base = Endpoint::new(dialect, &choice.base_url).normalized_base()?;
        let same = |dialect: Dialect, url: &str| {
            Endpoint::new(dialect, url)
                .normalized_base()
                .ok()
                .as_deref()
                == Some(base.as_str())
        };
        let entry = named
            .iter()
            .find(|entry| same(entry.dialect, &entry.base_url));
        let name = match entry {
            Some(entry) => entry.name.clone(),
            None => PRESETS
                .iter()
                .find(|preset| same(preset.dialect, preset.base_url))
                .map_or_else(|| address_name(&base), |preset| preset.id.to_owned()),
        };
        // What the server said with its window (llama.cpp's slots come in the same
        // answer); nothing is asked here, before the thread's first answer.
        let said = cairn_providers::windows::said(&base, &choice.model).and_then(|said| said.slots);
        let count = entry
            .and_then(|entry| entry.slots)
            .or(said)
            .unwrap_or_else(|| slots_said(None, dialect));
        Ok(Arc::new(self.slots.connect(&name, &base, count, client)))
    }

    /// The thread's server and the directory of the named ones, for a turn whose
    /// root runs as `agent`: a profile naming a server nobody named is refused before
    /// anything is stored.
    pub(crate) async fn engine_servers(
        &self,
        choice: &crate::ModelChoice,
        client: Arc<dyn cairn_core::model::ModelClient>,
        agent: &cairn_core::Agent,
    ) -> Result<(Arc<ModelServer>, Arc<dyn ServerDirectory>), RuntimeError> {
        let named = self.servers().await?;
        let home = self.home_server(choice, client, &named).await?;
        if agent.server.as_deref() != Some(home.name.as_str()) {
            self.check_agent_server(agent).await?;
        }
        Ok((home, self.directory(named)))
    }

    /// Refuses a turn whose profile names a server nobody named, before anything is
    /// stored.
    pub(crate) async fn check_agent_server(
        &self,
        agent: &cairn_core::Agent,
    ) -> Result<(), RuntimeError> {
        let Some(name) = agent.server.as_deref() else {
            return Ok(());
        };
        let named = self.servers().await?;
        if with_presets(&named)
            .iter()
            .any(|server| server.name == name)
        {
            Ok(())
        } else {
            Err(unknown_server(name, &named))
        }
    }

    /// The directory a turn's profiles pick their servers from.
    pub(crate) fn directory(&self, named: Vec<SavedEndpoint>) -> Arc<dyn ServerDirectory> {
        Arc::new(Directory {
            named: with_presets(&named),
            slots: Arc::clone(&self.slots),
            secrets: self.secrets.get().cloned(),
        })
    }
}

/// The servers the user named, then the presets under their ids (`ollama`,
/// `llamacpp`, …) where no named server took the id: a profile may name either.
fn with_presets(named: &[SavedEndpoint]) -> Vec<SavedEndpoint> {
    let presets = PRESETS
        .iter()
        .filter(|preset| named.iter().all(|server| server.name != preset.id))
        .map(|preset| SavedEndpoint {
            name: preset.id.to_owned(),
            dialect: preset.dialect,
            base_url: preset.base_url.to_owned(),
            slots: None,
        });
    named.iter().cloned().chain(presets).collect()
}

/// `host:port` of an address, for a server the user did not name.
fn address_name(base: &str) -> String {
    let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

fn timed_out(base_url: &str) -> cairn_providers::ProviderError {
    cairn_providers::ProviderError::Stalled {
        server: base_url.to_owned(),
        seconds: FACTS_TIMEOUT.as_secs(),
    }
}

pub(crate) fn unknown_server(name: &str, named: &[SavedEndpoint]) -> RuntimeError {
    RuntimeError::UnknownServer {
        name: name.to_owned(),
        known: with_presets(named)
            .into_iter()
            .map(|server| server.name)
            .collect(),
    }
}

/// The named servers, connected on demand.
struct Directory {
    named: Vec<SavedEndpoint>,
    slots: Arc<crate::named::SlotTable>,
    secrets: Option<Arc<dyn SecretStore>>,
}

impl Directory {
    fn server_at(&self, entry: &SavedEndpoint) -> Result<Server, RuntimeError> {
        let mut endpoint = Endpoint::new(entry.dialect, &entry.base_url);
        if let Some(secrets) = &self.secrets {
            endpoint.api_key = crate::api_key(&endpoint, None, secrets.as_ref())?;
        }
        Ok(Server::connect(&endpoint)?)
    }

    fn entry(&self, name: &str) -> Result<&SavedEndpoint, RuntimeError> {
        self.named
            .iter()
            .find(|entry| entry.name == name)
            .ok_or_else(|| unknown_server(name, &self.named))
    }
}

impl ServerDirectory for Directory {
    fn server<'a>(&'a self, name: &'a str) -> ServerFuture<'a> {
        Box::pin(async move {
            let entry = self.entry(name).map_err(PortError::new)?;
            let server = self.server_at(entry).map_err(PortError::new)?;
            let base = server.server().to_owned();
            // A subtask's server is asked what it is, once per process: the work sent
            // there is already under way, and its slots decide how much goes at once.
            // What it serves decides the model of a profile that names none.
            let count = async {
                match entry.slots {
                    Some(count) => count,
                    None => slots_said(self.slots.facts(&base, &server).await, entry.dialect),
                }
            };
            let (count, model) = tokio::join!(count, self.slots.served_model(&base, &server));
            let connected = self
                .slots
                .connect(&entry.name, &base, count, server.model_client());
            Ok(Arc::new(connected.serving(model)))
        })
    }

    fn probe<'a>(&'a self, server: &'a ModelServer) -> ProbeFuture<'a> {
        Box::pin(async move {
            let entry = self.entry(&server.name).map_err(PortError::new)?;
            let connected = self.server_at(entry).map_err(PortError::new)?;
            tokio::time::timeout(FACTS_TIMEOUT, connected.list_models())
                .await
                .unwrap_or_else(|_| Err(timed_out(&entry.base_url)))
                .map(drop)
                .map_err(PortError::new)
        })
    }
}

/// Kept for the runtime: the keychain, once a front end gives it.
pub(crate) type Secrets = OnceLock<Arc<dyn SecretStore>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, base_url: &str) -> SavedEndpoint {
        SavedEndpoint {
            name: name.into(),
            dialect: Dialect::Openai,
            base_url: base_url.into(),
            slots: None,
        }
    }

    #[test]
    fn each_mistake_in_the_list_is_named() {
        let cases: [(Vec<SavedEndpoint>, &str); 4] = [
            (vec![named("  ", "http://gpu:8000")], "needs a name"),
            (
                vec![named("gpu", "http://a:1"), named("gpu", "http://b:1")],
                "two servers are named `gpu`",
            ),
            (vec![named("gpu", "gpu 8000")], "server `gpu`"),
            (
                vec![SavedEndpoint {
                    slots: Some(0),
                    ..named("gpu", "http://gpu:8000")
                }],
                "slots must be between 1 and 64",
            ),
        ];
        for (mut servers, expected) in cases {
            let err = check_servers(&mut servers).unwrap_err().to_string();
            assert!(err.contains(expected), "{err:?} says {expected:?}");
        }
        let mut fine = vec![named(" gpu ", " http://gpu:8000 ")];
        check_servers(&mut fine).unwrap();
        assert_eq!(fine[0].name, "gpu");
        assert_eq!(fine[0].base_url, "http://gpu:8000");
    }

    #[test]
    fn a_server_gets_its_own_figure_else_its_kinds() {
        let llama = ServerFacts {
            kind: ServerKind::LlamaCpp,
            slots: Some(3),
            window: None,
        };
        assert_eq!(slots_said(Some(llama), Dialect::Openai), 3);
        let vllm = ServerFacts {
            kind: ServerKind::Vllm,
            slots: None,
            window: None,
        };
        assert_eq!(slots_said(Some(vllm), Dialect::Openai), 4);
        assert_eq!(slots_said(None, Dialect::Ollama), 1);
        assert_eq!(slots_said(None, Dialect::Openai), 4);
    }

    #[test]
    fn every_turn_shares_a_servers_slots_until_their_number_changes() {
        let table = SlotTable::default();
        let first = table.semaphore("http://gpu:8000", 2);
        assert!(Arc::ptr_eq(&first, &table.semaphore("http://gpu:8000", 2)));
        assert!(!Arc::ptr_eq(&first, &table.semaphore("http://gpu:8000", 3)));
        assert!(!Arc::ptr_eq(
            &table.semaphore("http://gpu:8000", 3),
            &table.semaphore("http://cpu:8000", 3)
        ));
    }

    #[tokio::test]
    async fn servers_asked_together_are_asked_once() {
        let slow = cairn_testkit::machines::llama_box(1, Duration::ZERO, "unused").await;
        // Slow to say it, so the four questions overlap.
        slow.fallback(
            "GET /props",
            cairn_testkit::Reply::json(
                200,
                r#"{"total_slots": 1, "default_generation_settings": {"n_ctx": 8192}}"#,
            )
            .head_delay(Duration::from_millis(100)),
        );
        let server = Server::connect(&Endpoint::new(Dialect::Openai, slow.url())).unwrap();
        let table = SlotTable::default();
        let base = server.server().to_owned();
        let said =
            futures_util::future::join_all((0..4).map(|_| table.facts(&base, &server))).await;
        assert!(
            said.iter()
                .all(|facts| facts.and_then(|f| f.slots) == Some(1))
        );
        assert_eq!(slow.requests_to("GET /props").len(), 1);
        table.facts(&base, &server).await;
        assert_eq!(
            slow.requests_to("GET /props").len(),
            1,
            "kept for the process"
        );
    }

    #[test]
    fn an_unnamed_server_is_called_by_its_address() {
        assert_eq!(address_name("http://10.0.0.5:8080"), "10.0.0.5:8080");
        assert_eq!(
            address_name("https://api.example.com/v1"),
            "api.example.com"
        );
    }
}
