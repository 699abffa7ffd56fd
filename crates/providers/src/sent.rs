//! A request as it goes to a server: shaped by what the server said of the model
//! ([`crate::windows`]) and what Cairn learned of it ([`crate::habits`]), or, for a
//! level's last word, as every model answers from.

use cairn_core::model::ChatRequest;

use crate::framing::{self, Ask};
use crate::habits::{self, Results};

/// `request` as it goes to `server`: its tools described in its prompt when the
/// server said the model's template takes none; its calls and results in words when
/// Cairn found the model answers from them only that way; folded and asked only for
/// an answer when it is a level's last word.
pub(crate) fn as_sent(server: &str, mut request: ChatRequest) -> ChatRequest {
    if request.answer_only {
        // Whatever the model's habit: shown its calls again, a stuck model writes
        // them again, and it is offered nothing to call.
        request.messages = framing::folded(std::mem::take(&mut request.messages), Ask::AnswerOnly);
        return request;
    }
    if !request.tools.is_empty() && crate::windows::tools_in_text(server, &request.model) {
        return crate::prompt_tools::rewrite(request);
    }
    match habits::results(server, &request.model) {
        Results::Native => {}
        Results::Restated(restate) => {
            request.messages = framing::in_words(
                std::mem::take(&mut request.messages),
                &framing::restated(restate),
            );
        }
        Results::Folded => {
            request.messages =
                framing::folded(std::mem::take(&mut request.messages), Ask::AnswerOrCall);
        }
    }
    request
}
