//! Reading a prompt ahead: a request sent before the question exists so that a local
//! server has the fixed prompt (instructions, tools, the thread so far) in its cache
//! when the question comes. Only for servers that said their window: every route that
//! answers it is a server the user runs (llama.cpp, vLLM, LM Studio, Ollama), whose
//! cache costs nothing; a hosted API says nothing and is never sent one.

use std::sync::Arc;

use futures_util::StreamExt;

use crate::windows;
use cairn_core::model::{ChatRequest, ModelStream};

/// One token: the least every server takes (vLLM refuses 0) and next to nothing to
/// write.
const ANSWER_TOKENS: u32 = 1;

/// Whether `server` keeps `model`'s prompts for free, as far as it has said.
pub(crate) fn keeps_prefix(server: &str, model: &str) -> bool {
    windows::said(server, model).is_some_and(|said| said.window.is_some())
}

/// `request` as a warm-up sends it: the same prompt, an answer of one token.
pub(crate) fn request(mut request: ChatRequest) -> Arc<ChatRequest> {
    request.sampling.max_tokens = Some(ANSWER_TOKENS);
    Arc::new(request)
}

/// Reads a warm-up's answer to its end; what goes wrong is only logged.
pub(crate) async fn drain(server: &str, mut answer: ModelStream) {
    while let Some(item) = answer.next().await {
        if let Err(err) = item {
            tracing::debug!(%server, error = %err, "reading the prompt ahead failed");
            return;
        }
    }
    tracing::debug!(%server, "the prompt was read ahead");
}
