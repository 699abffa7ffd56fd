//! One MCP server over its life: started and its tools listed, called with a timeout
//! and a Stop that the server hears about (`notifications/cancelled`), started again
//! after it dies (at most [`MAX_RESTARTS_PER_TURN`] times a turn, with a short
//! backoff), and switched off for the session when it keeps dying.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use super::McpError;
use super::config::{McpServerConfig, McpTransport};
use super::http::HttpLink;
use super::link::{Broken, Link};
use super::search_path::SearchPath;
use super::stdio::StdioLink;
use super::wire::{self, NotStarted, Outcome};
use cairn_core::tool::{ToolContext, ToolError, ToolOutput};
use cairn_protocol::Image;

/// How long a server may take to start and list its tools.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How many times one turn starts a dead server again before giving up on it.
pub const MAX_RESTARTS_PER_TURN: u32 = 3;
/// Waited before the n-th restart of a turn, times n.
const RESTART_BACKOFF: Duration = Duration::from_millis(200);

/// A started server.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    http: reqwest::Client,
    call_timeout: Duration,
    /// Whether the server's read-only hints are believed (the user trusts it).
    trusted: AtomicBool,
    /// Its tools as it listed them when it started.
    listed: Vec<ListedTool>,
    next_id: AtomicU64,
    link: tokio::sync::Mutex<Lifeline>,
    /// Why it is off for the session, once it kept dying.
    failed: Mutex<Option<String>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("tools", &self.listed.len())
            .finish_non_exhaustive()
    }
}

/// The live connection, and the restarts the current turn has used.
#[derive(Default)]
struct Lifeline {
    link: Option<Arc<Link>>,
    restarts_turn: Option<String>,
    restarts: u32,
}

/// A tool the server listed, under the name Cairn offers it by.
#[derive(Debug)]
pub(crate) struct ListedTool {
    pub full_name: String,
    pub remote_name: String,
    pub description: String,
    pub parameters: Value,
    pub read_only_hint: bool,
}

impl McpServer {
    /// Starts a server and lists its tools.
    pub async fn start(
        name: &str,
        config: &McpServerConfig,
        trusted: bool,
        default_timeout: Duration,
        http: reqwest::Client,
    ) -> Result<Arc<Self>, McpError> {
        let next_id = AtomicU64::new(1);
        let (link, listed) =
            tokio::time::timeout(START_TIMEOUT, connect(name, config, &http, &next_id, true))
                .await
                .map_err(|_| McpError::Start {
                    server: name.to_owned(),
                    reason: NotStarted::Silent(START_TIMEOUT.as_secs()),
                })?
                .map_err(|reason| McpError::Start {
                    server: name.to_owned(),
                    reason,
                })?;
        let listed = listed
            .into_iter()
            .filter_map(|tool| listed_tool(name, &tool))
            .collect();
        Ok(Arc::new(Self {
            name: name.to_owned(),
            config: config.clone(),
            http,
            call_timeout: config.call_timeout(default_timeout),
            trusted: AtomicBool::new(trusted),
            listed,
            next_id,
            link: tokio::sync::Mutex::new(Lifeline {
                link: Some(Arc::new(link)),
                ..Lifeline::default()
            }),
            failed: Mutex::default(),
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn listed(&self) -> &[ListedTool] {
        &self.listed
    }

    pub fn is_trusted(&self) -> bool {
        self.trusted.load(Ordering::SeqCst)
    }

    /// Believe (or stop believing) the server's read-only hints, from its next call on.
    pub fn set_trusted(&self, trusted: bool) {
        self.trusted.store(trusted, Ordering::SeqCst);
    }

    /// Why the server is off for the session, if it kept dying.
    pub fn problem(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops the server (its process group ends with the last call using it).
    pub async fn stop(&self) {
        self.link.lock().await.link = None;
    }

    /// Calls the listed tool `index` with `arguments`.
    pub(crate) async fn call(
        &self,
        index: usize,
        arguments: serde_json::Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let tool = &self.listed[index].remote_name;
        let link = self.link_for(ctx).await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut given_up = GiveUp {
            link: &link,
            id,
            reason: Some("the call was abandoned"),
        };
        let request = link.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        let outcome = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                given_up.reason = Some("the user stopped the turn");
                return Err(ToolError::Cancelled);
            }
            () = tokio::time::sleep(self.call_timeout) => {
                given_up.reason = Some("Cairn's time limit for the call ran out");
                return Err(ToolError::Failed(format!(
                    "MCP server `{}` did not answer `{tool}` within {}; the call was cancelled \
                     (a server's `timeout_ms` in the MCP servers file, or CAIRN_MCP_TOOL_TIMEOUT_MS, \
                     allows more)",
                    self.name,
                    seconds(self.call_timeout)
                )));
            }
            outcome = request => outcome,
        };
        given_up.reason = None;
        match outcome {
            Ok(Outcome::Result(result)) => tool_output(&result),
            Ok(Outcome::Error { code, message }) => Err(ToolError::Failed(format!(
                "MCP server `{}` refused the call to `{tool}`: {message} (code {code})",
                self.name
            ))),
            Err(Broken(reason)) => {
                self.lost(&link).await;
                Err(ToolError::Failed(format!(
                    "MCP server `{}` {reason} during the call to `{tool}`; it will be started \
                     again for the next call",
                    self.name
                )))
            }
        }
    }

    /// The live connection, starting the server again if it died.
    async fn link_for(&self, ctx: &ToolContext) -> Result<Arc<Link>, ToolError> {
        if let Some(problem) = self.problem() {
            return Err(self.off(&problem));
        }
        let mut lifeline = self.link.lock().await;
        if let Some(link) = &lifeline.link
            && link.broken().is_none()
        {
            return Ok(Arc::clone(link));
        }
        lifeline.link = None;
        if lifeline.restarts_turn != ctx.turn {
            lifeline.restarts_turn.clone_from(&ctx.turn);
            lifeline.restarts = 0;
        }
        if lifeline.restarts >= MAX_RESTARTS_PER_TURN {
            let problem = format!(
                "it stopped working {} times in one turn",
                MAX_RESTARTS_PER_TURN + 1
            );
            *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(problem.clone());
            return Err(self.off(&problem));
        }
        lifeline.restarts += 1;
        let backoff = RESTART_BACKOFF * lifeline.restarts;
        let restart = async {
            tokio::time::sleep(backoff).await;
            tokio::time::timeout(
                START_TIMEOUT,
                connect(&self.name, &self.config, &self.http, &self.next_id, false),
            )
            .await
            .unwrap_or_else(|_| Err(NotStarted::Silent(START_TIMEOUT.as_secs())))
        };
        let started = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            started = restart => started,
        };
        match started {
            Ok((link, _)) => {
                tracing::info!(server = %self.name, "MCP server started again");
                let link = Arc::new(link);
                lifeline.link = Some(Arc::clone(&link));
                Ok(link)
            }
            Err(reason) => Err(ToolError::Failed(format!(
                "MCP server `{}` could not be started again: {reason}",
                self.name
            ))),
        }
    }

    /// Forgets a connection that broke (unless a newer one replaced it already).
    async fn lost(&self, link: &Arc<Link>) {
        let mut lifeline = self.link.lock().await;
        if lifeline
            .link
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, link))
        {
            lifeline.link = None;
        }
    }

