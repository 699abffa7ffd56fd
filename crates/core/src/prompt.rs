//! The system prompts: what the model is told about itself, its work and its mode.
//! Short on purpose: small local models follow short prompts better, and a CPU reads
//! every token of it before the first word. The tools describe themselves in their
//! schemas; the prompt does not repeat them.
//!
//! A root's system message holds only what every thread of the same kind shares (who
//! it is, how to work, the subtask agents, its profile's instructions); what is the
//! thread's own (its mode, folder and `AGENTS.md`) is its [`thread_context`], which
//! opens the thread's first message, as Codex opens a session with its environment.
//! Chat templates that render the tools after the system message (Qwen's, and most
//! that render tools) then keep the tools in the server's cached prefix: a new folder
//! is read as a few lines, not as the whole prompt again. A subtask's system message
//! holds both: it is new each time. A small window gets the compact form.

use std::fmt::Write;

use cairn_protocol::{ChatMessage, PermissionMode};

use crate::agent::{Agent, AgentSetup};
use crate::subtask::{FINISH_SUBTASK, Finish, RUN_SUBTASK};
use crate::switch::SWITCH_AGENT;
use crate::toolbelt::Toolbelt;

/// What the prompt needs to know about where it runs.
#[derive(Debug, Clone, Copy)]
pub struct PromptContext<'a> {
    pub mode: PermissionMode,
    pub tools: &'a Toolbelt,
    pub workspace: Option<&'a std::path::Path>,
    pub can_spawn: bool,
    /// Whether `create_plan` is offered.
    pub can_plan: bool,
    /// The profile the level runs as, and the others it can reach.
    pub agent: &'a Agent,
    pub agents: &'a AgentSetup,
    /// Whether `switch_agent` is offered.
    pub can_switch: bool,
    /// The window is small: the compact form, and only what the core tools need.
    pub compact: bool,
}

/// Where a conversation stands, for the guidance its root prompt gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// A conversation with no project folder.
    Chat,
    /// Work in the user's project folder (with its `AGENTS.md`, when it has one).
    Workspace,
    /// Plan mode: read, then propose.
    Plan,
}

impl Setting {
    pub fn of(ctx: &PromptContext<'_>) -> Self {
        match (ctx.mode, ctx.workspace) {
            (PermissionMode::Plan, _) => Self::Plan,
            (_, Some(_)) => Self::Workspace,
            (_, None) => Self::Chat,
        }
    }

    /// When to answer directly, use tools, plan or decompose: the one place it is
    /// written, per setting, in full or compact.
    fn guidance(self, compact: bool) -> &'static str {
        match (self, compact) {
            (Self::Chat, false) => {
                "This is a conversation, with no project folder. Answer directly from what \
                 you know when you can; use a tool only for what you cannot know (a web page, \
                 something remembered), and say so when you are unsure.\n"
            }
            (Self::Chat, true) => {
                "Answer directly when you can; use a tool only for what you cannot know.\n"
            }
            // Told apart on purpose: with only "make the change, then say what you
            // changed", small models answered a question as if they had edited code
            // ("I changed the function call to read_file…"), and one "edited" the
            // password it was asked to read (task benchmark, README "Small models").
            (Self::Workspace, false) => {
                "You work in the user's project folder. Look before you answer: read and \
                 search the files rather than guess. If the user asks a question, answer it \
                 directly with what you found; if they ask for a change, make the smallest \
                 change that does the job, then say what you changed. For a change across \
                 several files, say your plan in a few lines first.\n"
            }
            (Self::Workspace, true) => {
                "Read and search the project's files rather than guess. Answer a question \
                 with what you found; for a change, make the smallest one that does the job, \
                 then say what you changed.\n"
            }
            (Self::Plan, false) => {
                "The user wants a plan before anything changes: investigate with read tools, \
                 then answer with a concise numbered plan they can approve.\n"
            }
            (Self::Plan, true) => {
                "Investigate with read tools, then answer with a short numbered plan.\n"
            }
        }
    }
}

