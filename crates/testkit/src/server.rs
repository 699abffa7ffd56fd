//! A fake model server: real TCP and HTTP/1.1 on 127.0.0.1, replies scripted per route.
//!
//! accept → read the request (head + Content-Length body) → record it → take the next
//! reply queued for "METHOD /path" → write it piece by piece (chunked), with pauses,
//! a hang, or a cut connection where the script says.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One step of writing a reply body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Bytes(Vec<u8>),
    Pause(Duration),
    /// This many bytes of filler, sent as they are made (a huge body without
    /// holding it in memory).
    Filler(usize),
    /// Close the connection without finishing the body: a transport error.
    Cut,
    /// Stop sending but keep the connection open until the client leaves.
    Hang,
    /// Wait until the test opens the gate of this name ([`FakeServer::open_gate`]):
    /// a test acts on a half-sent reply without racing its pauses.
    Gate(String),
}

/// A scripted response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// 0 sends no status line at all: the connection closes once the request is read.
    pub status: u16,
    pub content_type: String,
    /// Waited before the status line: a slow server, or one that never answers.
    pub head_delay: Duration,
    pub pieces: Vec<Piece>,
}

impl Reply {
    pub fn new(status: u16, content_type: &str) -> Self {
        Self {
            status,
            content_type: content_type.to_owned(),
            head_delay: Duration::ZERO,
            pieces: Vec::new(),
        }
    }

    /// A 200 `text/event-stream` with these exact bytes.
    pub fn sse(bytes: impl Into<Vec<u8>>) -> Self {
        Self::new(200, "text/event-stream").then(Piece::Bytes(bytes.into()))
    }

    /// No answer: the connection closes as soon as the request is read, as a server
    /// does to a kept-alive connection it has already given up on.
    pub fn hang_up() -> Self {
        Self::new(0, "")
    }

