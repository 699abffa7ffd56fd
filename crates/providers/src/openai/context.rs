//! The context window of a model behind an OpenAI-compatible API. The API itself has
//! no field for it, so each local server is asked the way it answers:
//!
//! vLLM and llama.cpp's server: the model's entry in `GET /v1/models` (`max_model_len`,
//! `meta.n_ctx`) → older llama.cpp builds: `n_ctx` in `GET /props` → LM Studio: the model in `GET /api/v0/models`
//! (`loaded_context_length` when loaded, else `max_context_length`). All are asked at
//! once; the first in this order that answers wins; a server that answers none of them
//! (a hosted API) leaves it unknown. llama.cpp's `/props` also says whether the model's
//! chat template takes tools (`chat_template_caps.supports_tools`): one that does not
//! gets them described in its prompt.

use std::time::Duration;

use serde_json::Value;

use cairn_core::model::ContextWindow;

/// How long one probe may take: a turn waits for the answer before its first round.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The routes asked, in order, and how each answer is read.
pub(super) const PROBES: [(&str, Reader); 3] = [
    ("/v1/models", listed),
    ("/props", llama_cpp),
    ("/api/v0/models", lm_studio),
];

pub(super) type Reader = fn(&Value, &str) -> Option<ContextWindow>;

/// vLLM lists `max_model_len` with each model it serves; llama.cpp's server lists
/// the context it runs with as `meta.n_ctx`.
fn listed(models: &Value, model: &str) -> Option<ContextWindow> {
    if let Some(tokens) = entry(models, model)
        .and_then(|entry| entry.get("max_model_len"))
        .and_then(positive)
    {
        return Some(ContextWindow::new(tokens, "vLLM's max_model_len"));
    }
    let tokens = llama_cpp_meta(models, model)?
        .get("n_ctx")
        .and_then(positive)?;
    Some(ContextWindow::new(tokens, "llama.cpp server's n_ctx"))
}

/// llama.cpp's server serves one model; its slots share `n_ctx`, reported in the
/// default generation settings (older builds put it at the top level).
fn llama_cpp(props: &Value, _model: &str) -> Option<ContextWindow> {
    let tokens = props
        .get("default_generation_settings")
        .and_then(|settings| settings.get("n_ctx"))
        .or_else(|| props.get("n_ctx"))?;
    Some(ContextWindow::new(
        positive(tokens)?,
        "llama.cpp server's n_ctx",
    ))
}

/// Whether llama.cpp's chat template for its model renders tools, when `/props` says.
/// A template that does not ("Content-only") leaves a request's tools out without a
/// word.
pub(super) fn template_takes_tools(props: &Value) -> Option<bool> {
    props
        .get("chat_template_caps")?
        .get("supports_tools")?
        .as_bool()
}

/// The model's parameter count, where llama.cpp's server lists it (`meta.n_params`).
pub(super) fn params(models: &Value, model: &str) -> Option<u64> {
    llama_cpp_meta(models, model)?
        .get("n_params")?
        .as_u64()
        .filter(|&n| n > 0)
}

/// What llama.cpp's server says of the model a request for `model` gets (`meta` in
/// its `/v1/models` entry). A server started on one model answers whatever name a
/// request gives (users type any, or keep a client's default), so where it lists one
/// model, that one is it.
fn llama_cpp_meta<'a>(models: &'a Value, model: &str) -> Option<&'a Value> {
    let served = match entry(models, model) {
        Some(entry) => entry,
        None => match models.get("data")?.as_array()?.as_slice() {
            [only] => only,
            _ => return None,
        },
    };
    served.get("meta")
}

/// LM Studio knows both the context a model was loaded with and the most it takes.
fn lm_studio(models: &Value, model: &str) -> Option<ContextWindow> {
    let entry = entry(models, model)?;
    if let Some(tokens) = entry.get("loaded_context_length").and_then(positive) {
        return Some(ContextWindow::new(tokens, "LM Studio, as loaded"));
    }
    let tokens = entry.get("max_context_length").and_then(positive)?;
    Some(ContextWindow::new(tokens, "LM Studio, the model's maximum"))
}

/// The entry for `model` in an OpenAI-style list (`{"data": [{"id": …}, …]}`).
fn entry<'a>(list: &'a Value, model: &str) -> Option<&'a Value> {
    list.get("data")?
        .as_array()?
        .iter()
        .find(|entry| entry.get("id").and_then(Value::as_str) == Some(model))
}

