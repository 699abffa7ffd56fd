//! Every profile a thread can use: found in their sources, bases resolved, the files
//! that could not be used kept with the reason.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Agent, AgentRole, AgentSetup};
use cairn_protocol::{AgentInfo, AgentSource};

use crate::profile::{ProfileError, RawProfile};
use crate::rules::ToolRules;

/// The built-in profiles, lowest in precedence.
const BUILTIN: [(&str, &str); 4] = [
    ("chat", include_str!("../builtin/chat.md")),
    ("explore", include_str!("../builtin/explore.md")),
    ("auto", include_str!("../builtin/auto.md")),
    ("review", include_str!("../builtin/review.md")),
];

/// The folders profiles are read from, besides the built-ins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentDirs {
    /// The user's folder.
    pub user: Option<PathBuf>,
    /// The workspace's `.cairn/agents/`.
    pub workspace: Option<PathBuf>,
}

impl AgentDirs {
    /// The user's folder is `moved_to` when set (`CAIRN_AGENTS_DIR`), else
    /// `$XDG_CONFIG_HOME/cairn/agents/` (`~/.config/cairn/agents/`).
    pub fn new(moved_to: Option<PathBuf>, workspace: Option<&Path>) -> Self {
        Self {
            user: moved_to
                .filter(|dir| !dir.as_os_str().is_empty())
                .or_else(|| dirs::config_dir().map(|dir| dir.join("cairn").join("agents"))),
            workspace: workspace.map(workspace_folder),
        }
    }

    /// As [`AgentDirs::new`], with `CAIRN_AGENTS_DIR` from the environment.
    pub fn from_env(workspace: Option<&Path>) -> Self {
        Self::new(
            std::env::var_os("CAIRN_AGENTS_DIR").map(PathBuf::from),
            workspace,
        )
    }
}

/// Where a workspace keeps its own profiles: `.cairn/agents/`.
pub fn workspace_folder(root: &Path) -> PathBuf {
    root.join(".cairn").join("agents")
}

/// A thread asked for a profile it cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}. Agents: {}", visible.join(", "))]
pub struct UnknownAgent {
    pub problem: String,
    /// The profiles a thread can use.
    pub visible: Vec<String>,
}

/// Why a profile's file was left out; said in the list of profiles.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error("the folder cannot be read: {0}")]
    Folder(std::io::Error),
    #[error("it cannot be read: {0}")]
    File(std::io::Error),
    #[error("it is not UTF-8 text")]
    NotText,
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// One file (or built-in) found, parsed or not.
struct Found {
    source: AgentSource,
    path: Option<PathBuf>,
    parsed: Result<RawProfile, Unreadable>,
    id: String,
}

/// A profile's inheritance, folded.
#[derive(Clone)]
struct Folded {
    instructions: String,
    rules: ToolRules,
}

/// Why a profile's bases cannot be folded into it, as its line in `cairn agents` says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum FoldError {
    /// The ids from the profile round to itself again.
    #[error("its bases form a cycle: {}", .0.join(" → "))]
    Cycle(Vec<String>),
    #[error("there is no profile `{0}`")]
    Missing(String),
    #[error("its base `{0}` is unknown")]
    UnknownBase(String),
    #[error("its base `{base}` cannot be used: {reason}")]
    UnusableBase {
        base: String,
        reason: Box<FoldError>,
    },
    #[error(transparent)]
    Rules(#[from] crate::rules::ToolRulesError),
}

/// The usable profiles, and a line for every profile and every file skipped.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    agents: Vec<Arc<Agent>>,
    infos: Vec<AgentInfo>,
}

impl Catalog {
    /// The built-ins, then the user's folder, then the workspace's.
    pub fn load(dirs: &AgentDirs) -> Self {
        let mut found = builtins();
        for (source, dir) in [
            (AgentSource::User, &dirs.user),
            (AgentSource::Workspace, &dirs.workspace),
        ] {
            if let Some(dir) = dir {
                found.extend(read_folder(source, dir));
            }
        }
        Self::from_found(found)
    }

