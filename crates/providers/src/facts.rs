//! What a server says of itself: which kind of server it is, how many requests it
//! serves at once, and the window it runs with where one window serves every request
//! (llama.cpp's server runs one model). Asked when a named server is listed, and once
//! per server before Cairn sends it requests side by side.

use serde::Serialize;
use serde_json::Value;

/// A server's kind and what it said of its capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerFacts {
    pub kind: ServerKind,
    /// Requests it serves at once, where it says (llama.cpp: `total_slots`).
    pub slots: Option<u32>,
    /// Its context window, where it has one for every request (llama.cpp: `n_ctx`).
    pub window: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    Ollama,
    LlamaCpp,
    Vllm,
    LmStudio,
    /// An OpenAI-compatible API that says nothing more of itself (a hosted one).
    OpenaiCompatible,
}

impl ServerKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Ollama => "Ollama",
            Self::LlamaCpp => "llama.cpp server",
            Self::Vllm => "vLLM",
            Self::LmStudio => "LM Studio",
            Self::OpenaiCompatible => "OpenAI-compatible",
        }
    }

    /// The requests it is sent at once when neither it nor the user says: one for
    /// the servers that run a model on the user's own GPU and queue the rest anyway
    /// (Ollama's `OLLAMA_NUM_PARALLEL` and llama.cpp's `--parallel` start low), four
    /// for servers built to batch (vLLM) and hosted APIs.
    pub fn default_slots(self) -> u32 {
        match self {
            Self::Ollama | Self::LlamaCpp | Self::LmStudio => 1,
            Self::Vllm | Self::OpenaiCompatible => 4,
        }
    }
}

/// An OpenAI-compatible server's facts from what its own routes answered: llama.cpp's
/// `GET /props`, vLLM's `GET /version`, and whether LM Studio's `GET /api/v0/models`
/// answered at all.
pub(crate) fn read_openai(
    props: Option<&Value>,
    version: Option<&Value>,
    lm_studio: bool,
) -> ServerFacts {
    let positive = |value: &Value| {
        value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0)
    };
    if let Some(props) = props.filter(|props| props.get("total_slots").is_some()) {
        return ServerFacts {
            kind: ServerKind::LlamaCpp,
            slots: props.get("total_slots").and_then(positive),
            window: props
                .get("default_generation_settings")
                .and_then(|settings| settings.get("n_ctx"))
                .or_else(|| props.get("n_ctx"))
                .and_then(positive),
        };
    }
    let kind = if lm_studio {
        ServerKind::LmStudio
    } else if version.and_then(|v| v.get("version")).is_some() {
        ServerKind::Vllm
    } else {
        ServerKind::OpenaiCompatible
    };
    ServerFacts {
        kind,
        slots: None,
        window: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_is_known_by_what_it_answers() {
        let llama = json!({"total_slots": 4, "default_generation_settings": {"n_ctx": 4096}});
        assert_eq!(
            read_openai(Some(&llama), None, false),
            ServerFacts {
                kind: ServerKind::LlamaCpp,
                slots: Some(4),
                window: Some(4096),
            }
        );
        let vllm = json!({"version": "0.6.3"});
        assert_eq!(read_openai(None, Some(&vllm), false).kind, ServerKind::Vllm);
        assert_eq!(read_openai(None, None, true).kind, ServerKind::LmStudio);
        let hosted = read_openai(None, None, false);
        assert_eq!(hosted.kind, ServerKind::OpenaiCompatible);
        assert_eq!(hosted.slots, None);
        // A `/props` of some other server, without slots, says nothing of llama.cpp.
        let other = json!({"n_ctx": 8192});
        assert_eq!(
            read_openai(Some(&other), None, false).kind,
            ServerKind::OpenaiCompatible
        );
    }

    #[test]
    fn local_gpu_servers_default_to_one_request_at_a_time() {
        assert_eq!(ServerKind::Ollama.default_slots(), 1);
        assert_eq!(ServerKind::LlamaCpp.default_slots(), 1);
        assert_eq!(ServerKind::Vllm.default_slots(), 4);
        assert_eq!(ServerKind::OpenaiCompatible.default_slots(), 4);
    }
}
