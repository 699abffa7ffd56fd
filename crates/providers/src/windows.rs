//! What servers said about their models (the context window, whether the chat
//! template takes tools), shared by every client in the process. Front ends make a
//! client per turn, and a server that says nothing (a hosted API) would otherwise be
//! asked its questions again before every turn, each a round trip the user waits for.
//! Kept a few minutes: a local model can be loaded again at another size. A front end
//! that keeps answers across runs hands them in ([`remember`]) and takes back one the
//! server proved wrong ([`forget`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cairn_core::model::ContextWindow;

const KEPT_FOR: Duration = Duration::from_secs(300);

/// What a server says about one of its models before any chat with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Said {
    /// How much context it takes, when the server says.
    pub window: Option<ContextWindow>,
    /// Its chat template takes no tools: they are described in its prompt instead, and
    /// its calls read back from its text.
    pub tools_in_text: bool,
    /// The requests the server serves at once, where it says (llama.cpp's
    /// `total_slots`, in the same `/props` answer as its window).
    pub slots: Option<u32>,
    /// The model's parameter count, where the server says (llama.cpp's
    /// `meta.n_params` in `/v1/models`, Ollama's `general.parameter_count`): a small
    /// model is checked before its first turn (see the runtime's check-up).
    pub params: Option<u64>,
    /// The server says how far it has read a prompt when asked (llama.cpp's
    /// `return_progress`).
    pub reads_progress: bool,
}

impl Said {
    /// The server is llama.cpp's: only it says how far it has read a prompt, and it
    /// also takes a GBNF `grammar` with a chat request.
    pub fn is_llama_cpp(&self) -> bool {
        self.reads_progress
    }
}

type Found = HashMap<(String, String), (Instant, Said)>;

static FOUND: LazyLock<Mutex<Found>> = LazyLock::new(Mutex::default);

/// What `server` said about `model` in the last few minutes, else what `ask` finds
/// out now (then kept).
pub(crate) async fn remembered(server: &str, model: &str, ask: impl Future<Output = Said>) -> Said {
    let key = (server.to_owned(), model.to_owned());
    if let Some((at, said)) = lock().get(&key)
        && at.elapsed() < KEPT_FOR
    {
        return said.clone();
    }
    let said = ask.await;
    tracing::debug!(server, model, ?said, "what the server says of the model");
    lock().insert(key, (Instant::now(), said.clone()));
    said
}

/// What `server` last said about `model`, however long ago; `None` if never asked.
pub fn said(server: &str, model: &str) -> Option<Said> {
    lock()
        .get(&(server.to_owned(), model.to_owned()))
        .map(|(_, said)| said.clone())
}

/// Whether `server` said `model`'s chat template takes no tools, so that they go in
/// its prompt as text.
pub(crate) fn tools_in_text(server: &str, model: &str) -> bool {
    said(server, model).is_some_and(|said| said.tools_in_text)
}

/// Keeps what `server` said about `model` `age` ago, as if it had just been asked then.
pub fn remember(server: &str, model: &str, said: Said, age: Duration) {
    let at = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
    lock().insert((server.to_owned(), model.to_owned()), (at, said));
}

/// Keeps `window` as `model`'s on `server`, beside what else the server said: the
/// server showed its window to be that (see `ModelClient::learn_window`).
pub fn learn_window(server: &str, model: &str, window: ContextWindow) {
    let mut found = lock();
    let key = (server.to_owned(), model.to_owned());
    let mut said = found
        .get(&key)
        .map(|(_, said)| said.clone())
        .unwrap_or_default();
    said.window = Some(window);
    found.insert(key, (Instant::now(), said));
}

/// Forgets what `server` said about `model`: the next turn asks again.
pub fn forget(server: &str, model: &str) {
    lock().remove(&(server.to_owned(), model.to_owned()));
}

fn lock() -> std::sync::MutexGuard<'static, Found> {
    FOUND.lock().unwrap_or_else(PoisonError::into_inner)
}
