//! A server run as a child process, JSON-RPC one message per line over its stdin and
//! stdout.
//!
//! spawn (own process group) → a writer task owns stdin → a reader task reads stdout a
//! bounded line at a time and hands each answer to the request waiting for it, answers
//! the server's own requests, ignores answers nobody asked for → stderr is drained all
//! along (a server that floods it never blocks) and its tail kept for error messages.
//! Anything the reader cannot accept (a line past the size cap, a line that is not
//! JSON-RPC, the end of stdout) breaks the link: every waiting request gets the reason,
//! and the process group is killed.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::search_path::SearchPath;
use super::wire::{self, Broken, Incoming, MAX_MESSAGE_BYTES, NotStarted, Outcome};
use crate::process_tree::Tree;

/// How much of the server's stderr is kept to quote when it fails.
const STDERR_TAIL: usize = 2048;
/// How long a broken link waits for stderr to end (a child the server started may
/// hold it open after the server itself is gone).
const STDERR_GRACE: Duration = Duration::from_millis(500);

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Outcome, Broken>>>>>;

/// A running server process and the tasks that talk to it.
pub struct StdioLink {
    name: String,
    outgoing: mpsc::UnboundedSender<Value>,
    waiting: Waiting,
    /// Why the link broke, once it has.
    broken: Arc<Mutex<Option<Broken>>>,
    _group: Tree,
    _child: Arc<tokio::sync::Mutex<Child>>,
}

