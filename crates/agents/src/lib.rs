//! Agent profiles: `ID.md` files whose YAML front matter says what the profile may
//! call and which model it asks for, and whose Markdown body goes into its system
//! prompt.
//!
//! sources (built-in → the user's folder → the workspace's `.cairn/agents/`, a later
//! one replacing an earlier profile of the same id) → each file parsed → bases
//! resolved (instructions and tool rules inherited, cycles and unknown bases refused)
//! → [`Catalog`]: the profiles the engine runs ([`cairn_core::Agent`]), and every
//! file that could not be used, with its path and why. A bad file never stops a run.

mod catalog;
mod profile;
mod rules;

pub use catalog::{AgentDirs, Catalog, UnknownAgent, workspace_folder};
pub use profile::{FrontMatter, ProfileError, RawProfile};
pub use rules::{ToolRules, ToolRulesError};
