//! The model's side of a test: the fake OpenAI-compatible server told, round by
//! round, what the model does (calls a tool, says something), and the app launched
//! against it. A test that needs more of the server (pacing, gates, failures) pushes
//! replies of its own beside these: `Model` is the server it wraps.

use std::ops::Deref;

use cairn_testkit::{FakeServer, Reply, sse};
use serde_json::Value;

use crate::CHAT;
use crate::harness::{App, Home};

pub struct Model {
    server: FakeServer,
}

impl Model {
    pub async fn start() -> Self {
        Self {
            server: FakeServer::start().await,
        }
    }

    /// A round in which the model calls `tool` with `args`, as call `id`.
    pub fn calls(&self, id: &str, tool: &str, args: Value) -> &Self {
        self.server
            .push(CHAT, Reply::sse(sse::tool_calls(&[(id, tool, args)])));
        self
    }

    /// A round in which the model says `text`, then makes `calls` (`(id, tool, args)`).
    pub fn says_and_calls(&self, text: &str, calls: &[(&str, &str, Value)]) -> &Self {
        self.server
            .push(CHAT, Reply::sse(sse::say_and_call(text, calls)));
        self
    }

    /// A round in which the model answers in these pieces.
    pub fn says(&self, pieces: &[&str]) -> &Self {
        self.server.push(CHAT, Reply::sse(sse::text(pieces)));
        self
    }

    /// The app, launched in `home` with this model.
    pub async fn launch(&self, home: &Home) -> App {
        App::launch(home, &self.server.url()).await
    }

    /// The app's first launch in `home` (no model chosen yet), with this server.
    pub async fn launch_first_run(&self, home: &Home) -> App {
        App::launch_first_run(home, &self.server.url()).await
    }
}

impl Deref for Model {
    type Target = FakeServer;

    fn deref(&self) -> &FakeServer {
        &self.server
    }
}
