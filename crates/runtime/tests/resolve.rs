//! Which server and model a turn uses, and the thread it goes to: one set of rules
//! for the CLI and the desktop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cairn_core::Limits;
use cairn_protocol::{PermissionMode, ThreadInfo};
use cairn_providers::{Dialect, Endpoint};
use cairn_runtime::{
    DefaultModel, FailureKind, ModelRequest, Runtime, RuntimeError, ThreadOptions, resolve_model,
};
use cairn_secrets::{MemoryStore, SecretStore, key_name};
use cairn_store::Store;
use cairn_testkit::{FakeServer, Reply};

const MODELS: &str = "GET /v1/models";

fn openai(url: &str) -> Endpoint {
    Endpoint::new(Dialect::Openai, url)
}

/// A thread whose last turn ran `model` on `base_url`.
fn used(base_url: &str, model: &str) -> ThreadInfo {
    ThreadInfo {
        id: "t1".into(),
        title: "x".into(),
        mode: PermissionMode::Default,
        workspace: None,
        dialect: Some("openai".into()),
        base_url: Some(base_url.into()),
        model: Some(model.into()),
        agent: None,
        routes: false,
        created_at: 0,
        updated_at: 0,
        message_count: 1,
        last_status: None,
    }
}

#[tokio::test]
async fn a_named_model_runs_on_the_named_server_else_the_threads_else_the_default() {
    let keys = MemoryStore::new();
    let thread = used("http://thread.example:1", "old");
    let named = |server: Option<Endpoint>| ModelRequest {
        server,
        model: Some(" new ".into()),
        default_server: Some(openai("http://default.example:2")),
        ..ModelRequest::default()
    };

    let choice = resolve_model(named(None), Some(&thread), &keys)
        .await
        .unwrap();
    assert_eq!(
        (choice.base_url.as_str(), choice.model.as_str()),
        ("http://thread.example:1", "new")
    );
    let choice = resolve_model(
        named(Some(openai("http://named.example:3"))),
        Some(&thread),
        &keys,
    )
    .await
    .unwrap();
    assert_eq!(choice.base_url, "http://named.example:3");
    let choice = resolve_model(named(None), None, &keys).await.unwrap();
    assert_eq!(choice.base_url, "http://default.example:2");
}

#[tokio::test]
async fn without_a_named_model_a_thread_keeps_its_server_and_model_unless_a_server_is_named() {
    let keys = MemoryStore::new();
    let thread = used("http://thread.example:1", "old");
    let request = ModelRequest {
        default_server: Some(openai("http://default.example:2")),
        default_model: DefaultModel::Set(Some("default".into())),
        ..ModelRequest::default()
    };
    let choice = resolve_model(request.clone(), Some(&thread), &keys)
        .await
        .unwrap();
    assert_eq!(
        (choice.base_url.as_str(), choice.model.as_str()),
        ("http://thread.example:1", "old")
    );

    let named = ModelRequest {
        server: Some(openai("http://named.example:3")),
        ..request.clone()
    };
    let choice = resolve_model(named, Some(&thread), &keys).await.unwrap();
    assert_eq!(
        (choice.base_url.as_str(), choice.model.as_str()),
        ("http://named.example:3", "default")
    );
    let choice = resolve_model(request, None, &keys).await.unwrap();
    assert_eq!(
        (choice.base_url.as_str(), choice.model.as_str()),
        ("http://default.example:2", "default")
    );
}

