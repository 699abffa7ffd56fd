//! Images tools returned, shown to the model. Chat APIs take images only from the
//! user, so after a round's tool results comes one user message holding the images
//! those results named. Only the last round's images go: the model has answered the
//! earlier ones, and an image costs hundreds of tokens a context of 4,096 cannot
//! spare on every request (the results' text still names each one). A model that
//! cannot read images makes its server refuse the
//! request: the refusal is learned (for the process, per server and model) and the
//! request is sent again without them; the results' text still names each image.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

use cairn_protocol::{ChatMessage, Image};

use crate::ProviderError;

static REFUSED: LazyLock<Mutex<HashSet<(String, String)>>> = LazyLock::new(Mutex::default);

/// Whether this request should carry its images to `model` on `server`.
pub(crate) fn wanted(server: &str, model: &str, messages: &[ChatMessage]) -> bool {
    let any = last_round(messages)
        .iter()
        .any(|message| matches!(message, ChatMessage::Tool { images, .. } if !images.is_empty()));
    any && !lock().contains(&(server.to_owned(), model.to_owned()))
}

/// Whether `error`, from a request that carried images, is the server saying the
/// model cannot take them (vLLM: "not a multimodal model"; llama.cpp: "image input is
/// not supported"; LM Studio and Ollama: "does not support images"/"vision"). If so,
/// it is remembered.
pub(crate) fn refused(server: &str, model: &str, error: &ProviderError) -> bool {
    let ProviderError::Http {
        status, message, ..
    } = error
    else {
        return false;
    };
    let message = message.to_ascii_lowercase();
    let about_images = ["image", "vision", "multimodal", "multi-modal"]
        .iter()
        .any(|word| message.contains(word));
    let refused = matches!(status, 400 | 422 | 500) && about_images;
    if refused {
        tracing::info!(
            server,
            model,
            "the model does not read images; sending their names only"
        );
        lock().insert((server.to_owned(), model.to_owned()));
    }
    refused
}

fn lock() -> std::sync::MutexGuard<'static, HashSet<(String, String)>> {
    REFUSED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tool results the conversation ends with: the round the model has not seen.
fn last_round(messages: &[ChatMessage]) -> &[ChatMessage] {
    let start = messages
        .iter()
        .rposition(|message| !matches!(message, ChatMessage::Tool { .. }))
        .map_or(0, |at| at + 1);
    &messages[start..]
}

/// `messages` in a dialect's wire shape (`wire` for each), then, when `with_images`
/// and the last round's results returned images, `shown(text, images)`.
pub(crate) fn interleave<'a, W>(
    messages: &'a [ChatMessage],
    with_images: bool,
    wire: impl Fn(&'a ChatMessage) -> W,
    shown: impl Fn(String, Vec<&'a Image>) -> W,
) -> Vec<W> {
    let mut out: Vec<W> = messages.iter().map(wire).collect();
    if !with_images {
        return out;
    }
    let mut all: Vec<&'a Image> = Vec::new();
    let mut named: Vec<String> = Vec::new();
    for message in last_round(messages) {
        if let ChatMessage::Tool { name, images, .. } = message
            && !images.is_empty()
        {
            let first = all.len() + 1;
            all.extend(images);
            named.push(match images.len() {
                1 => format!("image {first} from `{name}`"),
                n => format!("images {first}–{} from `{name}`", first + n - 1),
            });
        }
    }
    if !all.is_empty() {
        let text = format!(
            "The tool results above returned these images ({}).",
            named.join(", ")
        );
        out.push(shown(text, all));
    }
    out
}

#[cfg(test)]
mod tests {
    use cairn_protocol::{ChatMessage, Image};

    use super::interleave;

    fn result(id: &str, images: usize) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            name: format!("tool_{id}"),
            content: String::new(),
            is_error: false,
            images: (0..images)
                .map(|n| Image {
                    mime_type: "image/png".into(),
                    data: format!("{id}-{n}"),
                })
                .collect(),
        }
    }

    fn shown(messages: &[ChatMessage]) -> Vec<String> {
        interleave(
            messages,
            true,
            |message| message.role().to_owned(),
            |text, images| {
                let data: Vec<&str> = images.iter().map(|i| i.data.as_str()).collect();
                format!("{text} {}", data.join(" "))
            },
        )
    }

    #[test]
    fn only_the_last_rounds_images_follow_it_numbered_in_order() {
        let messages = [
            ChatMessage::user("q"),
            ChatMessage::assistant(""),
            result("a", 1),
            ChatMessage::assistant(""),
            result("b", 2),
            result("c", 0),
            result("d", 1),
        ];
        assert_eq!(
            shown(&messages),
            [
                "user",
                "assistant",
                "tool",
                "assistant",
                "tool",
                "tool",
                "tool",
                "The tool results above returned these images (images 1–2 from `tool_b`, \
                 image 3 from `tool_d`). b-0 b-1 d-0"
            ]
        );
        // Once the model has answered, the round's images are not sent again.
        let answered = [&messages[..], &[ChatMessage::assistant("seen")]].concat();
        assert_eq!(shown(&answered).len(), answered.len());
    }
}
