/// A model call that failed. Every message names the server and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("`{url}` is not a usable server address: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("could not connect to {server}: {detail}. {hint}")]
    Unreachable {
        server: String,
        detail: String,
        hint: String,
    },
    #[error("{server} has no model `{model}`{}. {hint}", available_list(.available))]
    UnknownModel {
        server: String,
        model: String,
        available: Vec<String>,
        hint: String,
    },
    #[error("{server} answered HTTP {status}: {message}")]
    Http {
        server: String,
        status: u16,
        message: String,
    },
    #[error("{server} reported an error mid-answer: {message}")]
    Server { server: String, message: String },
    #[error("the stream from {server} broke off: {detail}")]
    StreamCut { server: String, detail: String },
    #[error("{server} sent nothing for {seconds} s; giving up on this answer")]
    Stalled { server: String, seconds: u64 },
    #[error("{server} sent a response Cairn cannot read: {detail}")]
    Protocol { server: String, detail: String },
}

fn available_list(available: &[String]) -> String {
    if available.is_empty() {
        "; it has no models at all".to_owned()
    } else {
        format!("; it has: {}", available.join(", "))
    }
}
