//! `web_fetch`: a page as readable text.

use std::time::Duration;

use async_trait::async_trait;
use cairn_protocol::ToolCategory;
use cairn_protocol::describe::{CallAbout, host, quote, text_arg};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::builtin::html;
use cairn_core::disclosure::ToolGroup;
use cairn_core::tool::parse_args;
use cairn_core::tool::{Subject, Tool, ToolContext, ToolError, ToolOutput};

/// Bytes of a response read at most; the rest is not downloaded.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// Longest a fetch takes, headers and body together. A server still sending then
/// gives what it sent, marked as cut.
pub const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
pub struct WebFetch {
    http: reqwest::Client,
    deadline: Duration,
}

impl WebFetch {
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            deadline: DEADLINE,
        }
    }

    /// The same tool with another time limit (tests, mostly).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebFetchArgs {
    url: String,
}

#[async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn describe(&self, args: &Value) -> CallAbout {
        let url = text_arg(args, "url").unwrap_or_default();
        CallAbout::new(format!("fetch {}", quote(url)), Some(host(url)))
    }

    fn description(&self) -> &str {
        "Fetch a web page (http or https) and read it as plain text."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The full address, http:// or https://"}},
            "required": ["url"]
        })
    }

    fn group(&self) -> Option<ToolGroup> {
        Some(ToolGroup::shown("web"))
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::External
    }

    fn subjects(&self, args: &Value) -> Vec<Subject> {
        args.get("url")
            .and_then(Value::as_str)
            .map(|url| vec![Subject::Url(url.to_owned())])
            .unwrap_or_default()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WebFetchArgs = parse_args(args)?;
        let url = reqwest::Url::parse(args.url.trim()).map_err(|err| {
            ToolError::InvalidArguments(format!(
                "`{}` is not a web address ({err}); write it like https://example.com/page",
                args.url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidArguments(format!(
                "only http and https addresses can be fetched, not `{}`",
                url.scheme()
            )));
        }
        tokio::select! {
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
            page = self.fetch(url) => page,
        }
    }
}

impl WebFetch {
    async fn fetch(&self, url: reqwest::Url) -> Result<ToolOutput, ToolError> {
        let failed =
            |err: reqwest::Error| ToolError::Failed(format!("fetching {url} failed: {err}"));
        let deadline = tokio::time::Instant::now() + self.deadline;
        let request = self
            .http
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/plain;q=0.9, */*;q=0.5",
            )
            .send();
        let mut response = tokio::time::timeout_at(deadline, request)
            .await
            .map_err(|_| {
                ToolError::Failed(format!(
                    "{url} sent no answer within {} s",
                    self.deadline.as_secs_f32()
                ))
            })?
            .map_err(failed)?;
        let status = response.status();
        let final_url = response.url().clone();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut body = Vec::new();
        let mut cut = None;
        loop {
            let piece = match tokio::time::timeout_at(deadline, response.chunk()).await {
                Ok(piece) => piece.map_err(failed)?,
                Err(_) if body.is_empty() => {
                    return Err(ToolError::Failed(format!(
                        "{url} sent no page within {} s",
                        self.deadline.as_secs_f32()
                    )));
                }
                Err(_) => {
                    cut = Some(format!(
                        "[the server was still sending after {} s: only what came by then, {} bytes, was read]",
                        self.deadline.as_secs_f32(),
                        body.len()
                    ));
                    break;
                }
            };
            let Some(piece) = piece else { break };
            let room = MAX_BODY_BYTES - body.len();
            if piece.len() > room {
                body.extend_from_slice(&piece[..room]);
                cut = Some(format!("[only the first {MAX_BODY_BYTES} bytes were read]"));
                break;
            }
            body.extend_from_slice(&piece);
        }
        let is_text = content_type.is_empty()
            || content_type.starts_with("text/")
            || content_type.contains("json")
            || content_type.contains("xml")
            || content_type.contains("javascript");
        if !is_text {
            return Err(ToolError::Failed(format!(
                "{final_url} is `{content_type}`, not a page web_fetch can read"
            )));
        }
        let raw = String::from_utf8_lossy(&body);
        let looks_html = content_type.contains("html") || raw.trim_start().starts_with('<');
        let text = if looks_html {
            html::to_text(&raw)
        } else {
            raw.into_owned()
        };
        let mut report = format!("{final_url} (HTTP {})\n\n{text}", status.as_u16());
        if let Some(cut) = cut {
            report.push('\n');
            report.push_str(&cut);
        }
        if !status.is_success() {
            return Err(ToolError::Failed(report));
        }
        Ok(ToolOutput::text(report))
    }
}
