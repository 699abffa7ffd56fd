//! Calls into the Rust core through Tauri's IPC, and channels for what it streams
//! back. `window.__TAURI__` is there because the app sets `withGlobalTauri`.

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

/// Calls a command with arguments (a struct or map; its keys in camelCase).
pub async fn call<T: DeserializeOwned>(
    cmd: &str,
    args: &impl Serialize,
) -> Result<T, CommandError> {
    call_js(cmd, to_js(args)?).await
}

/// Calls a command that streams on `channel`, passed as the argument `name`.
pub async fn call_streaming<T: DeserializeOwned>(
    cmd: &str,
    args: &impl Serialize,
    name: &str,
    channel: &Channel,
) -> Result<T, CommandError> {
    let args = to_js(args)?;
    js_sys::Reflect::set(&args, &JsValue::from_str(name), channel)
        .map_err(|_| problem("the message could not be handed to the app"))?;
    call_js(cmd, args).await
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
