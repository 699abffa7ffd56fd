//! Context windows found, shared by every client in the process. Front ends make a
//! client per turn, and a server that says nothing (a hosted API) would otherwise be
//! asked its three questions again before every turn, each a round trip the user
//! waits for. Kept a few minutes: a local model can be loaded again at another size.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::model::ContextWindow;

const KEPT_FOR: Duration = Duration::from_secs(300);

type Found = HashMap<(String, String), (Instant, Option<ContextWindow>)>;

static FOUND: LazyLock<Mutex<Found>> = LazyLock::new(Mutex::default);

/// What `server` said about `model` lately: `Some(None)` when it said nothing.
pub(crate) fn known(server: &str, model: &str) -> Option<Option<ContextWindow>> {
    let found = FOUND.lock().unwrap_or_else(PoisonError::into_inner);
    let (at, window) = found.get(&(server.to_owned(), model.to_owned()))?;
    (at.elapsed() < KEPT_FOR).then(|| window.clone())
}

pub(crate) fn remember(server: &str, model: &str, window: Option<ContextWindow>) {
    FOUND.lock().unwrap_or_else(PoisonError::into_inner).insert(
        (server.to_owned(), model.to_owned()),
        (Instant::now(), window),
    );
}
