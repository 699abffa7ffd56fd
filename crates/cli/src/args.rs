//! The command line, as DESIGN.md "The CLI contract" specifies it.

use std::path::PathBuf;

use cairn_protocol::PermissionMode;
use clap::{Parser, Subcommand, ValueEnum};

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dialect {
    /// Ollama's native API (/api/chat).
    Ollama,
    /// The OpenAI-compatible API (/v1/chat/completions): LM Studio, vLLM, llama.cpp, Ollama's /v1.
    Openai,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The model server.
    #[arg(long, env = "CAIRN_BASE_URL", default_value = "http://localhost:11434")]
    pub base_url: String,

    /// How to talk to it.
    #[arg(long, value_enum, env = "CAIRN_DIALECT", default_value = "openai")]
    pub dialect: Dialect,

    /// The model to use; when omitted and the server offers exactly one, that one.
    #[arg(long, env = "CAIRN_MODEL")]
    pub model: Option<String>,

    /// What tool calls may do without asking: plan, default or auto.
    #[arg(long, default_value = "default", value_parser = parse_mode)]
    pub mode: PermissionMode,

    /// The folder file tools work in. Without one there are no file tools.
    #[arg(long)]
    pub workspace: Option<PathBuf>,

    /// Print one JSON event per line and read approval answers as JSON lines on stdin.
    #[arg(long)]
    pub json: bool,

    /// What to ask.
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

fn parse_mode(text: &str) -> Result<PermissionMode, String> {
    text.parse()
        .map_err(|err: cairn_protocol::permission::UnknownMode| err.to_string())
}
