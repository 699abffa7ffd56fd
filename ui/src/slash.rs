//! Slash commands typed in the composer: handled by the app, never sent to the model.

use cairn_protocol::PermissionMode;
pub use cairn_protocol::desktop::ExportFormat;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Help,
    Tools,
    /// `/mode` alone shows the mode; with a name it sets it.
    Mode(Option<PermissionMode>),
    Model(Option<String>),
    /// `/agent` alone shows the chat's agent; with an id it gives the chat that one.
    Agent(Option<String>),
    /// The agents a chat can use.
    Agents,
    /// `/llm` shows the model's parameters; `/llm KEY VALUE` sets one for the chat;
    /// `/llm reset [KEY]` unsets one or all.
    Llm(LlmChange),
    /// A new thread.
    Clear,
    Export(ExportFormat),
    /// The MCP servers, how each stands, and their tools.
    Mcp,
}

/// A command as the composer's list and `/help` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    pub name: &'static str,
    /// What may follow the name, as written in the list (`[md|json]`).
    pub arguments: &'static str,
    pub summary: &'static str,
}

/// Every command, in the order the list shows them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        arguments: "",
        summary: "this list",
    },
    Command {
        name: "tools",
        arguments: "",
        summary: "the tools the agent has",
    },
    Command {
        name: "mode",
        arguments: "[plan|default|auto]",
        summary: "show or set what tool calls may do",
    },
    Command {
        name: "model",
        arguments: "[name]",
        summary: "show or choose the model",
    },
    Command {
        name: "agent",
        arguments: "[id]",
        summary: "show or choose the agent that answers",
    },
    Command {
        name: "agents",
        arguments: "",
        summary: "the agents there are",
    },
    Command {
        name: "llm",
        arguments: "[KEY VALUE | reset [KEY]]",
        summary: "show or set this chat's model parameters",
    },
    Command {
        name: "mcp",
        arguments: "",
        summary: "the MCP servers, how each stands, and their tools",
    },
    Command {
        name: "clear",
        arguments: "",
        summary: "start a new chat",
    },
    Command {
        name: "export",
        arguments: "[md|json]",
        summary: "save this chat",
    },
];

/// The commands to offer while `input` is a command name being typed (`/`, `/mo`):
/// those it starts, then those it appears in. None once a space follows the name, or
/// for text that is not a command.
pub fn suggestions(input: &str) -> Vec<Command> {
    let Some(typed) = input.strip_prefix('/') else {
        return Vec::new();
    };
    if typed.contains(char::is_whitespace) || typed.contains('/') {
        return Vec::new();
    }
    // Command names are ASCII.
    let typed = typed.to_ascii_lowercase();
    let starting = COMMANDS.iter().filter(|c| c.name.starts_with(&typed));
    let within = COMMANDS
        .iter()
        .filter(|c| !c.name.starts_with(&typed) && c.name.contains(&typed));
    starting.chain(within).copied().collect()
}