    /// The built-in profiles alone.
    pub fn builtin() -> Self {
        Self::from_found(builtins())
    }

    fn from_found(found: Vec<Found>) -> Self {
        let mut infos = Vec::new();
        // The last usable file of each id wins; the others that parsed are replaced.
        let mut winners: BTreeMap<String, Found> = BTreeMap::new();
        for item in found {
            match &item.parsed {
                Err(reason) => infos.push(info_of(&item, Some(reason.to_string()))),
                Ok(_) => {
                    winners.insert(item.id.clone(), item);
                }
            }
        }
        let mut folded: HashMap<String, Result<Folded, FoldError>> = HashMap::new();
        let mut agents = Vec::new();
        for (id, item) in &winners {
            let result = fold(id, &winners, &mut folded, &mut Vec::new());
            let Ok(raw) = &item.parsed else { continue };
            match result {
                Ok(folded) => {
                    infos.push(info_of(item, None));
                    agents.push(Arc::new(Agent {
                        id: id.clone(),
                        description: raw.front.description.clone(),
                        instructions: folded.instructions,
                        model: raw.front.model.clone(),
                        server: raw.front.server.clone(),
                        temperature: raw.front.temperature,
                        tools: Arc::new(folded.rules),
                        runnable: raw.front.subagent.runnable,
                        hidden: raw.front.ui.hidden,
                        role: raw.front.role,
                    }));
                }
                Err(reason) => infos.push(info_of(item, Some(reason.to_string()))),
            }
        }
        infos.sort_by(|a, b| a.id.cmp(&b.id).then(a.source.cmp(&b.source)));
        one_holder_per_role(&mut agents, &winners);
        for info in infos.iter_mut().filter(|info| info.error.is_none()) {
            info.role = agents
                .iter()
                .find(|agent| agent.id == info.id)
                .and_then(|agent| agent.role)
                .map(|role| role.as_str().to_owned());
        }
        Self { agents, infos }
    }

    /// The usable profiles, by id.
    pub fn agents(&self) -> &[Arc<Agent>] {
        &self.agents
    }

    /// Every profile and every file skipped (`error` set), by id.
    pub fn infos(&self) -> &[AgentInfo] {
        &self.infos
    }

    /// The files skipped, each with its path and why.
    pub fn problems(&self) -> impl Iterator<Item = &AgentInfo> {
        self.infos.iter().filter(|info| info.error.is_some())
    }

    pub fn get(&self, id: &str) -> Option<&Arc<Agent>> {
        self.agents.iter().find(|agent| agent.id == id)
    }

    /// The profiles a user (or the router) may give a thread.
    pub fn visible_ids(&self) -> Vec<String> {
        self.agents
            .iter()
            .filter(|agent| !agent.hidden)
            .map(|agent| agent.id.clone())
            .collect()
    }

    /// The profile a thread runs as: one that exists and is not hidden.
    pub fn choose(&self, id: &str) -> Result<Arc<Agent>, UnknownAgent> {
        let problem = match self.get(id) {
            Some(agent) if !agent.hidden => return Ok(Arc::clone(agent)),
            Some(_) => format!("`{id}` is an agent for subtasks only"),
            None => match self.infos.iter().find(|info| info.id == id) {
                Some(AgentInfo {
                    error: Some(reason),
                    path,
                    ..
                }) => format!(
                    "the agent `{id}` could not be read ({}): {reason}",
                    path.as_deref().unwrap_or("built-in")
                ),
                _ => format!("there is no agent `{id}`"),
            },
        };
        Err(UnknownAgent {
            problem,
            visible: self.visible_ids(),
        })
    }

    /// What a turn as `current` needs to know of the profiles.
    pub fn setup(&self, current: Arc<Agent>, switches_left: Option<u32>) -> AgentSetup {
        AgentSetup {
            current,
            roster: self.agents.iter().cloned().collect(),
            switches_left,
        }
    }
}

