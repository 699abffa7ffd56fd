//! The `cairn` binary against a fake OpenAI-compatible server on localhost: the
//! event lines, approvals over stdin, exit codes, Ctrl-C, the transcript.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
