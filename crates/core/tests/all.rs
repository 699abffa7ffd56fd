//! The engine's behaviour, end to end in process, with the scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