/// What the model is told when it has nothing to call.
pub const NO_TOOLS: &str =
    "You have no tools here: answer from what you know, and say what you would need to do more.";

/// The most of a project's `AGENTS.md` a prompt carries, in full and compact form:
/// it is guidance, and a huge file would crowd out the conversation.
const MAX_INSTRUCTIONS_CHARS: usize = 16_000;
const MAX_COMPACT_INSTRUCTIONS_CHARS: usize = 1_200;

/// Whether a level offers the model anything to call.
fn has_tools(ctx: &PromptContext<'_>) -> bool {
    !ctx.tools.is_empty() || ctx.can_spawn || ctx.can_plan || ctx.can_switch
}

/// Who the model is, in the compact form.
pub const IDENTITY: &str = "You are Cairn, an assistant on the user's computer.\n";

/// A root's system message: what every thread of its kind shares.
pub fn root(ctx: &PromptContext<'_>) -> String {
    let mut prompt = String::from(if ctx.compact {
        IDENTITY
    } else {
        "You are Cairn, an assistant running on the user's own computer.\n"
    });
    prompt.push_str(Setting::of(ctx).guidance(ctx.compact));
    if has_tools(ctx) && !ctx.compact {
        prompt.push_str(
            "Calls that do not depend on each other can go in one turn: they run in \
             parallel.\n",
        );
    }
    if ctx.can_switch {
        let _ = writeln!(
            prompt,
            "Agents you can hand this conversation to with {SWITCH_AGENT}:"
        );
        for agent in ctx.agents.switch_targets() {
            profile_line(&mut prompt, agent);
        }
    }
    shared(&mut prompt, ctx);
    prompt
}

/// One line per profile: the model copies ids it was shown.
fn profile_line(prompt: &mut String, agent: &Agent) {
    let description = agent.description.lines().next().unwrap_or("").trim();
    if description.is_empty() {
        let _ = writeln!(prompt, "- {}", agent.id);
    } else {
        let _ = writeln!(prompt, "- {}: {description}", agent.id);
    }
}

pub(crate) fn subtask(ctx: &PromptContext<'_>, title: &str, depth: u32, finish: &Finish) -> String {
    let mut prompt = format!(
        "You are a subtask (depth {depth}) of a larger job, working on: {title}.\n\
         Your instructions are the user message. Do only that work.\n"
    );
    match finish {
        Finish::Subtask(Some(schema)) => {
            let _ = writeln!(
                prompt,
                "When done, call {FINISH_SUBTASK} with `result` matching this JSON Schema, \
                 instead of answering in prose:\n{}",
                schema.source
            );
        }
        Finish::Submit { name, .. } => {
            let _ = writeln!(
                prompt,
                "End by calling {name}: your answer is its arguments, not prose."
            );
        }
        Finish::Subtask(None) => prompt.push_str(
            "When done, reply with your result as plain text: it goes back to the agent that \
             started you, not to the user.\n",
        ),
    }
    shared(&mut prompt, ctx);
    prompt.push('\n');
    thread_lines(&mut prompt, ctx);
    prompt
}

/// What a root and a subtask are both told and threads share: the agents a subtask
/// can run as, the profile's instructions, and that there is nothing to call.
fn shared(prompt: &mut String, ctx: &PromptContext<'_>) {
    if ctx.can_spawn && !ctx.compact && ctx.agents.runnable().next().is_some() {
        let _ = writeln!(
            prompt,
            "Agents a subtask can run as ({RUN_SUBTASK} `agent`):"
        );
        for agent in ctx.agents.runnable() {
            profile_line(prompt, agent);
        }
    }
    let instructions = ctx.agent.instructions.trim();
    if !instructions.is_empty() {
        let _ = writeln!(prompt, "\n{instructions}");
    }
    if !has_tools(ctx) {
        let _ = writeln!(prompt, "{NO_TOOLS}");
    }
}

