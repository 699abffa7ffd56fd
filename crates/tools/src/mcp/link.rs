//! One live connection to a server, whichever way it is reached, and the ways a call
//! over it can end.

use serde_json::Value;

use super::http::HttpLink;
use super::stdio::StdioLink;
pub use super::wire::Broken;
use super::wire::Outcome;

/// A live connection.
#[derive(Debug)]
pub enum Link {
    Stdio(StdioLink),
    Http(Box<HttpLink>),
}

impl Link {
    /// Sends request `id` and waits for its outcome. Dropping the future gives the
    /// request up (its late answer is ignored).
    pub async fn request(&self, id: u64, method: &str, params: Value) -> Result<Outcome, Broken> {
        match self {
            Self::Stdio(link) => link.request(id, method, params).await,
            Self::Http(link) => link.request(id, method, params).await,
        }
    }

    /// Sends a notification, best effort.
    pub fn notify(&self, message: Value) {
        match self {
            Self::Stdio(link) => link.notify(message),
            Self::Http(link) => link.notify(message),
        }
    }

    /// Why it broke, once it has.
    pub fn broken(&self) -> Option<Broken> {
        match self {
            Self::Stdio(link) => link.broken(),
            Self::Http(link) => link.broken(),
        }
    }
}