    fn off(&self, problem: &str) -> ToolError {
        ToolError::Failed(format!(
            "MCP server `{}` is off for this session: {problem}. Carry on without its tools; \
             the user can start it again in Settings or with a new run",
            self.name
        ))
    }
}

/// Tells the server a request was given up (a timeout, a Stop, a dropped call), so it
/// can stop working on it.
struct GiveUp<'a> {
    link: &'a Link,
    id: u64,
    /// `None` once the answer came.
    reason: Option<&'static str>,
}

impl Drop for GiveUp<'_> {
    fn drop(&mut self) {
        if let Some(reason) = self.reason {
            self.link.notify(wire::cancelled(self.id, reason));
        }
    }
}

/// Opens a connection, says hello, and (when `list`) lists every tool, page by page.
async fn connect(
    name: &str,
    config: &McpServerConfig,
    http: &reqwest::Client,
    ids: &AtomicU64,
    list: bool,
) -> Result<(Link, Vec<Value>), NotStarted> {
    let link = match &config.transport {
        McpTransport::Command { command, args, env } => {
            let search = SearchPath::for_servers().await;
            Link::Stdio(StdioLink::spawn(name, command, args, env, search)?)
        }
        McpTransport::Url { url, headers } => {
            Link::Http(Box::new(HttpLink::new(url, headers, http.clone())?))
        }
    };
    let ask = |method: &'static str, params: Value| {
        let link = &link;
        async move {
            match link
                .request(ids.fetch_add(1, Ordering::Relaxed), method, params)
                .await
            {
                Ok(Outcome::Result(result)) => Ok(result),
                Ok(Outcome::Error { code, message }) => Err(NotStarted::Refused {
                    method,
                    message,
                    code,
                }),
                Err(Broken(reason)) => Err(NotStarted::Broken(reason)),
            }
        }
    };
    ask("initialize", wire::initialize_params()).await?;
    link.notify(wire::notification("notifications/initialized", json!({})));
    let mut tools = Vec::new();
    if list {
        let mut cursor: Option<Value> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = ask("tools/list", params).await?;
            if let Some(Value::Array(listed)) = page.get("tools") {
                tools.extend(listed.iter().cloned());
            }
            match page.get("nextCursor") {
                Some(next @ Value::String(_)) if Some(next) != cursor.as_ref() => {
                    cursor = Some(next.clone());
                }
                _ => break,
            }
        }
    }
    Ok((link, tools))
}