impl std::fmt::Debug for StdioLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioLink")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl StdioLink {
    /// Starts `command`, found in `search`, with `args` and `env` (over the inherited
    /// environment, with `search` as its PATH unless `env` sets one).
    pub fn spawn(
        name: &str,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        search: &SearchPath,
    ) -> Result<Self, NotStarted> {
        let program = search.resolve(command)?;
        let mut starting = Command::new(program);
        starting
            .args(args)
            .env("PATH", search.joined())
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Tree::prepare(&mut starting);
        let mut child = starting.spawn().map_err(|err| NotStarted::Spawn {
            command: command.to_owned(),
            why: err.to_string(),
        })?;
        let group = Tree::of(&child);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(NotStarted::NoStreams(command.to_owned()));
        };
        let (outgoing, queued) = mpsc::unbounded_channel();
        let waiting: Waiting = Arc::default();
        let broken: Arc<Mutex<Option<Broken>>> = Arc::default();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let child = Arc::new(tokio::sync::Mutex::new(child));
        tokio::spawn(write(stdin, queued));
        let stderr_read = tokio::spawn(drain(stderr, Arc::clone(&stderr_tail)));
        tokio::spawn(
            Reader {
                name: name.to_owned(),
                outgoing: outgoing.clone(),
                waiting: Arc::clone(&waiting),
                broken: Arc::clone(&broken),
                stderr_tail,
                stderr_read,
                child: Arc::clone(&child),
            }
            .run(stdout),
        );
        Ok(Self {
            name: name.to_owned(),
            outgoing,
            waiting,
            broken,
            _group: group,
            _child: child,
        })
    }

    /// Sends request `id` and waits for its outcome, or for the link to break.
    pub async fn request(&self, id: u64, method: &str, params: Value) -> Result<Outcome, Broken> {
        let (reply, outcome) = oneshot::channel();
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            // Checked under the lock the reader breaks it under: no request slips in
            // after everyone waiting was told.
            if let Some(broken) = self.broken() {
                return Err(broken);
            }
            waiting.insert(id, reply);
        }
        let _forget = Forget {
            waiting: &self.waiting,
            id,
        };
        if self
            .outgoing
            .send(wire::request(id, method, params))
            .is_err()
        {
            return Err(self
                .broken()
                .unwrap_or_else(|| Broken("stopped taking input".into())));
        }
        outcome
            .await
            .unwrap_or_else(|_| Err(Broken("went away".into())))
    }

    /// Sends a notification; a broken link drops it.
    pub fn notify(&self, message: Value) {
        let _ = self.outgoing.send(message);
    }

    pub fn broken(&self) -> Option<Broken> {
        self.broken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Takes a request off the waiting list when its caller stops waiting (an answer,
/// a timeout, a Stop): a late answer then finds no one and is ignored.
struct Forget<'a> {
    waiting: &'a Waiting,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

async fn write(mut stdin: ChildStdin, mut queued: mpsc::UnboundedReceiver<Value>) {
    while let Some(message) = queued.recv().await {
        let mut line = message.to_string();
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}

/// Reads stderr to its end so the server never blocks on a full pipe, keeping the
/// last [`STDERR_TAIL`] bytes.
async fn drain(mut stderr: impl AsyncRead + Unpin, tail: Arc<Mutex<VecDeque<u8>>>) {
    let mut buffer = [0u8; 8192];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            return;
        }
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        tail.extend(&buffer[..read]);
        let excess = tail.len().saturating_sub(STDERR_TAIL);
        tail.drain(..excess);
    }
}

struct Reader {
    name: String,
    outgoing: mpsc::UnboundedSender<Value>,
    waiting: Waiting,
    broken: Arc<Mutex<Option<Broken>>>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    /// Ends when stderr does.
    stderr_read: JoinHandle<()>,
    child: Arc<tokio::sync::Mutex<Child>>,
}

impl Reader {
    async fn run(self, stdout: impl AsyncRead + Unpin) {
        let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
        let reason = loop {
            match read_line(&mut stdout).await {
                Line::Message(text) => {
                    if let Some(reason) = self.take(&text) {
                        break reason;
                    }
                }
                Line::TooLong => {
                    break format!(
                        "sent a message larger than {} MB",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    );
                }
                Line::End => break self.ended().await,
            }
        };
        self.break_link(reason).await;
    }

    /// Handles one message; the reason to break the link, if it must break.
    fn take(&self, text: &[u8]) -> Option<String> {
        match wire::parse(text) {
            Incoming::Response { id, outcome } => {
                let waiter = self
                    .waiting
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(Ok(outcome));
                    }
                    // A call given up on (timed out, stopped), or an id never used.
                    None => tracing::debug!(server = %self.name, id, "an answer no one waits for"),
                }
                None
            }
            Incoming::StrayResponse(id) => {
                tracing::debug!(server = %self.name, %id, "an answer to an id Cairn never used");
                None
            }
            Incoming::Request { id, method } => {
                let _ = self.outgoing.send(wire::answer_to(id, &method));
                None
            }
            Incoming::Notification { .. } => None,
            Incoming::Malformed { text, .. } => {
                Some(format!("sent a message that is not JSON-RPC: «{text}»"))
            }
            Incoming::Garbage(text) => Some(format!(
                "wrote a line that is not JSON to its output (MCP servers must log to stderr): «{text}»"
            )),
        }
    }

    /// Why stdout ended: the process exited, or it closed stdout and carries on.
    async fn ended(&self) -> String {
        let mut child = self.child.lock().await;
        let exited = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
        match exited {
            Ok(Ok(status)) => match status.code() {
                Some(code) => format!("exited (status {code})"),
                None => "was killed by a signal".to_owned(),
            },
            Ok(Err(err)) => format!("ended its output ({err})"),
            Err(_) => "closed its output without exiting".to_owned(),
        }
    }

    async fn break_link(self, reason: String) {
        // Whatever state it is in, it is no longer spoken to. Once it is gone its
        // stderr ends, and the last words are quoted only after they were all read:
        // a process that wrote a long log can exit with them still in the pipe.
        let _ = self.child.lock().await.start_kill();
        let _ = tokio::time::timeout(STDERR_GRACE, self.stderr_read).await;
        let tail = {
            let tail = self
                .stderr_tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            wire::last_words(tail.iter().copied().collect::<Vec<u8>>().as_slice())
        };
        let reason = if tail.is_empty() {
            reason
        } else {
            format!("{reason}; its last words on stderr: «{tail}»")
        };
        let broken = Broken(reason);
        let waiting: Vec<_> = {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            *self.broken.lock().unwrap_or_else(PoisonError::into_inner) = Some(broken.clone());
            waiting.drain().map(|(_, waiter)| waiter).collect()
        };
        for waiter in waiting {
            let _ = waiter.send(Err(broken.clone()));
        }
    }
}

enum Line {
    Message(Vec<u8>),
    TooLong,
    End,
}

/// The next non-empty line, without its newline; at most [`MAX_MESSAGE_BYTES`].
async fn read_line(stdout: &mut BufReader<impl AsyncRead + Unpin>) -> Line {
    let mut line = Vec::new();
    loop {
        let available = match stdout.fill_buf().await {
            Ok([]) | Err(_) => return Line::End,
            Ok(available) => available,
        };
        let (piece, complete) = match memchr::memchr(b'\n', available) {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if line.len() + piece.len() > MAX_MESSAGE_BYTES {
            return Line::TooLong;
        }
        line.extend_from_slice(piece);
        let used = complete.unwrap_or(piece.len());
        stdout.consume(used);
        if complete.is_some() {
            if line.iter().all(u8::is_ascii_whitespace) {
                line.clear();
                continue;
            }
            return Line::Message(line);
        }
    }
}
