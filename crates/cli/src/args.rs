//! The command line, as DESIGN.md "The CLI contract" specifies it.

use std::path::PathBuf;

use cairn_protocol::PermissionMode;
use cairn_providers::Dialect;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cairn",
    version,
    about = "Cairn's agent, headless: runs a turn and prints its events"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one turn of the agent on PROMPT.
    Run(RunArgs),
    /// List the models a server offers; without a server, find the running ones.
    Models(ModelsArgs),
    /// Download a model into Ollama, with a progress bar.
    Pull(PullArgs),
    /// Store or delete a server's API key in the OS keychain.
    Keys(KeysArgs),
}

/// Which model server to talk to.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// A known server at its usual address: ollama, lmstudio, vllm or llamacpp.
    #[arg(long, env = "CAIRN_PROVIDER", conflicts_with = "base_url")]
    pub provider: Option<String>,

    /// The model server's address (default: Ollama at http://localhost:11434).
    #[arg(long, env = "CAIRN_BASE_URL")]
    pub base_url: Option<String>,

    /// How to talk to it: ollama (native API) or openai (OpenAI-compatible). Guessed
    /// from the address when omitted: port 11434 or a path ending in /api is Ollama.
    #[arg(long, env = "CAIRN_DIALECT", value_parser = parse_dialect)]
    pub dialect: Option<Dialect>,

    /// Seconds of silence in a stream before it counts as stalled (default 300).
    #[arg(long, env = "CAIRN_IDLE_TIMEOUT_SECS", value_name = "SECS")]
    pub idle_timeout: Option<u64>,

    /// Ollama: the largest context window to ask for, in tokens (default 32768).
    #[arg(long, env = "CAIRN_CONTEXT_CAP", value_name = "TOKENS")]
    pub context_cap: Option<u32>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub server: ServerArgs,

    /// The model to use; when omitted and the server offers exactly one, that one.
    #[arg(long, env = "CAIRN_MODEL")]
    pub model: Option<String>,

    /// What tool calls may do without asking: plan, default or auto.
    #[arg(long, default_value = "default", value_parser = parse_mode)]
    pub mode: PermissionMode,

    /// The folder file tools work in. Without one there are no file tools.
    #[arg(long)]
    pub workspace: Option<PathBuf>,

    /// Sampling temperature (tool rounds default to 0).
    #[arg(long)]
    pub temperature: Option<f64>,

    /// Print one JSON event per line and read approval answers as JSON lines on stdin.
    #[arg(long)]
    pub json: bool,

    /// What to ask.
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    #[command(flatten)]
    pub server: ServerArgs,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The model to download, e.g. qwen3:8b.
    pub model: String,

    /// Ollama's address.
    #[arg(long, env = "CAIRN_BASE_URL", default_value = "http://localhost:11434")]
    pub base_url: String,
}

#[derive(Debug, clap::Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub action: KeysAction,
}

#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Store the key read from stdin for a server.
    Set(ServerArgs),
    /// Delete a server's key.
    Delete(ServerArgs),
}

fn parse_mode(text: &str) -> Result<PermissionMode, String> {
    text.parse()
        .map_err(|err: cairn_protocol::permission::UnknownMode| err.to_string())
}

fn parse_dialect(text: &str) -> Result<Dialect, String> {
    text.parse()
}
