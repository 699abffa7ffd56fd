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

impl ProviderError {
    /// Whether the server refused the request as larger than the model's context:
    /// llama.cpp ("exceeds the available context size"), vLLM, LM Studio and hosted
    /// APIs ("maximum context length") each say so in their own words. The window
    /// Cairn fitted the request to was wrong, or has changed.
    pub fn is_context_overflow(&self) -> bool {
        match self {
            Self::Http {
                status, message, ..
            } => matches!(status, 400 | 413) && says_context_overflow(message),
            Self::Server { message, .. } => says_context_overflow(message),
            Self::BadUrl { .. }
            | Self::Unreachable { .. }
            | Self::UnknownModel { .. }
            | Self::StreamCut { .. }
            | Self::Stalled { .. }
            | Self::Protocol { .. } => false,
        }
    }
}

fn says_context_overflow(message: &str) -> bool {
    let message = message.to_lowercase();
    [
        "context size",
        "context length",
        "context_length",
        "context window",
    ]
    .iter()
    .any(|words| message.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_servers_words_for_a_request_too_large_are_read() {
        let http = |status, message: &str| ProviderError::Http {
            server: "s".into(),
            status,
            message: message.into(),
        };
        for message in [
            "the request exceeds the available context size, try increasing it",
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
            "Trying to keep the first 5012 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens",
            "context_length_exceeded",
        ] {
            assert!(http(400, message).is_context_overflow(), "{message}");
        }
        assert!(!http(500, "context size").is_context_overflow());
        assert!(!http(400, "unknown field `tools`").is_context_overflow());
    }
}
