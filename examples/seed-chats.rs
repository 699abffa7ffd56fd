//! Writes the desktop bench's chats into the database at the path given: 20 in the
//! list, one of them an answer of 500 tool cards (`scripts/startup-order` traces the
//! app starting on them).
//! usage: cargo run --example seed-chats -- DB

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../benches/desktop/seed.rs"]
mod seed;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let db = std::env::args_os()
        .nth(1)
        .expect("usage: seed-chats DB (the database to write the chats into)");
    seed::seed(std::path::Path::new(&db)).await;
}
