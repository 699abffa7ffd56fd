//! A tool card's header: how the call went, what it is and acts on, where it runs
//! and how long it took. Written as one piece of HTML, set on the header at once:
//! built node by node, each header cost the page a dozen calls into the DOM and an
//! empty marker for each part it lacked, and a long answer is mostly headers (the
//! desktop bench's 500 cards).

use cairn_protocol::CallKind;
use cairn_protocol::describe::Headline;
use serde_json::Value;

use crate::format;
use crate::highlight::escape_into;
use crate::turn::{Card, CardState};

/// What a card's header shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// A subtask's title, else the tool.
    label: String,
    /// What the call acts on (`notes.md`, `cargo test`), or for a subtask "subtask".
    subject: Option<String>,
    /// An MCP tool's server.
    server: Option<String>,
    /// A subtask's model server, when not the thread's, and whether it waits for one
    /// of its slots.
    machine: Option<String>,
    slot_wait: bool,
    pub state: CardState,
    /// The call's own time, and the time it waited for the user.
    time: Option<u64>,
    waited: u64,
    depth: u32,
}

impl Head {
    pub fn of(card: &Card) -> Self {
        let (label, subject, server) = match &card.title {
            Some(title) => {
                let kind = match card.kind {
                    Some(CallKind::Subtask) => "subtask",
                    Some(CallKind::Plan) => "plan",
                    _ => card.name.as_str(),
                };
                (title.clone(), Some(kind.to_owned()), None)
            }
            None => {
                // Arguments still being written are text: name what they have so far.
                let partial = card
                    .pending
                    .then(|| card.args.as_ref().and_then(Value::as_str))
                    .flatten()
                    .map(format::partial_args);
                let line = Headline::of(
                    &card.name,
                    card.subject.as_deref(),
                    partial.as_ref().or(card.args.as_ref()),
                );
                (line.tool, line.subject, line.server)
            }
        };
        Self {
            label,
            subject,
            server,
            machine: card.server.clone(),
            slot_wait: card.waiting_for_slot && card.state == CardState::Running,
            state: card.state,
            time: card.own_time_ms(),
            waited: card.waited_ms,
            depth: card.depth,
        }
    }

    /// The header's HTML, its chevron open or closed; every text escaped.
    pub fn html(&self, expanded: bool) -> String {
        let mut out = String::with_capacity(256);
        let chevron = if expanded { "▾" } else { "▸" };
        out.push_str(&format!(r#"<span class="chevron">{chevron}</span>"#));
        out.push_str(match self.state {
            CardState::Running => r#"<span class="spinner" aria-label="running"></span>"#,
            CardState::Done => r#"<span class="icon ok" aria-label="done">✓</span>"#,
            CardState::Failed => r#"<span class="icon err" aria-label="failed">✕</span>"#,
            CardState::Denied => r#"<span class="icon err" aria-label="denied">⊘</span>"#,
        });
        span(&mut out, r#"class="card-label""#, &self.label);
        if let Some(subject) = &self.subject {
            span(&mut out, r#"class="card-subject""#, subject);
        }
        if let Some(server) = &self.server {
            span(&mut out, r#"class="card-tool" title="MCP server""#, server);
        }
        if let Some(machine) = &self.machine {
            if self.slot_wait {
                let text = format!("waiting for a free slot on {machine}");
                span(&mut out, r#"class="card-machine waiting""#, &text);
            } else {
                let text = format!("on {machine}");
                let attributes = r#"class="card-machine" title="The model server it runs on""#;
                span(&mut out, attributes, &text);
            }
        }
        let depth = format!(r#"class="card-depth" data-depth="{}""#, self.depth);
        span(&mut out, &depth, "");
        if self.waited > 0 {
            let text = format!("waited {}", format::duration(self.waited));
            span(
                &mut out,
                r#"class="card-waited" title="Waiting for your answer""#,
                &text,
            );
        }
        if let Some(ms) = self.time {
            span(&mut out, r#"class="card-time""#, &format::duration(ms));
        }
        out
    }
}

/// `<span ATTRIBUTES>TEXT</span>`, the text escaped (the attributes are the page's own).
fn span(out: &mut String, attributes: &str, text: &str) {
    out.push_str("<span ");
    out.push_str(attributes);
    out.push('>');
    escape_into(text, out);
    out.push_str("</span>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> Head {
        Head {
            label: "read_file".into(),
            subject: Some("src/<main>.rs".into()),
            server: None,
            machine: None,
            slot_wait: false,
            state: CardState::Done,
            time: Some(3),
            waited: 0,
            depth: 1,
        }
    }

    #[test]
    fn a_finished_call_says_what_it_read_and_how_long_it_took() {
        assert_eq!(
            head().html(true),
            r#"<span class="chevron">▾</span><span class="icon ok" aria-label="done">✓</span><span class="card-label">read_file</span><span class="card-subject">src/&lt;main&gt;.rs</span><span class="card-depth" data-depth="1"></span><span class="card-time">3 ms</span>"#
        );
    }

    #[test]
    fn a_subtask_on_another_server_says_where_it_runs_and_what_it_waited() {
        let waiting = Head {
            label: "Check the tests".into(),
            subject: Some("subtask".into()),
            server: Some("files & more".into()),
            machine: Some("gpu-box".into()),
            slot_wait: true,
            state: CardState::Running,
            time: None,
            waited: 37_600,
            depth: 0,
        };
        assert_eq!(
            waiting.html(false),
            r#"<span class="chevron">▸</span><span class="spinner" aria-label="running"></span><span class="card-label">Check the tests</span><span class="card-subject">subtask</span><span class="card-tool" title="MCP server">files &amp; more</span><span class="card-machine waiting">waiting for a free slot on gpu-box</span><span class="card-depth" data-depth="0"></span><span class="card-waited" title="Waiting for your answer">waited 37.6 s</span>"#
        );
        let ran = Head {
            slot_wait: false,
            state: CardState::Failed,
            ..waiting
        };
        let html = ran.html(false);
        assert!(
            html.contains(r#"<span class="icon err" aria-label="failed">✕</span>"#),
            "{html}"
        );
        assert!(
            html.contains(
                r#"<span class="card-machine" title="The model server it runs on">on gpu-box</span>"#
            ),
            "{html}"
        );
    }

    #[test]
    fn a_denied_call_shows_its_mark() {
        let denied = Head {
            state: CardState::Denied,
            ..head()
        };
        assert!(
            denied
                .html(true)
                .contains(r#"<span class="icon err" aria-label="denied">⊘</span>"#)
        );
    }
}