/// What is this thread's own: its mode (which only says what calls may do, so not
/// where there is nothing to call) and its folder.
fn thread_lines(prompt: &mut String, ctx: &PromptContext<'_>) {
    if has_tools(ctx) {
        let _ = writeln!(
            prompt,
            "Permission mode: {}. {}",
            ctx.mode,
            mode_rules(ctx.mode)
        );
    }
    match ctx.workspace {
        // The folder by its name alone: shown its absolute path, a small model copied
        // it into every path (and mangled it on the way: `…/work. `), where a relative
        // one is all a tool takes. No example paths either: the 0.5B read the example
        // (`notes.txt`) instead of the file it was asked about.
        Some(root) => {
            let name = root.file_name().map_or_else(
                || root.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            );
            // The name last: all that follows it in a new folder is read anew.
            let _ = writeln!(
                prompt,
                "Workspace (file paths are relative to it): the folder `{name}`."
            );
        }
        None if !ctx.compact => {
            prompt.push_str("This thread has no workspace folder, so no file tools.\n");
        }
        None => {}
    }
}

fn mode_rules(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Plan => {
            "Only reading is allowed: writing files, running commands and reaching beyond \
             this computer are blocked. The user reviews your plan and can switch modes to \
             carry it out."
        }
        PermissionMode::Default => {
            "Reading runs freely; writing files, running commands and reaching beyond this \
             computer ask the user first. If the user denies a call, do not retry it: adapt, \
             or ask what they want."
        }
        PermissionMode::Auto => "Your tool calls run without asking. Prefer reversible steps.",
    }
}

/// How the thread's context opens and closes, around its lines.
pub const CONTEXT_OPEN: &str = "<context>\n";
pub const CONTEXT_CLOSE: &str = "</context>\n\n";

/// A user message split into the context blocks that open it (the thread's, the
/// files it names: markers and all; "" when it has none) and the user's own words
/// after them.
pub fn split_context(content: &str) -> (&str, &str) {
    let mut words = content;
    while let Some((_, rest)) = words
        .strip_prefix(CONTEXT_OPEN)
        .and_then(|rest| rest.split_once(CONTEXT_CLOSE))
    {
        words = rest;
    }
    (&content[..content.len() - words.len()], words)
}

/// Whether the user's words ask something rather than ask for something done: their
/// last sentence a question (see [`sentence_asks`]), so that "One of the files
/// mentions an animal. Which is it?" asks, and "What is the code word? Put it in
/// b.txt." asks for the change.
pub fn is_question(request: &str) -> bool {
    sentences(request).last().is_some_and(sentence_asks)
}

/// Whether any sentence of the user's words asks something: "What is the code word
/// in memo.txt? Not in gone.txt." is a question whose last sentence is not.
pub fn asks_anything(request: &str) -> bool {
    sentences(request).any(sentence_asks)
}

/// The sentences of `text`: each ends at `.`, `?` or `!` before a space or the end,
/// so a file's name (`hi.py`) stays inside its sentence.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text.trim();
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .find(|&(at, c)| {
                matches!(c, '.' | '?' | '!')
                    && rest[at + 1..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace)
            })
            .map_or(rest.len(), |(at, _)| at + 1);
        let (sentence, after) = rest.split_at(end);
        rest = after.trim_start();
        Some(sentence)
    })
}

/// Whether one sentence asks something: a question mark, an opening as a question,
/// asking to be told, or for a count or a list (which are told, not made). A
/// request put politely ("Can you fix a.py?") asks for it done, unless what it asks
/// is to be told.
fn sentence_asks(sentence: &str) -> bool {
    // "Say hello." asks for words too: held to real tools, the 0.5B read a
    // `hello.txt` it made up until the loop guard, and only a question's level is
    // asked for its last word. ("Explain" and "describe" are left out: "Explain
    // and fix the bug." asks for a change.)
    const OPENINGS: [&str; 19] = [
        "what", "which", "who", "whose", "where", "when", "why", "how", "is", "are", "does", "do",
        "did", "can", "could", "tell", "say", "count", "list",
    ];
    let lower = sentence.to_lowercase();
    let mut words = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|word| !word.is_empty());
    let first = words.next().unwrap_or_default();
    if let ("can" | "could" | "would" | "will", Some("you")) = (first, words.next()) {
        let verb = words.find(|word| *word != "please").unwrap_or_default();
        return TOLD.contains(&verb) || lower.contains("tell me");
    }
    lower.ends_with('?') || OPENINGS.contains(&first) || lower.contains("tell me")
}

