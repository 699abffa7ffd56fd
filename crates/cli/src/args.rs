//! The command line, as docs/design.md, "The CLI contract", specifies it.

use std::path::PathBuf;

use cairn_protocol::Dialect;
use cairn_protocol::PermissionMode;
use cairn_protocol::desktop::ExportFormat;
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
    /// List, show, search, export, rename, delete or import threads.
    Threads(ThreadsArgs),
    /// The persistent permission rules (allow, ask and deny lists).
    Rules(RulesArgs),
    /// MCP servers: which are configured, which may start.
    Mcp(McpArgs),
    /// Agent profiles: the built-in ones and those in your folder and the workspace's.
    Agents(AgentsArgs),
    /// Every model call (the usage log), with totals.
    Usage(UsageArgs),
    /// The model's parameters: defaults for every thread, or one thread's own.
    Llm(LlmArgs),
    /// Named model servers (an agent profile picks one with `server: NAME`).
    Servers(ServersArgs),
}

#[derive(Debug, clap::Args)]
pub struct ServersArgs {
    #[command(flatten)]
    pub db: DbArgs,

    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub action: ServersAction,
}

#[derive(Debug, Subcommand)]
pub enum ServersAction {
    /// Every named server, with what it says of itself: its kind, slots and window.
    List,
    /// Names the server at URL.
    Add {
        name: String,
        url: String,
        /// ollama or openai; guessed from the address when omitted.
        #[arg(long, value_parser = parse_dialect)]
        dialect: Option<Dialect>,
        /// The requests it is sent at once (default: what the server says, else 1
        /// for Ollama, llama.cpp and LM Studio, 4 for others).
        #[arg(long)]
        slots: Option<u32>,
    },
    /// Forgets a named server (its API key stays in the keychain).
    Remove { name: String },
}

#[derive(Debug, clap::Args)]
pub struct LlmArgs {
    #[command(flatten)]
    pub db: DbArgs,

    /// A thread's own values instead of the defaults.
    #[arg(long, global = true)]
    pub thread: Option<String>,

    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub action: LlmAction,
}

#[derive(Debug, Subcommand)]
pub enum LlmAction {
    /// The values set, and what applies.
    Show,
    /// Sets temperature (0-2), top_p (0-1), max_tokens, context_cap or model.
    Set { key: String, value: String },
    /// Unsets KEY, or every value.
    Reset { key: Option<String> },
}

#[derive(Debug, clap::Args)]
pub struct UsageArgs {
    #[command(flatten)]
    pub db: DbArgs,

    /// Only this thread's calls.
    #[arg(long)]
    pub thread: Option<String>,

    #[arg(long)]
    pub json: bool,

    #[command(subcommand)]
    pub action: Option<UsageAction>,
}

