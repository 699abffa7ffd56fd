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
    /// The server refused the request as larger than the model's window, with what it
    /// counted and the window it has where it says (llama.cpp's `n_prompt_tokens` and
    /// `n_ctx`; Ollama's "request (N tokens) exceeds the available context size (M
    /// tokens)").
    #[error("{server} answered HTTP {status}: {message}")]
    TooLong {
        server: String,
        status: u16,
        message: String,
        counted: Option<u64>,
        window: Option<u32>,
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
        self.overflow().is_some()
    }

    /// What the server said of a request it refused as larger than the model's
    /// window; `None` for any other failure.
    pub fn overflow(&self) -> Option<Overflow> {
        let said = match self {
            Self::TooLong {
                counted, window, ..
            } => {
                return Some(Overflow {
                    counted: *counted,
                    window: *window,
                });
            }
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
        };
        said.then_some(Overflow {
            counted: None,
            window: None,
        })
    }
}

/// A request refused as larger than the model's window: the server's count of its
/// tokens and the window it has, where it said them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    pub counted: Option<u64>,
    pub window: Option<u32>,
}

/// Whether an error message says the request is larger than the model's context:
/// llama.cpp ("exceeds the available context size"), vLLM, LM Studio, Ollama and
/// hosted APIs ("maximum context length") each say so in their own words.
pub fn says_context_overflow(message: &str) -> bool {
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
        assert_eq!(
            http(400, "context_length_exceeded").overflow(),
            Some(Overflow {
                counted: None,
                window: None
            }),
            "words alone say no sizes"
        );
        let refused = ProviderError::TooLong {
            server: "s".into(),
            status: 400,
            message: "request (8889 tokens) exceeds the available context size (4096 tokens)"
                .into(),
            counted: Some(8889),
            window: Some(4096),
        };
        assert_eq!(
            refused.overflow(),
            Some(Overflow {
                counted: Some(8889),
                window: Some(4096)
            })
        );
        assert_eq!(
            refused.to_string(),
            "s answered HTTP 400: request (8889 tokens) exceeds the available context size (4096 tokens)"
        );
        assert!(!http(400, "unknown field `tools`").is_context_overflow());
    }
}
