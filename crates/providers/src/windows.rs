//! Context windows found, shared by every client in the process. Front ends make a
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

type Found = HashMap<(String, String), (Instant, Option<ContextWindow>)>;

static FOUND: LazyLock<Mutex<Found>> = LazyLock::new(Mutex::default);

/// What `server` said about `model` in the last few minutes, else what `ask` finds
/// out now (then kept).
pub(crate) async fn remembered(
    server: &str,
    model: &str,
    ask: impl Future<Output = Option<ContextWindow>>,
) -> Option<ContextWindow> {
    let key = (server.to_owned(), model.to_owned());
    if let Some((at, window)) = lock().get(&key)
        && at.elapsed() < KEPT_FOR
    {
        return window.clone();
    }
    let window = ask.await;
    tracing::debug!(server, model, ?window, "context window");
    lock().insert(key, (Instant::now(), window.clone()));
    window
}

/// Keeps what `server` said about `model` `age` ago, as if it had just been asked then.
pub fn remember(server: &str, model: &str, window: Option<ContextWindow>, age: Duration) {
    let at = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
    lock().insert((server.to_owned(), model.to_owned()), (at, window));
}

/// Forgets what `server` said about `model`: the next turn asks again.
pub fn forget(server: &str, model: &str) {
    lock().remove(&(server.to_owned(), model.to_owned()));
}

fn lock() -> std::sync::MutexGuard<'static, Found> {
    FOUND.lock().unwrap_or_else(PoisonError::into_inner)
}