#[derive(Debug, Subcommand)]
pub enum UsageAction {
    /// What MODEL costs per million prompt and completion tokens (a model with no
    /// price costs nothing, as a local one does); `--remove` takes the price away.
    #[command(allow_negative_numbers = true)]
    Price {
        model: String,
        prompt_per_million: Option<f64>,
        completion_per_million: Option<f64>,
        #[arg(long, conflicts_with_all = ["prompt_per_million", "completion_per_million"])]
        remove: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub action: AgentsAction,
}

#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Every profile, and every file that could not be used and why.
    List {
        /// Include this folder's `.cairn/agents/`.
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

/// Where the MCP servers are described.
#[derive(Debug, Clone, clap::Args)]
pub struct McpConfigArgs {
    /// A Claude-Desktop-style `mcpServers` JSON file (default: mcp.json beside the
    /// database). Only servers allowed with `cairn mcp allow` start.
    #[arg(long, env = "CAIRN_MCP_CONFIG", global = true)]
    pub mcp_config: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub db: DbArgs,

    #[command(flatten)]
    pub config: McpConfigArgs,

    #[command(subcommand)]
    pub action: McpAction,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// The configured servers and whether each may start.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Let a configured server start (its tools then ask before they run, unless
    /// marked read-only or allowed by a rule).
    Allow { name: String },
    /// Stop a server from starting.
    Disallow { name: String },
    /// Believe the server when it marks a tool read-only: such tools then run without
    /// asking in default mode. Without trust every MCP tool counts as external.
    Trust { name: String },
    /// Stop believing the server's read-only marks.
    Untrust { name: String },
}

#[derive(Debug, clap::Args)]
pub struct RulesArgs {
    #[command(flatten)]
    pub db: DbArgs,

    #[command(subcommand)]
    pub action: RulesAction,
}

#[derive(Debug, Subcommand)]
pub enum RulesAction {
    /// The rules, by list.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a rule: `cairn rules add allow 'run_command(cargo test:*)'`.
    Add {
        #[arg(value_parser = ["allow", "ask", "deny"])]
        list: String,
        rule: String,
    },
    /// Remove a rule by the id `list` shows.
    Remove { id: i64 },
}

/// Where the threads live.
#[derive(Debug, Clone, clap::Args)]
pub struct DbArgs {
    /// The database file (default: cairn.db in the OS data folder, shared with the
    /// desktop app).
    #[arg(long, env = "CAIRN_DB", global = true)]
    pub db: Option<PathBuf>,
}

/// Which model server to talk to.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// A server you named (`cairn servers list`), or a known one at its usual
    /// address: ollama, lmstudio, vllm or llamacpp.
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

    #[command(flatten)]
    pub db: DbArgs,

    #[command(flatten)]
    pub mcp: McpConfigArgs,

    /// Continue this thread (default: start a new one, titled from the prompt).
    #[arg(long)]
    pub thread: Option<String>,

    /// The model to use; when omitted: the thread's, or the server's only one.
    #[arg(long, env = "CAIRN_MODEL")]
    pub model: Option<String>,

    /// The agent profile to answer as (`cairn agents list`); kept by the thread.
    /// When omitted: the thread's, or the default one for a new thread.
    #[arg(long, env = "CAIRN_AGENT")]
    pub agent: Option<String>,

    /// What tool calls may do without asking: plan, default or auto. Sets the
    /// thread's mode (new threads start in default).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<PermissionMode>,

    /// The folder file tools work in; set on the thread. Without one there are no
    /// file tools.
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
    #[command(subcommand)]
    pub action: Option<ModelsAction>,

    #[command(flatten)]
    pub server: ServerArgs,

    /// Where what Cairn learned of each model is kept.
    #[command(flatten)]
    pub db: DbArgs,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum ModelsAction {
    /// Check (again) what a model needs to answer from what its tools return: a
    /// short real turn in a scratch folder, its verdict kept for its next turns.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub server: ServerArgs,

    #[command(flatten)]
    pub db: DbArgs,

    /// The model to check; when omitted, the server's only one.
    #[arg(long, env = "CAIRN_MODEL")]
    pub model: Option<String>,

    /// Print JSON instead of a line.
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
    /// Where the named servers are kept (`--provider` may name one).
    #[command(flatten)]
    pub db: DbArgs,

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

#[derive(Debug, clap::Args)]
pub struct ThreadsArgs {
    #[command(flatten)]
    pub db: DbArgs,

    #[command(subcommand)]
    pub action: ThreadsAction,
}

#[derive(Debug, Subcommand)]
pub enum ThreadsAction {
    /// The threads, most recent first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long, default_value_t = 0)]
        offset: u32,
        #[arg(long)]
        json: bool,
    },
    /// A thread's messages (with execution trees in --json).
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Messages containing these words, across all threads.
    Search {
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// A thread as Markdown or JSON (with execution trees), to stdout or a file.
    Export {
        id: String,
        #[arg(long, value_parser = parse_export_format, default_value = "md")]
        format: ExportFormat,
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Bring back a thread exported as JSON.
    Import { file: PathBuf },
    Rename {
        id: String,
        #[arg(required = true, num_args = 1..)]
        title: Vec<String>,
    },
    /// Delete a thread and all its messages.
    Delete { id: String },
    /// Put back the files an answer changed, as they were before it (after showing
    /// what that changes). Refused, changing nothing, where a file changed since.
    Restore {
        id: String,
        /// The answer (message id, from `threads show --json`); the last answer with
        /// files to put back when not given.
        #[arg(long)]
        answer: Option<String>,
        /// Show what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
}

fn parse_mode(text: &str) -> Result<PermissionMode, cairn_protocol::permission::UnknownMode> {
    text.parse()
}

fn parse_dialect(text: &str) -> Result<Dialect, cairn_protocol::UnknownDialect> {
    text.parse()
}

/// An export format that is not md or json.
#[derive(Debug, thiserror::Error)]
#[error("unknown format `{0}`: use md or json")]
struct UnknownFormat(String);

fn parse_export_format(text: &str) -> Result<ExportFormat, UnknownFormat> {
    match text {
        "md" => Ok(ExportFormat::Md),
        "json" => Ok(ExportFormat::Json),
        other => Err(UnknownFormat(other.to_owned())),
    }
}