/// A listed tool as Cairn offers it, or `None` when its name cannot be offered.
fn listed_tool(server: &str, tool: &Value) -> Option<ListedTool> {
    let remote_name = tool.get("name")?.as_str()?.to_owned();
    let full_name = format!("mcp__{server}__{}", wire_safe(&remote_name));
    // Model APIs take tool names of at most 64 characters.
    if full_name.len() > 64 {
        tracing::warn!(tool = %full_name, "an MCP tool's name is too long to offer");
        return None;
    }
    Some(ListedTool {
        full_name,
        remote_name,
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        parameters: match tool.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => json!({"type": "object"}),
        },
        read_only_hint: tool
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// A tool name as model APIs accept it: letters, digits, `_` and `-`.
fn wire_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Images kept from one result: more are named in its text only.
const MAX_IMAGES: usize = 4;
/// The largest image kept, in base64 bytes (about 3 MB of image): a screenshot fits;
/// a bigger one would weigh on every later request and on the stored thread.
const MAX_IMAGE_BASE64: usize = 4 * 1024 * 1024;

/// A `tools/call` result as the model reads it: its text, one block per line, other
/// content named; images (up to [`MAX_IMAGES`] of the kinds every model and webview
/// reads) kept beside it; an `isError` result is a failed call.
fn tool_output(result: &Value) -> Result<ToolOutput, ToolError> {
    let mut text = String::new();
    let mut images = Vec::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let piece = match block.get("type").and_then(Value::as_str) {
            Some("text") => block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            Some("image") => image(block, &mut images),
            Some("audio") => "[audio]".to_owned(),
            Some("resource") => block
                .get("resource")
                .map(Value::to_string)
                .unwrap_or_default(),
            Some("resource_link") => format!(
                "[resource {}]",
                block.get("uri").and_then(Value::as_str).unwrap_or("?")
            ),
            _ => "[content Cairn cannot show]".to_owned(),
        };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    if text.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        text = structured.to_string();
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(ToolError::Failed(text));
    }
    Ok(ToolOutput {
        images,
        ..ToolOutput::text(text)
    })
}

/// Keeps an image block when it can be shown, and says in the text what it is (so a
/// model that cannot see it still knows it is there, and why it was not kept).
fn image(block: &Value, images: &mut Vec<Image>) -> String {
    let mime_type = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("an unnamed type");
    let data = block
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let size = format_size(data.len() / 4 * 3);
    if !Image::SHOWN.contains(&mime_type) {
        return format!("[an image of type {mime_type}, {size}, not shown]");
    }
    if data.is_empty() || data.len() > MAX_IMAGE_BASE64 {
        return format!("[an image ({mime_type}, {size}) too large to keep]");
    }
    if images.len() == MAX_IMAGES {
        return format!("[an image ({mime_type}, {size}) past the {MAX_IMAGES} kept]");
    }
    images.push(Image {
        mime_type: mime_type.to_owned(),
        data: data.to_owned(),
    });
    format!("[image {}: {mime_type}, {size}]", images.len())
}

/// `12 KB`, `1.5 MB`.
fn format_size(bytes: usize) -> String {
    if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// `60 s`, `1.5 s`, `250 ms`.
fn seconds(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{MAX_IMAGE_BASE64, MAX_IMAGES, tool_output};

    #[test]
    fn images_are_kept_beside_the_text_that_names_them() {
        let png = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
        let result = json!({"content": [
            {"type": "text", "text": "The chart:"},
            png,
            {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
            {"type": "image", "mimeType": "image/png", "data": "A".repeat(MAX_IMAGE_BASE64 + 4)},
        ]});
        let output = tool_output(&result).unwrap();
        assert_eq!(output.images.len(), 1);
        assert_eq!(output.images[0].mime_type, "image/png");
        assert_eq!(output.images[0].data, "iVBORw0KGgo=");
        assert_eq!(
            output.content,
            "The chart:\n[image 1: image/png, 1 KB]\n[an image of type image/svg+xml, 1 KB, \
             not shown]\n[an image (image/png, 3.0 MB) too large to keep]"
        );

        let many = json!({"content": vec![png; MAX_IMAGES + 1]});
        let output = tool_output(&many).unwrap();
        assert_eq!(output.images.len(), MAX_IMAGES);
        assert!(
            output
                .content
                .ends_with("[an image (image/png, 1 KB) past the 4 kept]"),
            "{}",
            output.content
        );
    }
}
