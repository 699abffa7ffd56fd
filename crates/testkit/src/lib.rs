//! Test support: [`FakeServer`], a real HTTP/1.1 server on localhost that answers with
//! scripted bytes (recorded model streams, error bodies, faults), and [`fixture`] to
//! read the recorded wire traffic kept in `tests/fixtures/wire`; and [`mcp`], an MCP
//! server with a tool for every fault (over stdio as `mcp-fixture-server`, and over
//! HTTP); and [`ScriptedModel`], a deterministic model in process for tests and
//! benchmarks of the engine; and [`tasks`], the everyday tasks the task benchmark and
//! the real-model tests give a real model.

mod fixtures;
pub mod machines;
pub mod mcp;
pub mod ndjson;
mod scripted;
mod server;
pub mod sse;
pub mod tasks;
pub mod wire;

pub use fixtures::{fixture, fixture_dir, ndjson_from_pretty, openai_sse, sse_from_payload_lines};
pub use scripted::{Lane, SERVER as SCRIPTED_SERVER, ScriptedModel, ScriptedTurn, server_error};
pub use server::{FakeServer, Piece, Recorded, Reply};