    /// An `application/json` body with this status.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self::new(status, "application/json").then(Piece::Bytes(body.into()))
    }

    /// A 200 NDJSON stream (Ollama's framing).
    pub fn ndjson(bytes: impl Into<Vec<u8>>) -> Self {
        Self::new(200, "application/x-ndjson").then(Piece::Bytes(bytes.into()))
    }

    /// The same body sent `piece_len` bytes at a time with `pause` between pieces.
    pub fn paced(mut self, piece_len: usize, pause: Duration) -> Self {
        let mut body = Vec::new();
        for piece in std::mem::take(&mut self.pieces) {
            match piece {
                Piece::Bytes(bytes) => body.extend(bytes),
                other => self.pieces.push(other),
            }
        }
        for chunk in body.chunks(piece_len.max(1)) {
            self.pieces.push(Piece::Bytes(chunk.to_vec()));
            self.pieces.push(Piece::Pause(pause));
        }
        self
    }

    pub fn then(mut self, piece: Piece) -> Self {
        self.pieces.push(piece);
        self
    }

    pub fn head_delay(mut self, delay: Duration) -> Self {
        self.head_delay = delay;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// "METHOD /path", as replies are queued.
    pub fn route(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    ///
    /// # Panics
    /// When the body is not JSON: the client under test sent garbage.
    #[allow(clippy::panic)]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "request body is not JSON ({err}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Works out a reply from the request, as a model server would.
type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct Script {
    queued: HashMap<String, VecDeque<Reply>>,
    responders: HashMap<String, Responder>,
    fallback: HashMap<String, Reply>,
    /// Where a request with nothing scripted is relayed, when set.
    upstream: Option<String>,
    received: Vec<Recorded>,
    opened: std::collections::HashSet<String>,
    /// Per route: the requests being answered now, and the most there ever were.
    in_flight: HashMap<String, (usize, usize)>,
}

/// Counts a request as being answered until dropped (however its reply ends).
///
/// A real server frees a request's slot when the model stops generating, which is
/// before the reply's last bytes go out: a client that reads them may send its next
/// request at once. So a scripted reply stops counting when its last bytes start to
/// be written (see `write_reply`), not when the connection is done; counting to the
/// end would see a well-behaved client's next request overlap the tail of this one.
struct Answering {
    shared: Arc<Shared>,
    route: String,
}

impl Answering {
    fn start(shared: &Arc<Shared>, route: &str) -> Self {
        let mut script = shared.lock();
        let (now, peak) = script.in_flight.entry(route.to_owned()).or_default();
        *now += 1;
        *peak = (*peak).max(*now);
        Self {
            shared: Arc::clone(shared),
            route: route.to_owned(),
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if let Some((now, _)) = self.shared.lock().in_flight.get_mut(&self.route) {
            *now = now.saturating_sub(1);
        }
    }
}

/// The script and the bell rung when a gate opens.
#[derive(Default)]
struct Shared {
    script: Mutex<Script>,
    gate_opened: tokio::sync::Notify,
}

/// The server. Dropping it stops accepting and ends open connections.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeServer {
    /// Binds a free port on 127.0.0.1 and starts serving.
    ///
    /// # Panics
    /// When no local port can be bound.
    #[allow(clippy::expect_used)]
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a local port");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared::default());
        let serving = Arc::clone(&shared);
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                connections.spawn(serve(socket, Arc::clone(&serving)));
            }
        });
        Self {
            addr,
            shared,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply for `route` ("POST /v1/chat/completions"); each request to the
    /// route takes the next one.
    pub fn push(&self, route: &str, reply: Reply) -> &Self {
        self.lock()
            .queued
            .entry(route.to_owned())
            .or_default()
            .push_back(reply);
        self
    }

    /// Answers `route` from each request once its queue is empty (before any
    /// fallback): a scripted model that reads what it was sent.
    pub fn respond(
        &self,
        route: &str,
        respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> &Self {
        self.lock()
            .responders
            .insert(route.to_owned(), Arc::new(respond));
        self
    }

    /// Relays every request with nothing scripted to `upstream` (`http://host:port`)
    /// and streams its answer back: a recording proxy in front of a real server.
    pub fn forward(&self, upstream: &str) -> &Self {
        self.lock().upstream = Some(upstream.trim_end_matches('/').to_owned());
        self
    }

    /// The reply for `route` once its queue is empty.
    pub fn fallback(&self, route: &str, reply: Reply) -> &Self {
        self.lock().fallback.insert(route.to_owned(), reply);
        self
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().received.clone()
    }

    /// The requests to one route ("POST /v1/chat/completions"), in order: a test of
    /// the chat need not count the questions a client asks about the model first.
    pub fn requests_to(&self, route: &str) -> Vec<Recorded> {
        self.lock()
            .received
            .iter()
            .filter(|request| request.route() == route)
            .cloned()
            .collect()
    }

    /// The most requests to `route` ever answered at once: what a model server with
    /// that many slots would have had to take.
    pub fn peak_in_flight(&self, route: &str) -> usize {
        self.lock()
            .in_flight
            .get(route)
            .map_or(0, |(_, peak)| *peak)
    }

    /// Lets every reply waiting at the gate `name` go on (now or when it gets there).
    pub fn open_gate(&self, name: &str) {
        self.lock().opened.insert(name.to_owned());
        self.shared.gate_opened.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.shared.lock()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn wait_for_gate(&self, name: &str) {
        loop {
            let opened = self.gate_opened.notified();
            tokio::pin!(opened);
            // Registered before the check, so an opening in between is not missed.
            opened.as_mut().enable();
            if self.lock().opened.contains(name) {
                return;
            }
            opened.await;
        }
    }
}

async fn serve(mut socket: TcpStream, shared: Arc<Shared>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let route = format!("{} {}", request.method, request.path);
    let mut answering = Some(Answering::start(&shared, &route));
    let (reply, responder, upstream) = {
        let mut script = shared.lock();
        script.received.push(request.clone());
        let queued = script.queued.get_mut(&route).and_then(VecDeque::pop_front);
        let responder = script.responders.get(&route).cloned();
        let reply = queued.or_else(|| {
            responder
                .is_none()
                .then(|| script.fallback.get(&route).cloned())
                .flatten()
        });
        (reply, responder, script.upstream.clone())
    };
    // Outside the lock: a responder may take its time.
    let reply = reply.or_else(|| responder.map(|respond| respond(&request)));
    if let (None, Some(upstream)) = (&reply, upstream) {
        let _ = relay(&mut socket, &request, &upstream).await;
        return;
    }
    let reply = reply.unwrap_or_else(|| {
        Reply::json(
            404,
            format!(r#"{{"error":{{"message":"fake server: nothing scripted for {route}"}}}}"#),
        )
    });
    // A client that went away mid-reply is part of what tests exercise.
    let _ = write_reply(&mut socket, &reply, &shared, &mut answering).await;
}

/// Sends `request` on to `upstream` and streams its answer back as it comes.
async fn relay(socket: &mut TcpStream, request: &Recorded, upstream: &str) -> std::io::Result<()> {
    let method =
        reqwest::Method::from_bytes(request.method.as_bytes()).map_err(std::io::Error::other)?;
    let client = cairn_providers::http::client_builder()
        .build()
        .map_err(std::io::Error::other)?;
    let mut relayed = client
        .request(method, format!("{upstream}{}", request.path))
        .body(request.body.clone());
    if let Some(kind) = request.header("content-type") {
        relayed = relayed.header("content-type", kind);
    }
    let mut answer = relayed.send().await.map_err(std::io::Error::other)?;
    let kind = answer
        .headers()
        .get("content-type")
        .and_then(|kind| kind.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_owned();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {kind}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        answer.status().as_u16(),
        reason(answer.status().as_u16()),
    );
    socket.write_all(head.as_bytes()).await?;
    while let Some(bytes) = answer.chunk().await.map_err(std::io::Error::other)? {
        let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
        framed.extend_from_slice(&bytes);
        framed.extend_from_slice(b"\r\n");
        socket.write_all(&framed).await?;
        socket.flush().await?;
    }
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await
}

pub(crate) async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(at) = memchr::memmem::find(&buffer, b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; length - body.len()];
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// Writes `reply`; `answering` is dropped as its final bytes start to go out (when
/// the reply ends with bytes; a reply that ends by hanging or cutting counts until
/// it ends).
async fn write_reply(
    socket: &mut TcpStream,
    reply: &Reply,
    shared: &Shared,
    answering: &mut Option<Answering>,
) -> std::io::Result<()> {
    if !reply.head_delay.is_zero() {
        tokio::time::sleep(reply.head_delay).await;
    }
    if reply.status == 0 {
        return Ok(());
    }
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        reply.status,
        reason(reply.status),
        reply.content_type
    );
    socket.write_all(head.as_bytes()).await?;
    let last_bytes = matches!(
        reply.pieces.last(),
        Some(Piece::Bytes(_) | Piece::Filler(_))
    )
    .then(|| reply.pieces.len() - 1);
    for (at, piece) in reply.pieces.iter().enumerate() {
        if Some(at) == last_bytes {
            answering.take();
        }
        match piece {
            Piece::Bytes(bytes) if bytes.is_empty() => {}
            Piece::Bytes(bytes) => {
                let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
                framed.extend_from_slice(bytes);
                framed.extend_from_slice(b"\r\n");
                socket.write_all(&framed).await?;
                socket.flush().await?;
            }
            Piece::Filler(total) => {
                let chunk = vec![b'x'; 64 * 1024];
                let mut left = *total;
                while left > 0 {
                    let n = left.min(chunk.len());
                    let mut framed = format!("{n:x}\r\n").into_bytes();
                    framed.extend_from_slice(&chunk[..n]);
                    framed.extend_from_slice(b"\r\n");
                    socket.write_all(&framed).await?;
                    left -= n;
                }
            }
            Piece::Pause(pause) => tokio::time::sleep(*pause).await,
            Piece::Gate(name) => shared.wait_for_gate(name).await,
            Piece::Cut => return socket.shutdown().await,
            Piece::Hang => {
                // Wait for the client to hang up (it sends nothing more, so a read
                // returns only when the connection closes).
                let mut sink = [0u8; 64];
                while socket.read(&mut sink).await? > 0 {}
                return Ok(());
            }
        }
    }
    answering.take();
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
