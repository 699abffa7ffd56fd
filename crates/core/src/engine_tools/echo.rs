//! An engine tool added the way any is, to prove that is all it takes: this module,
//! and one line in the registry. Offered nowhere, so only a model that names it calls
//! it, and no other test sees it.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use cairn_protocol::{ChatMessage, Event, PermissionMode, ToolCall};

use super::{CallFailure, EngineCall, EngineTool, NotHere, Place, Success, TurnServices};
use crate::disclosure::Offer;
use crate::model::{ChatRequest, FinishReason, ModelClient, ModelEvent, ModelStream, Sampling};
use crate::{Engine, Limits, Toolbelt, TurnControl, TurnRequest};

pub(crate) const ECHO: &str = "echo_engine";

/// Answers with its `text` and the depth it was called at.
pub(crate) struct Echo;

#[async_trait]
impl EngineTool for Echo {
    fn names(&self) -> &'static [&'static str] {
        &[ECHO]
    }

    fn offer(&self, _place: &Place<'_>) -> Option<Offer> {
        None
    }

    fn resolve(&self, _place: &Place<'_>, name: &str) -> Option<Result<(), NotHere>> {
        (name == ECHO).then_some(Ok(()))
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    async fn run(
        &self,
        _turn: &dyn TurnServices,
        call: EngineCall<'_>,
    ) -> Result<Success, CallFailure> {
        let text = call.args["text"].as_str().unwrap_or_default();
        Ok(Success::text(format!(
            "echo at depth {}: {text}",
            call.place.depth
        )))
    }
}

/// Asks for `echo_engine` in its first round, then answers with what it read.
struct CallsEcho;

impl ModelClient for CallsEcho {
    fn stream_chat(&self, request: ChatRequest) -> ModelStream {
        let answered = request.messages.iter().find_map(|message| match message {
            ChatMessage::Tool { content, .. } => Some(content.clone()),
            _ => None,
        });
        let events = match answered {
            None => vec![
                Ok(ModelEvent::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: ECHO.into(),
                    arguments: r#"{"text": "hi"}"#.into(),
                    written: None,
                })),
                Ok(ModelEvent::Finished(FinishReason::ToolCalls)),
            ],
            Some(result) => vec![
                Ok(ModelEvent::Text(format!("it said: {result}"))),
                Ok(ModelEvent::Finished(FinishReason::Stop)),
            ],
        };
        Box::pin(futures_util::stream::iter(events))
    }
}

#[tokio::test]
async fn a_registered_engine_tool_is_resolved_gated_and_run_by_the_loop() {
    let engine = Engine::new(Arc::new(CallsEcho), Limits::default());
    let Ok(tools) = Toolbelt::new([]) else {
        panic!("an empty toolbelt is a toolbelt");
    };
    let request = TurnRequest {
        thread_id: "t".into(),
        message_id: "m".into(),
        model: "m".into(),
        history: vec![ChatMessage::user("echo hi")],
        // An engine tool reads: it runs even where nothing else may.
        mode: PermissionMode::Plan,
        tools,
        workspace: None,
        sampling: Sampling::default(),
        rules: Arc::default(),
        instructions: None,
        agents: Default::default(),
        plans: None,
        load_tools: Vec::new(),
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let sink = Arc::new(move |event: Event| {
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    });
    let outcome = engine.run_turn(request, TurnControl::default(), sink).await;
    assert_eq!(outcome.text, "it said: echo at depth 0: hi");
    let events = events.lock().unwrap_or_else(PoisonError::into_inner);
    let ended = events.iter().any(|event| {
        matches!(event, Event::ToolCallUpdate(update)
            if update.name == ECHO && update.is_error == Some(false))
    });
    assert!(ended, "its card ends without an error: {events:?}");
    let subject = events.iter().find_map(|event| match event {
        Event::ToolCallUpdate(update) if update.name == ECHO => Some(update.subject.clone()),
        _ => None,
    });
    assert_eq!(
        subject,
        Some(Some("hi".to_owned())),
        "it says what it acts on"
    );
}