fn positive(value: &Value) -> Option<u32> {
    value
        .as_u64()
        .and_then(|tokens| u32::try_from(tokens).ok())
        .filter(|&tokens| tokens > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(route: &str, body: &Value, model: &str) -> Option<u32> {
        let (_, reader) = PROBES.iter().find(|(path, _)| *path == route)?;
        reader(body, model).map(|window| window.tokens)
    }

    #[test]
    fn each_server_is_read_where_it_says_it() {
        let vllm = json!({"object": "list", "data": [
            {"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "max_model_len": 16384}
        ]});
        assert_eq!(read("/v1/models", &vllm, "Qwen/Qwen3-8B"), Some(16384));
        assert_eq!(read("/v1/models", &vllm, "other"), None);

        let listed =
            json!({"data": [{"id": "q", "meta": {"n_ctx": 16384, "n_ctx_train": 262144}}]});
        assert_eq!(
            read("/v1/models", &listed, "q"),
            Some(16384),
            "the context it runs with"
        );

        let llama = json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1});
        assert_eq!(read("/props", &llama, "anything"), Some(4096));
        assert_eq!(read("/props", &json!({"n_ctx": 8192}), "x"), Some(8192));

        let lm_studio = json!({"object": "list", "data": [
            {"id": "qwen3-4b", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 4096},
            {"id": "gemma-3", "state": "not-loaded", "max_context_length": 131072}
        ]});
        assert_eq!(read("/api/v0/models", &lm_studio, "qwen3-4b"), Some(4096));
        assert_eq!(read("/api/v0/models", &lm_studio, "gemma-3"), Some(131072));
    }

    #[test]
    fn llama_cpp_says_whether_its_template_takes_tools() {
        let caps = |supports: bool| json!({"chat_template_caps": {"supports_tools": supports, "supports_tool_calls": supports}});
        assert_eq!(template_takes_tools(&caps(false)), Some(false));
        assert_eq!(template_takes_tools(&caps(true)), Some(true));
        assert_eq!(
            template_takes_tools(&json!({"total_slots": 4})),
            None,
            "an older build"
        );
    }

    #[test]
    fn llama_cpp_lists_the_models_size() {
        let listed =
            json!({"data": [{"id": "q", "meta": {"n_ctx": 8192, "n_params": 1543714304u64}}]});
        assert_eq!(params(&listed, "q"), Some(1_543_714_304));
        assert_eq!(params(&json!({"data": [{"id": "q"}]}), "q"), None);
    }

    #[test]
    fn llama_cpp_serving_one_model_answers_for_any_name() {
        let one = json!({"data": [{"id": "qwen2.5-coder-1.5b", "meta": {"n_ctx": 8192, "n_params": 1543714304u64}}]});
        assert_eq!(params(&one, "qwen"), Some(1_543_714_304));
        assert_eq!(read("/v1/models", &one, "gpt-4o-mini"), Some(8192));
        // A router serving several: only the one named.
        let two = json!({"data": [
            {"id": "a", "meta": {"n_ctx": 4096, "n_params": 500_000_000u64}},
            {"id": "b", "meta": {"n_ctx": 8192, "n_params": 7_000_000_000u64}}
        ]});
        assert_eq!(params(&two, "b"), Some(7_000_000_000));
        assert_eq!(params(&two, "c"), None);
        assert_eq!(read("/v1/models", &two, "c"), None);
        // vLLM refuses a name it does not serve: its one model is not taken for it.
        let vllm = json!({"data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 16384}]});
        assert_eq!(read("/v1/models", &vllm, "other"), None);
    }

    #[test]
    fn lists_without_the_field_say_nothing() {
        // What LM Studio, llama.cpp and hosted APIs answer on /v1/models.
        let plain = json!({"object": "list", "data": [{"id": "m", "object": "model"}]});
        assert_eq!(read("/v1/models", &plain, "m"), None);
        assert_eq!(read("/props", &json!({"total_slots": 1}), "m"), None);
        assert_eq!(
            read(
                "/v1/models",
                &json!({"data": [{"id": "m", "max_model_len": 0}]}),
                "m"
            ),
            None
        );
    }
}