/// The last words of `messages` from the user (or a level's parent), their context
/// blocks aside.
pub fn last_request(messages: &[ChatMessage]) -> Option<&str> {
    messages.iter().rev().find_map(|message| match message {
        ChatMessage::User { content } => Some(split_context(content).1),
        _ => None,
    })
}

/// Whether the last words of `messages` from the user (or a level's parent) ask a
/// question rather than for a change, their context blocks aside.
pub fn last_asks_a_question(messages: &[ChatMessage]) -> bool {
    last_request(messages).is_some_and(is_question)
}

/// What a polite request asks for when it asks to be told, not for a change.
const TOLD: [&str; 11] = [
    "tell", "say", "explain", "show", "list", "count", "find", "describe", "check", "see", "read",
];

/// How the project's instructions are headed in the context block.
const INSTRUCTIONS_HEAD: &str = "Project instructions (AGENTS.md in the workspace):";

/// The lines of a context block that Cairn itself wrote (the mode, the folder), not
/// the project's instructions that may follow them.
pub fn own_lines(context: &str) -> impl Iterator<Item = &str> {
    context
        .lines()
        .map(str::trim)
        .take_while(|line| *line != INSTRUCTIONS_HEAD)
        .filter(|line| ![CONTEXT_OPEN.trim(), CONTEXT_CLOSE.trim(), ""].contains(line))
}

