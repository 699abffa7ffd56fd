//! Cairn's desktop front end.
//!
//! The state a thread view needs ([`turn`]: a turn's text and nested tool cards,
//! built from the event wire or a stored message) and the composer's slash
//! commands ([`slash`]) are plain Rust, tested on the host. The Leptos view that
//! renders them (`app`) only exists in the wasm build.

pub mod announce;
pub mod appending;
pub mod card_head;
pub mod format;
pub mod highlight;
pub mod markdown;
pub mod pieces;
pub mod slash;
pub mod thread;
pub mod turn;
pub mod zoom;

#[cfg(target_arch = "wasm32")]
mod app;