/// `/help`'s text: every command with its arguments and what it does.
pub fn help() -> String {
    COMMANDS
        .iter()
        .map(|c| {
            let arguments = if c.arguments.is_empty() {
                String::new()
            } else {
                format!(" {}", c.arguments)
            };
            format!("/{}{arguments} — {}", c.name, c.summary)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What `/llm` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmChange {
    Show,
    Set(String, String),
    Reset(Option<String>),
}

/// A line that starts with `/` and is no command as written; shown, not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotACommand {
    #[error(transparent)]
    Mode(#[from] cairn_protocol::permission::UnknownMode),
    #[error("/llm {0} needs a value: /llm {0} VALUE")]
    LlmNeedsValue(String),
    #[error("/export takes md or json, not `{0}`")]
    ExportFormat(String),
    #[error("there is no /{0}; /help lists the commands")]
    Unknown(String),
}

/// What the composer should do with its text: a command, or a message. A line that
/// starts with `/` but names no command is an error to show, not a message to send.
pub fn parse(input: &str) -> Option<Result<Slash, NotACommand>> {
    let text = input.trim();
    let rest = text.strip_prefix('/')?;
    // `/tmp/x is full`: a path, not a command.
    if rest.starts_with('/') || rest.is_empty() {
        return None;
    }
    let mut words = rest.split_whitespace();
    let command = words.next().unwrap_or("");
    let argument = words.next();
    Some(match (command, argument) {
        ("help", _) => Ok(Slash::Help),
        ("tools", _) => Ok(Slash::Tools),
        ("mode", None) => Ok(Slash::Mode(None)),
        ("mode", Some(mode)) => mode
            .parse()
            .map(|mode| Slash::Mode(Some(mode)))
            .map_err(NotACommand::Mode),
        ("model", name) => Ok(Slash::Model(name.map(str::to_owned))),
        ("agent", id) => Ok(Slash::Agent(id.map(str::to_owned))),
        ("agents", _) => Ok(Slash::Agents),
        ("llm", None) => Ok(Slash::Llm(LlmChange::Show)),
        ("llm", Some("reset")) => Ok(Slash::Llm(LlmChange::Reset(
            words.next().map(str::to_owned),
        ))),
        ("llm", Some(key)) => match words.next() {
            Some(value) => Ok(Slash::Llm(LlmChange::Set(key.to_owned(), value.to_owned()))),
            None => Err(NotACommand::LlmNeedsValue(key.to_owned())),
        },
        ("clear" | "new", _) => Ok(Slash::Clear),
        ("mcp", _) => Ok(Slash::Mcp),
        ("export", None | Some("md" | "markdown")) => Ok(Slash::Export(ExportFormat::Md)),
        ("export", Some("json")) => Ok(Slash::Export(ExportFormat::Json)),
        ("export", Some(other)) => Err(NotACommand::ExportFormat(other.to_owned())),
        (other, _) if other.contains('/') => return None,
        (other, _) => Err(NotACommand::Unknown(other.to_owned())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_mistakes_are_explained() {
        assert_eq!(parse("/help"), Some(Ok(Slash::Help)));
        assert_eq!(
            parse("  /mode auto "),
            Some(Ok(Slash::Mode(Some(PermissionMode::Auto))))
        );
        assert_eq!(parse("/mode"), Some(Ok(Slash::Mode(None))));
        assert_eq!(
            parse("/model qwen3:8b"),
            Some(Ok(Slash::Model(Some("qwen3:8b".into()))))
        );
        assert_eq!(parse("/clear"), Some(Ok(Slash::Clear)));
        assert_eq!(
            parse("/agent reviewer"),
            Some(Ok(Slash::Agent(Some("reviewer".into()))))
        );
        assert_eq!(parse("/agent"), Some(Ok(Slash::Agent(None))));
        assert_eq!(parse("/agents"), Some(Ok(Slash::Agents)));
        assert_eq!(parse("/llm"), Some(Ok(Slash::Llm(LlmChange::Show))));
        assert_eq!(
            parse("/llm temperature 0.2"),
            Some(Ok(Slash::Llm(LlmChange::Set(
                "temperature".into(),
                "0.2".into()
            ))))
        );
        assert_eq!(
            parse("/llm reset top_p"),
            Some(Ok(Slash::Llm(LlmChange::Reset(Some("top_p".into())))))
        );
        assert_eq!(
            parse("/llm reset"),
            Some(Ok(Slash::Llm(LlmChange::Reset(None))))
        );
        let said = |input: &str| {
            parse(input)
                .and_then(Result::err)
                .map(|err| err.to_string())
        };
        assert_eq!(
            said("/llm temperature").as_deref(),
            Some("/llm temperature needs a value: /llm temperature VALUE")
        );
        assert_eq!(
            parse("/export json"),
            Some(Ok(Slash::Export(ExportFormat::Json)))
        );
        assert_eq!(parse("/export"), Some(Ok(Slash::Export(ExportFormat::Md))));
        assert_eq!(
            said("/mode yolo").as_deref(),
            Some("unknown permission mode `yolo`: use plan, default or auto")
        );
        assert_eq!(
            said("/frobnicate").as_deref(),
            Some("there is no /frobnicate; /help lists the commands")
        );
        assert_eq!(
            said("/export pdf").as_deref(),
            Some("/export takes md or json, not `pdf`")
        );
        assert_eq!(parse("hello /help"), None);
        assert_eq!(parse("/tmp/x is full, why?"), None);
        assert_eq!(parse("//comment"), None);
        assert_eq!(parse("/mcp"), Some(Ok(Slash::Mcp)));
    }

    #[test]
    fn the_list_offers_what_is_being_typed_and_goes_once_a_command_is_chosen() {
        let names =
            |input: &str| -> Vec<&str> { suggestions(input).iter().map(|c| c.name).collect() };
        assert_eq!(
            names("/").len(),
            COMMANDS.len(),
            "a bare slash lists them all"
        );
        assert_eq!(names("/mo"), ["mode", "model"]);
        assert_eq!(names("/AG"), ["agent", "agents"]);
        // Starting matches first, then the name containing it.
        assert_eq!(
            names("/e"),
            [
                "export", "help", "mode", "model", "agent", "agents", "clear"
            ]
        );
        assert!(names("/mode ").is_empty(), "a space: the name is chosen");
        assert!(names("/tmp/x").is_empty());
        assert!(names("hello").is_empty());
        assert!(names("/zzz").is_empty());
        // Every command the list offers parses.
        for command in COMMANDS {
            assert!(
                matches!(parse(&format!("/{}", command.name)), Some(Ok(_))),
                "{}",
                command.name
            );
        }
        assert!(help().starts_with("/help — this list\n/tools — the tools the agent has"));
        assert!(help().contains("/export [md|json] — save this chat"));
    }
}