#[tokio::test]
async fn with_no_model_set_the_desktop_asks_and_the_cli_takes_the_servers_only_one() {
    let server = FakeServer::start().await;
    let keys = MemoryStore::new();
    let unset = ModelRequest {
        default_server: Some(openai(&server.url())),
        default_model: DefaultModel::Set(None),
        ..ModelRequest::default()
    };
    let err = resolve_model(unset, None, &keys).await.unwrap_err();
    assert!(matches!(err, RuntimeError::NoModel), "{err}");
    assert_eq!(err.kind(), FailureKind::NoModel);
    assert!(
        server.requests().is_empty(),
        "nothing is asked of the server"
    );

    let headless = ModelRequest {
        default_server: Some(openai(&server.url())),
        default_model: DefaultModel::OnlyOne,
        ..ModelRequest::default()
    };
    server.push(MODELS, Reply::json(200, r#"{"data":[{"id":"only"}]}"#));
    let choice = resolve_model(headless.clone(), None, &keys).await.unwrap();
    assert_eq!(choice.model, "only");

    server.push(
        MODELS,
        Reply::json(200, r#"{"data":[{"id":"a"},{"id":"b"}]}"#),
    );
    let err = resolve_model(headless.clone(), None, &keys)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::SeveralModels { models, .. } if models == &["a", "b"]),
        "{err}"
    );
    server.push(MODELS, Reply::json(200, r#"{"data":[]}"#));
    let err = resolve_model(headless, None, &keys).await.unwrap_err();
    assert!(matches!(err, RuntimeError::NoModels { .. }), "{err}");
    assert_eq!(err.kind(), FailureKind::NoModel);
}

#[tokio::test]
async fn a_given_key_wins_over_the_keychain_which_serves_openai_compatible_servers() {
    let server = FakeServer::start().await;
    let keys = MemoryStore::new();
    // Stored as `cairn keys set` and Settings store it: under the normalized address.
    let base = openai(&format!("{}/v1", server.url()))
        .normalized_base()
        .unwrap();
    keys.set(&key_name(&base), "sk-keychain").unwrap();
    let request = |api_key: Option<&str>| ModelRequest {
        server: Some(openai(&server.url())),
        api_key: api_key.map(str::to_owned),
        ..ModelRequest::default()
    };
    for (given, sent) in [
        (None, "Bearer sk-keychain"),
        (Some("sk-given"), "Bearer sk-given"),
    ] {
        server.push(MODELS, Reply::json(200, r#"{"data":[{"id":"m"}]}"#));
        resolve_model(request(given), None, &keys).await.unwrap();
        let asked = server.requests().pop().unwrap();
        assert_eq!(asked.header("authorization"), Some(sent));
    }
}

#[tokio::test]
async fn a_bad_address_is_the_users_to_fix() {
    let keys = MemoryStore::new();
    let request = ModelRequest {
        server: Some(openai("localhost:1234")),
        model: Some("m".into()),
        ..ModelRequest::default()
    };
    let err = resolve_model(request, None, &keys).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::Invalid, "{err}");
}

async fn runtime() -> (tempfile::TempDir, Arc<Runtime>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cairn.db")).await.unwrap();
    (dir, Runtime::new(store, Limits::default()))
}

async fn thread_count(runtime: &Runtime) -> usize {
    runtime.list_threads(10, 0).await.unwrap().len()
}

#[tokio::test]
async fn a_thread_that_cannot_be_used_is_never_stored() {
    let (dir, runtime) = runtime().await;
    let err = runtime
        .open_thread(None, "  ", &ThreadOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::EmptyPrompt));
    let missing = ThreadOptions {
        workspace: Some(dir.path().join("missing")),
        ..ThreadOptions::default()
    };
    assert!(runtime.check_thread_options(&missing, None).is_err());
    let err = runtime.open_thread(None, "hi", &missing).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::Invalid);
    assert_eq!(thread_count(&runtime).await, 0);
}

#[tokio::test]
async fn a_new_thread_is_titled_from_its_prompt_and_takes_its_options() {
    let (dir, runtime) = runtime().await;
    let options = ThreadOptions {
        mode: Some(PermissionMode::Plan),
        workspace: Some(dir.path().to_owned()),
        agent: None,
    };
    let thread = runtime
        .open_thread(None, "Tidy the notes folder", &options)
        .await
        .unwrap();
    assert_eq!(thread.title, "Tidy the notes folder");
    assert_eq!(thread.mode, PermissionMode::Plan);
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(thread.workspace.as_deref(), root.to_str());

    // An existing thread changes only what is asked.
    let switched = ThreadOptions {
        mode: Some(PermissionMode::Auto),
        workspace: None,
        agent: None,
    };
    let again = runtime
        .open_thread(Some(thread.clone()), "more", &switched)
        .await
        .unwrap();
    assert_eq!(again.id, thread.id);
    assert_eq!(again.mode, PermissionMode::Auto);
    assert_eq!(again.workspace, thread.workspace);
    assert_eq!(thread_count(&runtime).await, 1);
}