/// A role is one profile's: when several declare it, the most local keeps it (the
/// workspace's over the user's over a built-in; between equals, the first by id), so a
/// user's own reviewer replaces the built-in one without renaming it.
fn one_holder_per_role(agents: &mut [Arc<Agent>], winners: &BTreeMap<String, Found>) {
    let source = |id: &str| winners.get(id).map(|found| found.source);
    for role in [AgentRole::Router, AgentRole::Reviewer] {
        let keeper = agents
            .iter()
            .filter(|agent| agent.role == Some(role))
            .max_by(|a, b| source(&a.id).cmp(&source(&b.id)).then(b.id.cmp(&a.id)))
            .map(|agent| agent.id.clone());
        let Some(keeper) = keeper else { continue };
        for agent in agents.iter_mut() {
            if agent.role == Some(role) && agent.id != keeper {
                Arc::make_mut(agent).role = None;
            }
        }
    }
}

/// Folds `id`'s bases into it; `chain` holds the ids being folded, to find cycles.
fn fold(
    id: &str,
    winners: &BTreeMap<String, Found>,
    done: &mut HashMap<String, Result<Folded, FoldError>>,
    chain: &mut Vec<String>,
) -> Result<Folded, FoldError> {
    if let Some(result) = done.get(id) {
        return result.clone();
    }
    if chain.iter().any(|seen| seen == id) {
        chain.push(id.to_owned());
        return Err(FoldError::Cycle(chain.clone()));
    }
    let Some(Found {
        parsed: Ok(raw), ..
    }) = winners.get(id)
    else {
        return Err(FoldError::Missing(id.to_owned()));
    };
    chain.push(id.to_owned());
    let result = match &raw.front.base {
        None => Ok(Folded {
            instructions: String::new(),
            rules: ToolRules::default(),
        }),
        Some(base) if !winners.contains_key(base) => Err(FoldError::UnknownBase(base.clone())),
        // A cycle is said once, whole, from wherever it was found.
        Some(base) => fold(base, winners, done, chain).map_err(|reason| match reason {
            FoldError::Cycle(_) => reason,
            reason => FoldError::UnusableBase {
                base: base.clone(),
                reason: Box::new(reason),
            },
        }),
    }
    .and_then(|base| {
        let rules = base.rules.then(&raw.front.tools)?;
        let instructions = [base.instructions.as_str(), raw.instructions.as_str()]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        Ok(Folded {
            instructions,
            rules,
        })
    });
    chain.pop();
    done.insert(id.to_owned(), result.clone());
    result
}

fn builtins() -> Vec<Found> {
    BUILTIN
        .iter()
        .map(|(id, text)| Found {
            source: AgentSource::Builtin,
            path: None,
            id: (*id).to_owned(),
            parsed: RawProfile::parse(id, text).map_err(Unreadable::from),
        })
        .collect()
}

/// Every `*.md` in `dir`, by name; a folder that does not exist has none.
fn read_folder(source: AgentSource, dir: &Path) -> Vec<Found> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(err) => {
            return vec![Found {
                source,
                path: Some(dir.to_owned()),
                id: String::new(),
                parsed: Err(Unreadable::Folder(err)),
            }];
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let id = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            let parsed = match std::fs::read(&path) {
                Err(err) => Err(Unreadable::File(err)),
                Ok(bytes) => match String::from_utf8(bytes) {
                    Err(_) => Err(Unreadable::NotText),
                    Ok(text) => RawProfile::parse(&id, &text).map_err(Unreadable::from),
                },
            };
            Found {
                source,
                path: Some(path),
                id,
                parsed,
            }
        })
        .collect()
}

fn info_of(item: &Found, error: Option<String>) -> AgentInfo {
    let front = item.parsed.as_ref().ok().map(|raw| &raw.front);
    AgentInfo {
        id: item.id.clone(),
        description: front.map(|f| f.description.clone()).unwrap_or_default(),
        source: item.source,
        base: front.and_then(|f| f.base.clone()),
        hidden: front.is_some_and(|f| f.ui.hidden),
        runnable: front.is_none_or(|f| f.subagent.runnable),
        model: front.and_then(|f| f.model.clone()),
        server: front.and_then(|f| f.server.clone()),
        error,
        path: item.path.as_ref().map(|path| path.display().to_string()),
        role: None,
    }
}
