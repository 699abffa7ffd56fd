//! `cairn`: Cairn's engine without a window. Same loop, same events, JSON lines out.

// Printing to stdout is this crate's job; the lint guards the libraries.
#![allow(clippy::print_stdout)]

mod agents;
mod args;
mod db;
mod exit;
mod interrupt;
mod keys;
mod llm;
mod mcp;
mod models;
mod output;
mod paint;
mod preview;
mod rules;
mod run;
mod server;
mod servers;
mod threads;
mod usage;

use clap::Parser;
use clap::error::ErrorKind;

use crate::args::{Cli, Command};
use crate::exit::Exit;

fn main() {
    std::process::exit(real_main().code());
}

fn real_main() -> Exit {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("cairn: cannot start the async runtime: {err}");
            return Exit::FAILED;
        }
    };
    let exit = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Models(args) => models::models(args).await,
            Command::Pull(args) => models::pull(args).await,
            Command::Keys(args) => keys::keys(args).await,
            Command::Threads(args) => threads::threads(args).await,
            Command::Rules(args) => rules::rules(args).await,
            Command::Mcp(args) => mcp::mcp(args).await,
            Command::Agents(args) => agents::agents(args),
            Command::Usage(args) => usage::usage(args).await,
            Command::Llm(args) => llm::llm(args).await,
            Command::Servers(args) => servers::servers(args).await,
        }
    });
    // The stdin reader blocks in a read that only ends when stdin does; dropping the
    // runtime normally would wait for it. A moment is given to the threads that can
    // end: under Wine, a process leaving threads in the middle of a wait was at times
    // ended by a signal instead of its exit code.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    exit
}

/// Help and version print as usual; anything else is one line and exit 2.
fn usage_error(err: &clap::Error) -> Exit {
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                Exit::USAGE
            } else {
                Exit::OK
            }
        }
        _ => {
            let rendered = err.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let reason = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("cairn: {reason} (see cairn --help)");
            Exit::USAGE
        }
    }
}

fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let spec = std::env::var(cairn_runtime::LOG_VARIABLE).ok();
    let (filter, problem) = cairn_runtime::log_filter(spec.as_deref());
    // Colours only for a person at a terminal; a log file or a pipe gets plain text.
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .init();
    if let Some(problem) = problem {
        eprintln!("cairn: {problem}");
    }
}
