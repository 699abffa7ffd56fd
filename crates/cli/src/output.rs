//! How `cairn run` shows a turn: JSON lines (the wire, exactly) or a transcript for
//! people.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use cairn_protocol::describe::{Headline, call_time};
use cairn_protocol::{Done, Event, ToolCallStatus, ToolCallUpdate, describe};
use cairn_runtime::EventSink;
use serde_json::Value;

use crate::paint::painted;
use crate::preview;

/// One JSON object per line on stdout, flushed per event so a reader sees it live.
#[derive(Debug, Default)]
pub struct JsonLines;

impl EventSink for JsonLines {
    fn emit(&self, event: Event) {
        let mut out = std::io::stdout().lock();
        // A closed stdout (the reader went away) must not kill the turn: its result
        // still matters to whoever stored it.
        if let Ok(line) = serde_json::to_string(&event) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// Streamed text, tool cards indented by depth, one-line notices.
#[derive(Debug)]
pub struct Transcript {
    state: Mutex<TranscriptState>,
    color: bool,
}

#[derive(Debug, Default)]
struct TranscriptState {
    /// Whether the last thing printed ended a line.
    mid_line: bool,
    started: HashMap<String, Instant>,
    reasoning_open: bool,
    /// Text a subtask is writing, per subtask, until it ends a line: subtasks run side
    /// by side, so their text is printed a whole line at a time, under their card.
    subtask_text: HashMap<String, String>,
}

const CARD_PREVIEW: usize = 100;

impl Transcript {
    pub fn new() -> Self {
        Self {
            state: Mutex::default(),
            color: std::io::stdout().is_terminal(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        painted(self.color, code, text)
    }

    /// The lines of a subtask's text that are complete; with `all`, the rest too.
    fn subtask_lines(
        &self,
        state: &mut TranscriptState,
        parent: &str,
        depth: u32,
        all: bool,
    ) -> Vec<String> {
        let Some(buffer) = state.subtask_text.get_mut(parent) else {
            return Vec::new();
        };
        let cut = if all {
            buffer.len()
        } else {
            buffer.rfind('\n').map_or(0, |at| at + 1)
        };
        let done: String = buffer.drain(..cut).collect();
        let indent = "  ".repeat(depth as usize + 1);
        done.lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| self.paint("2", &format!("{indent}{line}")))
            .collect()
    }

    fn card(&self, state: &mut TranscriptState, update: &ToolCallUpdate) -> String {
        let indent = "  ".repeat(update.depth as usize + 1);
        match update.status {
            ToolCallStatus::Pending => String::new(),
            ToolCallStatus::Start => {
                state
                    .started
                    .insert(update.tool_call_id.clone(), Instant::now());
                let label = call_label(
                    &update.name,
                    update.subtask_title().as_deref(),
                    update.subject.as_deref(),
                    update.args.as_ref(),
                );
                self.paint("2", &format!("{indent}▸ {label}"))
            }
            ToolCallStatus::End => {
                let started = state.started.remove(&update.tool_call_id);
                // The engine's own figure, as the window and a stored answer show it.
                let took = update.duration_ms.or_else(|| {
                    started
                        .map(|start| u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX))
                });
                let elapsed = took
                    .map(|ms| format!(" · {}", call_time(ms, update.waited_ms.unwrap_or(0))))
                    .unwrap_or_default();
                // An end carries no arguments: a subtask's title is what its tool said.
                let title = (update.kind == Some(cairn_protocol::CallKind::Subtask))
                    .then(|| update.subject.clone())
                    .flatten();
                let label = call_label(
                    &update.name,
                    title.as_deref(),
                    update.subject.as_deref(),
                    None,
                );
                let result = match &update.result {
                    Some(Value::String(text)) => one_line(text),
                    Some(other) => one_line(&other.to_string()),
                    None => String::new(),
                };
                if update.is_error == Some(true) {
                    self.paint("31", &format!("{indent}✗ {label}{elapsed} · {result}"))
                } else {
                    self.paint("2", &format!("{indent}✓ {label}{elapsed} · {result}"))
                }
            }
        }
    }
}

impl EventSink for Transcript {
    fn emit(&self, event: Event) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = std::io::stdout().lock();
        let line = match &event {
            Event::Chunk(chunk) if chunk.depth > 0 => {
                let Some(parent) = &chunk.parent_id else {
                    return;
                };
                state
                    .subtask_text
                    .entry(parent.clone())
                    .or_default()
                    .push_str(&chunk.content);
                let lines = self.subtask_lines(&mut state, parent, chunk.depth, false);
                self.print_lines(&mut state, &mut out, &lines);
                return;
            }
            Event::Chunk(chunk) => {
                if state.reasoning_open {
                    state.reasoning_open = false;
                    let _ = writeln!(out);
                }
                let _ = write!(out, "{}", chunk.content);
                let _ = out.flush();
                state.mid_line = !chunk.content.ends_with('\n');
                return;
            }
            Event::Reasoning(reasoning) if reasoning.depth == 0 => {
                if !state.reasoning_open {
                    state.reasoning_open = true;
                    if state.mid_line {
                        let _ = writeln!(out);
                    }
                    let _ = write!(out, "{}", self.paint("2", "thinking: "));
                }
                let _ = write!(out, "{}", self.paint("2", &reasoning.content));
                let _ = out.flush();
                state.mid_line = !reasoning.content.ends_with('\n');
                return;
            }
            // A transcript prints a call once it is made; `--json` passes these on.
            Event::ToolCallUpdate(update) if update.status == ToolCallStatus::Pending => return,
            Event::ToolCallUpdate(update) => {
                // A subtask's text before its next call, or before it ends, is whole.
                let mut lines = Vec::new();
                if let Some(parent) = &update.parent_id {
                    lines = self.subtask_lines(&mut state, parent, update.depth, true);
                }
                if update.status == ToolCallStatus::End {
                    lines.extend(self.subtask_lines(
                        &mut state,
                        &update.tool_call_id,
                        update.depth + 1,
                        true,
                    ));
                }
                self.print_lines(&mut state, &mut out, &lines);
                self.card(&mut state, update)
            }
            Event::ToolApprovalRequest(request) => {
                let who = request
                    .subtask_title
                    .as_ref()
                    .map(|title| format!(" (subtask “{title}”)"))
                    .unwrap_or_default();
                let grant = request.session_grant.as_deref().unwrap_or(&request.name);
                let mut prompt = std::io::stderr().lock();
                if state.mid_line {
                    let _ = writeln!(out);
                    state.mid_line = false;
                }
                let _ = out.flush();
                let shown = request
                    .preview
                    .as_ref()
                    .map(|preview| preview::lines(preview, prompt.is_terminal()))
                    .unwrap_or_default();
                let _ = writeln!(
                    prompt,
                    "? {}{who} asks to {} ({})",
                    request.name,
                    request.action.clone().unwrap_or_else(|| {
                        describe::CallAbout::generic(&request.name, &request.args).action
                    }),
                    request.category,
                );
                for line in shown {
                    let _ = writeln!(prompt, "{line}");
                }
                let _ = write!(
                    prompt,
                    "  [y] allow  [a] allow {grant} for this chat  [n] deny > "
                );
                let _ = prompt.flush();
                return;
            }
            // A long read says so, as the server gets on; a short one is over before a
            // line would help.
            Event::PromptProgress(progress) if progress.worth_showing() => {
                let indent = "  ".repeat(progress.depth as usize);
                self.paint("2", &format!("{indent}… {}", progress.said()))
            }
            Event::PromptCut(cut) => self.paint("33", &format!("! {}", cut.said())),
            Event::BudgetExceeded(exceeded) => self.paint(
                "33",
                &format!(
                    "! budget exceeded: {} ({}); the answer above is partial; {}",
                    exceeded.reason.as_str(),
                    exceeded.used(),
                    exceeded.how_to_raise()
                ),
            ),
            Event::Done(Done { cut: Some(cut), .. }) => {
                self.paint("33", &format!("! {}", cut.said()))
            }
            Event::AgentSwitched(switched) => {
                let reason = switched
                    .reason
                    .as_deref()
                    .map(|reason| format!(": {reason}"))
                    .unwrap_or_default();
                self.paint(
                    "36",
                    &format!("── {} → {}{reason} ──", switched.from, switched.to),
                )
            }
            Event::Error(error) => {
                let _ = writeln!(std::io::stderr(), "error: {}", error.message);
                return;
            }
            _ => return,
        };
        if state.mid_line || state.reasoning_open {
            let _ = writeln!(out);
            state.reasoning_open = false;
        }
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        state.mid_line = false;
    }
}

impl Transcript {
    fn print_lines(&self, state: &mut TranscriptState, out: &mut impl Write, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        if state.mid_line || state.reasoning_open {
            let _ = writeln!(out);
            state.mid_line = false;
            state.reasoning_open = false;
        }
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }

    /// Ends the last line so the shell prompt starts on its own.
    pub fn finish(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.mid_line {
            let _ = writeln!(std::io::stdout());
            state.mid_line = false;
        }
    }
}

/// A call as a card's header reads: a subtask by its title, else the tool and what it
/// acts on (as its tool said, else the first text among `args`), an MCP tool with its
/// server.
pub(crate) fn call_label(
    name: &str,
    title: Option<&str>,
    subject: Option<&str>,
    args: Option<&Value>,
) -> String {
    if let Some(title) = title {
        return format!("subtask “{title}”");
    }
    let head = Headline::of(name, subject, args);
    let mut label = head.tool;
    if let Some(subject) = head.subject {
        label = format!("{label} {subject}");
    }
    if let Some(server) = head.server {
        label = format!("{label} ({server})");
    }
    label
}

pub(crate) fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > CARD_PREVIEW {
        let mut cut: String = flat.chars().take(CARD_PREVIEW - 1).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}