/// What the thread's first message opens with (see the module's doc): its mode, its
/// folder, and the project's own instructions when it has them, capped (shorter in
/// the compact form). "" where it has none of them.
pub fn thread_context(ctx: &PromptContext<'_>, instructions: Option<&str>) -> String {
    let mut context = String::from(CONTEXT_OPEN);
    thread_lines(&mut context, ctx);
    let trimmed = instructions.map(str::trim).unwrap_or_default();
    if !trimmed.is_empty() {
        let max_chars = if ctx.compact {
            MAX_COMPACT_INSTRUCTIONS_CHARS
        } else {
            MAX_INSTRUCTIONS_CHARS
        };
        let shown: String = trimmed.chars().take(max_chars).collect();
        let _ = writeln!(context, "{INSTRUCTIONS_HEAD}\n{shown}");
        if trimmed.chars().count() > max_chars {
            context.push_str("[the rest of AGENTS.md is left out]\n");
        }
    }
    if context == CONTEXT_OPEN {
        return String::new();
    }
    context.push_str(CONTEXT_CLOSE);
    context
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use async_trait::async_trait;
    use cairn_protocol::ToolCategory;
    use serde_json::{Value, json};

    use super::*;
    use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

    #[test]
    fn cairns_own_lines_are_the_blocks_lines_before_the_projects_instructions() {
        let block = format!(
            "{CONTEXT_OPEN}Permission mode: auto. Prefer reversible steps.\nWorkspace \
             (file paths are relative to it): the folder `w`.\n{INSTRUCTIONS_HEAD}\nUse \
             tabs.\n{CONTEXT_CLOSE}"
        );
        assert_eq!(
            own_lines(&block).collect::<Vec<_>>(),
            [
                "Permission mode: auto. Prefer reversible steps.",
                "Workspace (file paths are relative to it): the folder `w`."
            ]
        );
        assert_eq!(own_lines("").count(), 0);
    }

    #[test]
    fn questions_are_told_from_requests_for_changes() {
        for question in [
            "What is the code word in notes.txt?",
            "Which file mentions an animal",
            "Tell me the code word written in summary.txt.",
            "Run hi.py with python3 and tell me what it prints.",
            "Count the rows of data in data.csv (the header line is not a row).",
            "List the files here.",
            "Can you tell me what greet.py prints?",
            "Could you please explain main.rs",
            "Can you find the file that mentions an animal?",
            "Can I run this twice?",
            "What is in hi.py? And in lo.py?",
            "One of the text files here talks about an animal. Which file is it?",
            "notes.txt has a code word in it. What is it?",
            "Say hello.",
        ] {
            assert!(is_question(question), "{question}");
        }
        for change in [
            "Read draft.txt and write its code word into message.txt.",
            "Replace yellow with green in summary.md.",
            "Create hi.py that prints a greeting.",
            "Whatever you find, fix it.",
            "Can you fix the typo in a.py?",
            "Could you please add a docstring to main.py?",
            "Would you rename notes.md to todo.md?",
            "Explain and fix the bug in a.py.",
            "What is the code word in memo.txt? Put it in b.txt.",
            "",
        ] {
            assert!(!is_question(change), "{change}");
        }
    }

    struct Reader;

    #[async_trait]
    impl Tool for Reader {
        fn name(&self) -> &str {
            "read_file"
        }
        fn description(&self) -> &str {
            "reads"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn category(&self) -> ToolCategory {
            ToolCategory::Read
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    const CHAT: &str = "with no project folder";
    const WORKSPACE: &str = "You work in the user's project folder";
    const PLAN: &str = "answer with a concise numbered plan";

    fn prompt_in(
        mode: PermissionMode,
        workspace: Option<&Path>,
        tools: &Toolbelt,
        compact: bool,
    ) -> String {
        let agents = AgentSetup::default();
        let ctx = PromptContext {
            mode,
            tools,
            workspace,
            can_spawn: !tools.is_empty(),
            can_plan: false,
            agent: &agents.current,
            agents: &agents,
            can_switch: false,
            compact,
        };
        whole(&ctx, workspace.map(|_| "Run cargo test before you finish."))
    }

    /// What the model reads before the user's words: the system message, then the
    /// thread's context.
    fn whole(ctx: &PromptContext<'_>, instructions: Option<&str>) -> String {
        root(ctx) + &thread_context(ctx, instructions)
    }

    fn prompt(mode: PermissionMode, workspace: Option<&Path>, tools: &Toolbelt) -> String {
        prompt_in(mode, workspace, tools, false)
    }

    fn tools() -> Toolbelt {
        Toolbelt::new([Arc::new(Reader) as Arc<dyn Tool>]).unwrap_or_default()
    }

    #[test]
    fn a_plain_chat_is_told_to_answer_directly() {
        let text = prompt(PermissionMode::Default, None, &tools());
        assert!(text.contains(CHAT), "{text}");
        assert!(!text.contains(WORKSPACE) && !text.contains(PLAN), "{text}");
        assert!(text.contains("they run in parallel"), "{text}");
    }

    #[test]
    fn the_tools_are_left_to_their_schemas() {
        let text = prompt(PermissionMode::Default, Some(Path::new("/p")), &tools());
        assert!(!text.contains("read_file"), "{text}");
        assert!(
            text.contains("writing files, running commands and reaching beyond this computer ask the user first"),
            "{text}"
        );
    }

    #[test]
    fn a_workspace_is_told_to_look_first_with_its_agents_md_after() {
        let text = prompt(PermissionMode::Auto, Some(Path::new("/p")), &tools());
        assert!(text.contains(WORKSPACE), "{text}");
        assert!(!text.contains(CHAT) && !text.contains(PLAN), "{text}");
        let guidance = text.find(WORKSPACE).unwrap_or(usize::MAX);
        let project = text.find("Project instructions (AGENTS.md").unwrap_or(0);
        assert!(guidance < project, "{text}");
        assert!(
            text.ends_with(&format!(
                "Run cargo test before you finish.\n{CONTEXT_CLOSE}"
            )),
            "{text}"
        );
    }

    #[test]
    fn the_system_message_is_what_threads_share_and_the_context_what_is_theirs() {
        let agents = AgentSetup::default();
        let tools = tools();
        let ctx = |mode, workspace| PromptContext {
            mode,
            tools: &tools,
            workspace,
            can_spawn: true,
            can_plan: false,
            agent: &agents.current,
            agents: &agents,
            can_switch: false,
            compact: false,
        };
        let one = ctx(PermissionMode::Default, Some(Path::new("/a")));
        let other = ctx(PermissionMode::Auto, Some(Path::new("/elsewhere")));
        assert_eq!(root(&one), root(&other), "one system message for both");
        for line in ["Permission mode", "Workspace", "AGENTS.md"] {
            assert!(!root(&one).contains(line), "{line} in {}", root(&one));
        }
        let context = thread_context(&one, Some("Be brief."));
        assert_eq!(
            context,
            format!(
                "{CONTEXT_OPEN}Permission mode: default. {}\nWorkspace (file paths are \
                 relative to it): the folder `a`.\nProject instructions (AGENTS.md in the workspace):\nBe \
                 brief.\n{CONTEXT_CLOSE}",
                mode_rules(PermissionMode::Default)
            )
        );
    }

    #[test]
    fn a_subtask_is_told_its_mode_and_folder_itself() {
        let agents = AgentSetup::default();
        let tools = tools();
        let ctx = PromptContext {
            mode: PermissionMode::Auto,
            tools: &tools,
            workspace: Some(Path::new("/a")),
            can_spawn: false,
            can_plan: false,
            agent: &agents.current,
            agents: &agents,
            can_switch: false,
            compact: false,
        };
        let text = subtask(&ctx, "Count", 1, &Finish::Subtask(None));
        assert!(text.contains("Permission mode: auto."), "{text}");
        assert!(
            text.contains("Workspace (file paths are relative to it): the folder `a`."),
            "{text}"
        );
    }

    #[test]
    fn a_question_is_told_apart_from_a_change() {
        let text = prompt(PermissionMode::Default, Some(Path::new("/p")), &tools());
        assert!(
            text.contains("If the user asks a question, answer it directly with what you found"),
            "{text}"
        );
    }

    #[test]
    fn plan_mode_is_told_to_investigate_then_propose_whatever_the_folder() {
        for workspace in [None, Some(Path::new("/p"))] {
            let text = prompt(PermissionMode::Plan, workspace, &tools());
            assert!(text.contains(PLAN), "{text}");
            assert!(!text.contains(CHAT) && !text.contains(WORKSPACE), "{text}");
            assert!(text.contains("Permission mode: plan"), "{text}");
        }
    }

    #[test]
    fn the_compact_form_keeps_the_mode_and_the_folder_in_fewer_words() {
        let long = "x".repeat(5000);
        let agents = AgentSetup::default();
        let tools = tools();
        let ctx = PromptContext {
            mode: PermissionMode::Default,
            tools: &tools,
            workspace: Some(Path::new("/p")),
            can_spawn: true,
            can_plan: true,
            agent: &agents.current,
            agents: &agents,
            can_switch: false,
            compact: true,
        };
        let compact = whole(&ctx, Some(&long));
        let full = whole(
            &PromptContext {
                compact: false,
                ..ctx
            },
            Some(&long),
        );
        assert!(compact.contains("Permission mode: default"), "{compact}");
        assert!(compact.contains("the folder `p`."), "{compact}");
        assert!(
            compact.contains("the rest of AGENTS.md is left out"),
            "{compact}"
        );
        assert!(
            !compact.contains("run_subtask"),
            "subtasks are on demand: {compact}"
        );
        assert!(
            compact.len() < 2000 && compact.len() * 3 < full.len(),
            "{} against {}",
            compact.len(),
            full.len()
        );
    }

    #[test]
    fn without_tools_the_prompt_says_so_once() {
        let text = prompt(PermissionMode::Default, None, &Toolbelt::default());
        assert_eq!(text.matches(NO_TOOLS).count(), 1, "{text}");
        assert!(
            !text.contains("run_subtask") && !text.contains("in parallel"),
            "{text}"
        );
        let with = prompt(PermissionMode::Default, None, &tools());
        assert!(!with.contains(NO_TOOLS), "{with}");
    }
}
