//! Model servers on other machines, as the tests of named servers need them: a
//! llama.cpp-like [`FakeServer`] that says how many slots it has, the agent profiles
//! that run on such servers, and a plan of independent steps spread over them.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{FakeServer, Reply, sse};

/// The route every chat goes to.
pub const CHAT: &str = "POST /v1/chat/completions";

/// The one model a [`llama_box`] serves.
pub const MODEL: &str = "m";

/// A llama.cpp-like server on its own port: it lists [`MODEL`], says in `/props` that
/// it has `slots` slots and an 8k window, and answers every chat with `text` after
/// `delay` (replies pushed to it go first).
pub async fn llama_box(slots: u32, delay: Duration, text: &'static str) -> FakeServer {
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(200, json!({"data": [{"id": MODEL}]}).to_string()),
    );
    server.fallback(
        "GET /props",
        Reply::json(
            200,
            json!({"total_slots": slots, "default_generation_settings": {"n_ctx": 8192}})
                .to_string(),
        ),
    );
    server.respond(CHAT, move |_| {
        Reply::sse(sse::text(&[text])).head_delay(delay)
    });
    server
}

/// Writes the profile `name` into the agents folder `dir`: it runs on the server
/// `server` with [`MODEL`].
///
/// # Panics
/// When the file cannot be written.
#[allow(clippy::expect_used)]
pub fn profile_on(dir: &Path, name: &str, server: &str) {
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!(
            "---\ndescription: runs on {server}\nserver: {server}\nmodel: {MODEL}\n---\nBe brief.\n"
        ),
    )
    .expect("write the profile");
}

/// `create_plan`'s arguments for `steps` independent steps, run at once, step `n`
/// (from 1) as `agents[n % agents.len()]`.
pub fn spread_plan(steps: usize, agents: &[&str]) -> Value {
    let steps: Vec<Value> = (1..=steps)
        .map(|n| {
            json!({"id": format!("s{n}"), "title": format!("Step {n}"),
                   "instructions": format!("do step {n}"), "agent": agents[n % agents.len()]})
        })
        .collect();
    json!({"objective": "independent steps", "execution_mode": "auto_execute", "steps": steps})
}
