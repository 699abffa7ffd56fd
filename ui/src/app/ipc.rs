//! Calls into the Rust core through Tauri's IPC, and channels for what it streams
//! back. `window.__TAURI__` is there because the app sets `withGlobalTauri`.

use cairn_protocol::desktop::commands::{Command, Streaming};
use cairn_protocol::desktop::{CommandError, CommandErrorKind, ShellEvent};
use cairn_protocol::event::Event;
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(js_namespace = ["window", "__TAURI__", "core"])]
extern "C" {
    #[wasm_bindgen(js_name = invoke, catch)]
    async fn invoke_raw(cmd: &str, args: JsValue) -> Result<JsValue, JsValue>;

    /// A stream of messages from one command (`tauri::ipc::Channel` on the Rust side).
    pub type Channel;

    #[wasm_bindgen(constructor)]
    fn new() -> Channel;

    #[wasm_bindgen(method, setter, js_name = onmessage)]
    fn set_onmessage(this: &Channel, handler: &js_sys::Function);
}

/// Calls a command (defined in `cairn_protocol::desktop::commands`) and gives its reply.
pub async fn call<C: Command>(command: &C) -> Result<C::Reply, CommandError> {
    let reply = invoke(C::NAME, arguments(command)?).await?;
    read_reply(C::NAME, reply)
}

/// Calls a command that streams its messages on `channel`.
pub async fn call_streaming<C: Streaming>(
    command: &C,
    channel: &Channel,
) -> Result<C::Reply, CommandError> {
    let args = arguments(command)?;
    js_sys::Reflect::set(&args, &JsValue::from_str(C::CHANNEL), channel)
        .map_err(|_| problem("the message could not be handed to the app"))?;
    let reply = invoke(C::NAME, args).await?;
    read_reply(C::NAME, reply)
}

/// A command's arguments as the shell's handlers take them: `{"args": {...}}`.
///
/// Written as JSON text and parsed by the webview: serde's writer of JavaScript values,
/// compiled for every command, made the page's wasm 8 KB larger.
fn arguments(command: &impl Serialize) -> Result<JsValue, CommandError> {
    wrapped(serde_json::to_string(command))
}

/// The part of [`arguments`] that is the same for every command, compiled once (it was
/// a copy per command, 33 of them).
#[inline(never)]
fn wrapped(args: serde_json::Result<String>) -> Result<JsValue, CommandError> {
    let args = args.map_err(|err| problem(&format!("the request could not be written: {err}")))?;
    js_sys::JSON::parse(&format!(r#"{{"args":{args}}}"#))
        .map_err(|_| problem("the request could not be written"))
}

/// The shell's answer to `cmd`, or its failure. Not generic: waiting compiled once
/// instead of once per command's reply type took 10 KB off the page's wasm.
async fn invoke(cmd: &str, args: JsValue) -> Result<JsValue, CommandError> {
    invoke_raw(cmd, args).await.map_err(|err| {
        serde_wasm_bindgen::from_value::<CommandError>(err.clone()).unwrap_or_else(|_| {
            problem(&err.as_string().unwrap_or_else(|| format!("{cmd} failed")))
        })
    })
}

fn read_reply<T: DeserializeOwned>(cmd: &str, reply: JsValue) -> Result<T, CommandError> {
    serde_wasm_bindgen::from_value(reply).map_err(|err| unreadable(cmd, &err))
}

/// Compiled once rather than with every reply type's reader.
#[inline(never)]
fn unreadable(cmd: &str, err: &serde_wasm_bindgen::Error) -> CommandError {
    problem(&format!(
        "the app's answer to {cmd} could not be read: {err}"
    ))
}

/// A channel whose messages go to `handler`. The handler lives as long as the
/// channel may speak, so it is leaked on purpose: handlers drop what they hold once
/// their stream ends.
pub fn channel<T: DeserializeOwned + 'static>(handler: impl FnMut(T) + 'static) -> Channel {
    channel_reading(serde_wasm_bindgen::from_value::<T>, handler)
}

/// A channel of a turn's events: each read by its `type` (`Event::from_tagged`), not
/// through serde's buffering reader of tagged enums.
pub fn event_channel(handler: impl FnMut(Event) + 'static) -> Channel {
    tagged_channel(Event::from_tagged, handler)
}

/// The shell's own events, read by their tag as a turn's are.
pub fn shell_channel(handler: impl FnMut(ShellEvent) + 'static) -> Channel {
    tagged_channel(ShellEvent::from_tagged, handler)
}

/// A channel whose messages are read by `read` from their `type` (empty where they
/// have none, which no reader takes) and the message itself.
fn tagged_channel<T: 'static>(
    read: fn(&str, serde_wasm_bindgen::Deserializer) -> Result<T, serde_wasm_bindgen::Error>,
    handler: impl FnMut(T) + 'static,
) -> Channel {
    channel_reading(
        move |value| {
            let tag = js_sys::Reflect::get(&value, &JsValue::from_str("type"))
                .ok()
                .and_then(|tag| tag.as_string())
                .unwrap_or_default();
            read(&tag, serde_wasm_bindgen::Deserializer::from(value))
        },
        handler,
    )
}

fn channel_reading<T: 'static>(
    read: impl Fn(JsValue) -> Result<T, serde_wasm_bindgen::Error> + 'static,
    mut handler: impl FnMut(T) + 'static,
) -> Channel {
    let channel = Channel::new();
    let closure = Closure::<dyn FnMut(JsValue)>::new(move |value: JsValue| match read(value) {
        Ok(message) => handler(message),
        Err(err) => {
            web_sys::console::warn_1(&format!("cairn: an unreadable message: {err}").into())
        }
    });
    channel.set_onmessage(closure.as_ref().unchecked_ref());
    closure.forget();
    channel
}

fn problem(message: &str) -> CommandError {
    CommandError {
        message: message.to_owned(),
        kind: CommandErrorKind::Invalid,
    }
}

/// Numbers the questions a view asks the core, so that of answers coming back out of
/// order only the latest question's is used (and none once the view is gone).
#[derive(Debug, Clone, Copy)]
pub struct Latest(leptos::prelude::StoredValue<u64>);

impl Latest {
    pub fn new() -> Self {
        Self(leptos::prelude::StoredValue::new(0))
    }

    /// A new question's number: every question asked before it is now stale.
    pub fn ask(self) -> u64 {
        use leptos::prelude::{GetValue, UpdateValue};
        self.0.update_value(|n| *n += 1);
        self.0.get_value()
    }

    /// Whether the question numbered `asked` is still the latest.
    pub fn is_latest(self, asked: u64) -> bool {
        use leptos::prelude::GetValue;
        self.0.try_get_value() == Some(asked)
    }
}
