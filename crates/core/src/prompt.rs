//! The system prompts: what the model is told about itself, its tools and its mode.
//! Short on purpose: small local models follow short prompts better.

use std::fmt::Write;

use cairn_protocol::{PermissionMode, ToolCategory};

use crate::agent::{Agent, AgentSetup};
use crate::subtask::{FINISH_SUBTASK, RUN_SUBTASK};
use crate::switch::SWITCH_AGENT;
use crate::toolbelt::Toolbelt;

/// What the prompt needs to know about where it runs.
#[derive(Debug, Clone, Copy)]
pub struct PromptContext<'a> {
    pub mode: PermissionMode,
    pub tools: &'a Toolbelt,
    pub workspace: Option<&'a std::path::Path>,
    pub can_spawn: bool,
    /// The profile the level runs as, and the others it can reach.
    pub agent: &'a Agent,
    pub agents: &'a AgentSetup,
    /// Whether `switch_agent` is offered.
    pub can_switch: bool,
}

pub fn root(ctx: &PromptContext<'_>) -> String {
    let mut prompt = String::from(
        "You are Cairn, an assistant running on the user's own computer.\n\
         Answer directly when you can. Use a tool when the task needs facts you do not have \
         or an action in the world. When several tool calls do not depend on each other, \
         make them in the same turn: they run in parallel.\n",
    );
    if ctx.can_spawn {
        prompt.push_str(&format!(
            "For work with separable parts, call {RUN_SUBTASK}: each subtask is a fresh agent \
             with its own context that returns its result to you; several run in parallel. \
             Give each complete instructions, since it sees nothing else.\n"
        ));
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
    common(&mut prompt, ctx);
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

pub fn subtask(
    ctx: &PromptContext<'_>,
    title: &str,
    depth: u32,
    schema: Option<&serde_json::Value>,
) -> String {
    let mut prompt = format!(
        "You are a subtask (depth {depth}) of a larger job, working on: {title}.\n\
         Your instructions are the user message. Do only that work.\n"
    );
    match schema {
        Some(schema) => {
            let _ = writeln!(
                prompt,
                "When done, call {FINISH_SUBTASK} with `result` matching this JSON Schema, \
                 instead of answering in prose:\n{schema}"
            );
        }
        None => prompt.push_str(
            "When done, reply with your result as plain text: it goes back to the agent that \
             started you, not to the user.\n",
        ),
    }
    if ctx.can_spawn {
        let _ = writeln!(
            prompt,
            "You may split your work further with {RUN_SUBTASK}."
        );
    }
    common(&mut prompt, ctx);
    prompt
}

fn common(prompt: &mut String, ctx: &PromptContext<'_>) {
    if ctx.can_spawn && ctx.agents.runnable().next().is_some() {
        let _ = writeln!(
            prompt,
            "A subtask can run as one of these agents ({RUN_SUBTASK} `agent`):"
        );
        for agent in ctx.agents.runnable() {
            profile_line(prompt, agent);
        }
    }
    let instructions = ctx.agent.instructions.trim();
    if !instructions.is_empty() {
        let _ = writeln!(prompt, "\n{instructions}");
    }
    match ctx.workspace {
        Some(root) => {
            let _ = writeln!(
                prompt,
                "\nWorkspace: {}. File paths are relative to it.",
                root.display()
            );
        }
        None => prompt.push_str("\nThis thread has no workspace folder, so no file tools.\n"),
    }
    let _ = writeln!(
        prompt,
        "Permission mode: {}. {}",
        ctx.mode,
        mode_rules(ctx.mode)
    );
    if !ctx.tools.is_empty() {
        prompt.push_str("Tools (category):\n");
        for tool in ctx.tools.tools() {
            let _ = writeln!(prompt, "- {} ({})", tool.name(), tool.category());
        }
    }
}

fn mode_rules(mode: PermissionMode) -> String {
    let gated = [
        ToolCategory::Write,
        ToolCategory::Execute,
        ToolCategory::External,
    ]
    .map(ToolCategory::as_str)
    .join(", ");
    match mode {
        PermissionMode::Plan => format!(
            "Only reading is allowed; {gated} tools are blocked. Investigate with read tools, \
             then answer with a concise numbered plan of what you would do. The user reviews \
             it and can switch modes to carry it out."
        ),
        PermissionMode::Default => format!(
            "Read tools run freely; {gated} tools ask the user first. If the user denies a \
             call, do not retry it: adapt, or ask what they want."
        ),
        PermissionMode::Auto => {
            "Your tool calls run without asking. Prefer reversible steps.".to_owned()
        }
    }
}

/// The root prompt, with the project's own instructions when it has them.
pub fn root_with_instructions(ctx: &PromptContext<'_>, instructions: Option<&str>) -> String {
    let prompt = root(ctx);
    match instructions {
        Some(instructions) => with_instructions(prompt, instructions),
        None => prompt,
    }
}

/// The prompt with the project's instructions after it (capped: they are guidance,
/// and a huge file would crowd out the conversation).
pub fn with_instructions(mut prompt: String, instructions: &str) -> String {
    const MAX_CHARS: usize = 16_000;
    let trimmed = instructions.trim();
    if trimmed.is_empty() {
        return prompt;
    }
    let shown: String = trimmed.chars().take(MAX_CHARS).collect();
    let _ = write!(
        prompt,
        "\nProject instructions (AGENTS.md in the workspace):\n{shown}\n"
    );
    if trimmed.chars().count() > MAX_CHARS {
        prompt.push_str("[the rest of AGENTS.md is left out]\n");
    }
    prompt
}
