//! Stream adapters shared by the dialects: small-model repairs applied to a model's
//! answer as it streams.

use std::collections::VecDeque;

use futures_util::{StreamExt, stream};

use crate::textcalls::{TextCalls, narrates_call};
use cairn_core::model::ProviderError;
use cairn_core::model::{FinishReason, ModelEvent, ModelStream};

type Item = Result<ModelEvent, ProviderError>;

/// Turns tool calls written as text into real calls (see [`TextCalls`]).
pub(crate) fn text_calls(inner: ModelStream, known: Vec<String>) -> ModelStream {
    if known.is_empty() {
        return inner;
    }
    struct State {
        inner: ModelStream,
        detector: Option<TextCalls>,
        native: bool,
        /// The model streams calls of its own: a text call's draft could take the
        /// slot of one of them.
        native_drafts: bool,
        queue: VecDeque<Item>,
        over: bool,
    }
    impl State {
        /// Releases what the detector holds; converts it only on a clean end.
        fn flush(&mut self, clean: bool, reason: Option<FinishReason>) {
            let Some(detector) = self.detector.take() else {
                return;
            };
            let (text, calls) = detector.finish(self.native || !clean);
            if !text.is_empty() {
                self.queue.push_back(Ok(ModelEvent::Text(text)));
            }
            let converted = !calls.is_empty();
            if converted {
                tracing::debug!(
                    calls = calls.len(),
                    "tool calls written as text were converted"
                );
            }
            self.queue
                .extend(calls.into_iter().map(|call| Ok(ModelEvent::ToolCall(call))));
            if let Some(reason) = reason {
                let reason = if converted {
                    FinishReason::ToolCalls
                } else {
                    reason
                };
                self.queue.push_back(Ok(ModelEvent::Finished(reason)));
            }
        }
    }
    let state = State {
        inner,
        detector: Some(TextCalls::new(known)),
        native: false,
        native_drafts: false,
        queue: VecDeque::new(),
        over: false,
    };
    Box::pin(stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.over {
                return None;
            }
            match state.inner.next().await {
                Some(Ok(ModelEvent::Text(delta))) => match state.detector.as_mut() {
                    Some(detector) => {
                        let shown = detector.push(&delta);
                        if !shown.is_empty() {
                            state.queue.push_back(Ok(ModelEvent::Text(shown)));
                        }
                        if let Some(draft) = detector.draft().filter(|_| !state.native_drafts) {
                            state.queue.push_back(Ok(ModelEvent::ToolCallDraft {
                                slot: draft.slot,
                                id: String::new(),
                                name: draft.name,
                                arguments: draft.arguments,
                            }));
                        }
                    }
                    None => state.queue.push_back(Ok(ModelEvent::Text(delta))),
                },
                Some(Ok(ModelEvent::ToolCall(call))) => {
                    state.native = true;
                    state.queue.push_back(Ok(ModelEvent::ToolCall(call)));
                }
                Some(Ok(draft @ ModelEvent::ToolCallDraft { .. })) => {
                    state.native_drafts = true;
                    state.queue.push_back(Ok(draft));
                }
                Some(Ok(ModelEvent::Finished(reason))) => state.flush(true, Some(reason)),
                Some(Ok(other)) => state.queue.push_back(Ok(other)),
                Some(Err(err)) => {
                    // A call cut off mid-text is not run: what arrived stays text.
                    state.flush(false, None);
                    state.queue.push_back(Err(err));
                    state.over = true;
                }
                None => {
                    state.flush(true, None);
                    state.over = true;
                }
            }
        }
    }))
}

/// When an answer announces a tool call it did not make, asks once more with the
/// call required (`retry`); a conversational answer passes unchanged.
pub(crate) fn forced_retry(
    first: ModelStream,
    known: Vec<String>,
    retry: impl FnOnce() -> ModelStream + Send + 'static,
) -> ModelStream {
    if known.is_empty() {
        return first;
    }
    enum Phase<R> {
        First {
            stream: ModelStream,
            text: String,
            called: bool,
            retry: R,
        },
        Second(ModelStream),
    }
    Box::pin(stream::unfold(
        Some(Phase::First {
            stream: first,
            text: String::new(),
            called: false,
            retry,
        }),
        move |phase| {
            let known = known.clone();
            async move {
                let mut phase = phase?;
                loop {
                    match phase {
                        Phase::Second(mut stream) => {
                            let item = stream.next().await?;
                            return Some((item, Some(Phase::Second(stream))));
                        }
                        Phase::First {
                            mut stream,
                            mut text,
                            mut called,
                            retry,
                        } => {
                            let item = stream.next().await?;
                            match &item {
                                Ok(ModelEvent::Text(delta)) => text.push_str(delta),
                                Ok(ModelEvent::ToolCall(_)) => called = true,
                                Ok(ModelEvent::Finished(_))
                                    if !called && narrates_call(&text, &known) =>
                                {
                                    tracing::info!(
                                        "the model described a tool call without making it; asking again with a call required"
                                    );
                                    phase = Phase::Second(retry());
                                    continue;
                                }
                                Err(_) => return Some((item, None)),
                                Ok(_) => {}
                            }
                            return Some((
                                item,
                                Some(Phase::First {
                                    stream,
                                    text,
                                    called,
                                    retry,
                                }),
                            ));
                        }
                    }
                }
            }
        },
    ))
}
