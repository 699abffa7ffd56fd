mod approvals;
mod exits;
mod mcp;
mod models;
mod runs;
mod support;
mod threads;
mod transcript;
