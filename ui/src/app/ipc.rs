//! Calls into the Rust core through Tauri's IPC, and channels for what it streams
//! back. `window.__TAURI__` is there because the app sets `withGlobalTauri`.

use cairn_protocol::desktop::commands::{Command, Streaming};
use cairn_protocol::desktop::{CommandError, CommandErrorKind};
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
    call_js(C::NAME, arguments(command)?).await
}

/// Calls a command that streams its messages on `channel`.
pub async fn call_streaming<C: Streaming>(
    command: &C,
    channel: &Channel,
) -> Result<C::Reply, CommandError> {
    let args = arguments(command)?;
    js_sys::Reflect::set(&args, &JsValue::from_str(C::CHANNEL), channel)
        .map_err(|_| problem("the message could not be handed to the app"))?;
    call_js(C::NAME, args).await
}

/// A command's arguments as the shell's handlers take them: `{"args": {...}}`.
fn arguments(command: &impl Serialize) -> Result<JsValue, CommandError> {
    #[derive(Serialize)]
    struct Wrapped<'a, T: Serialize> {
        args: &'a T,
    }
    to_js(&Wrapped { args: command })
}

async fn call_js<T: DeserializeOwned>(cmd: &str, args: JsValue) -> Result<T, CommandError> {
    match invoke_raw(cmd, args).await {
        Ok(value) => serde_wasm_bindgen::from_value(value).map_err(|err| {
            problem(&format!(
                "the app's answer to {cmd} could not be read: {err}"
            ))
        }),
        Err(err) => Err(serde_wasm_bindgen::from_value::<CommandError>(err.clone())
            .unwrap_or_else(|_| {
                problem(&err.as_string().unwrap_or_else(|| format!("{cmd} failed")))
            })),
    }
}

/// A channel whose messages go to `handler`. The handler lives as long as the
/// channel may speak, so it is leaked on purpose: handlers drop what they hold once
/// their stream ends.
pub fn channel<T: DeserializeOwned + 'static>(mut handler: impl FnMut(T) + 'static) -> Channel {
    let channel = Channel::new();
    let closure = Closure::<dyn FnMut(JsValue)>::new(move |value: JsValue| {
        match serde_wasm_bindgen::from_value::<T>(value) {
            Ok(message) => handler(message),
            Err(err) => {
                web_sys::console::warn_1(&format!("cairn: an unreadable message: {err}").into())
            }
        }
    });
    channel.set_onmessage(closure.as_ref().unchecked_ref());
    closure.forget();
    channel
}

fn to_js(args: &impl Serialize) -> Result<JsValue, CommandError> {
    // Plain objects, not Maps: Tauri reads arguments as JSON.
    args.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|err| problem(&format!("the request could not be written: {err}")))
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
