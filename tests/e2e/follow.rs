//! The view follows new output while the reader is at the end, and never jumps while
//! they read above: a command's output, an answer, a panel opened, the lines of a call
//! being written, the chats list when a chat is picked.

use cairn_store::{NewThread, Store};
use cairn_testkit::{Piece, Reply, sse};
use serde_json::json;

use crate::harness::{App, Home};
use crate::model::Model;
use crate::{CHAT, held_answer, numbered};

/// Whether the bottom of the last element matching `css` is in sight in the thread.
async fn end_in_sight(app: &App, css: &str) -> bool {
    app.js(&format!(
        "const view = document.querySelector('.messages').getBoundingClientRect(); \
         const all = document.querySelectorAll({}); \
         const last = all[all.length - 1].getBoundingClientRect(); \
         return last.bottom <= view.bottom + 1 && last.bottom > view.top;",
        json!(css)
    ))
    .await
        == json!(true)
}

pub(crate) async fn wait_until_in_sight(app: &App, css: &str) {
    app.wait_for_js(&format!(
        "const view = document.querySelector('.messages').getBoundingClientRect(); \
         const all = document.querySelectorAll({}); \
         if (!all.length) return false; \
         const last = all[all.length - 1].getBoundingClientRect(); \
         return last.bottom <= view.bottom + 1 && last.bottom > view.top;",
        json!(css)
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_view_follows_what_was_asked_and_stays_where_the_reader_reads() {
    let model = Model::start().await;
    let lines: Vec<String> = (1..=60).map(|n| format!("Line {n}.\n\n")).collect();
    let text: Vec<&str> = lines.iter().map(String::as_str).collect();
    model.push(CHAT, Reply::sse(sse::text(&text)));
    let more = numbered("more", 80);
    model.push(CHAT, held_answer(&more, 4, "rest"));
    let home = Home::new();
    let app = model.launch(&home).await;
    app.resize(1000, 700).await;

    app.send("Count to sixty").await;
    app.wait_for(".turn.finished").await;
    wait_until_in_sight(&app, ".message.assistant .md").await;

    // A command's output is the answer to what was typed: it comes into sight whole.
    // (A space after the name: Enter then runs it rather than completing it.)
    app.send("/llm ").await;
    app.wait_for(".notice-line").await;
    wait_until_in_sight(&app, ".notice-line").await;

    // The reader scrolls up while an answer streams: the view stays where they read.
    app.send("Go on").await;
    app.wait_for_text(".message.assistant .md", "more4").await;
    app.js(
        "const view = document.querySelector('.messages'); view.scrollTop = 0; \
            view.dispatchEvent(new Event('scroll'));",
    )
    .await;
    model.open_gate("rest");
    app.wait_for_text(".message.assistant .md", "more80").await;
    app.wait_for_js("return document.querySelectorAll('.turn.finished').length === 2;")
        .await;
    let top = app
        .js("return document.querySelector('.messages').scrollTop;")
        .await;
    assert!(
        top.as_f64().unwrap() < 10.0,
        "the view jumped while the reader read above: scrollTop {top}"
    );
    assert!(!end_in_sight(&app, ".message.assistant .md").await);
    app.screenshot("reading-above").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_call_being_written_shows_its_arriving_lines() {
    let model = Model::start().await;
    let body: String = (1..=40).map(|n| format!("Line {n}\\n")).collect();
    let parts = sse::call_parts(
        "w1",
        "write_file",
        &[
            &format!("{{\"path\": \"notes.md\", \"content\": \"{body}"),
            "\"}",
        ],
    );
    let mut reply = Reply::new(200, "text/event-stream");
    let last = parts.len() - 1;
    for (n, part) in parts.into_iter().enumerate() {
        if n == last {
            reply = reply.then(Piece::Gate("rest".into()));
        }
        reply = reply.then(Piece::Bytes(part));
    }
    model.push(CHAT, reply);
    model.says(&["Wrote them."]);
    let home = Home::new();
    let workspace = home.workspace();
    let app = model.launch(&home).await;
    app.choose_mode("auto").await;
    app.choose_workspace(&workspace).await;
    app.send("Write forty lines").await;
    app.wait_for_text(".card-pending", "Line 40").await;
    app.wait_for_js(
        "const box = document.querySelector('.card-pending'); \
         return box.scrollHeight > box.clientHeight \
           && box.scrollTop + box.clientHeight >= box.scrollHeight - 1;",
    )
    .await;
    app.screenshot("call-being-written-end").await;
    model.open_gate("rest");
    app.wait_for_text(".message.assistant .md", "Wrote them.")
        .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn picking_a_chat_leaves_the_chats_list_where_it_was_scrolled() {
    let model = Model::start().await;
    let home = Home::new();
    {
        let store = Store::open(home.db()).await.unwrap();
        for n in 0..40 {
            store
                .create_thread(NewThread {
                    title: format!("Chat {n}"),
                    ..NewThread::default()
                })
                .await
                .unwrap();
        }
    }
    let app = model.launch(&home).await;
    app.wait_for_text(".thread-title", "Chat 0").await;
    app.js("document.querySelector('.threads').scrollTop = 100000;")
        .await;
    let scrolled = app
        .js("return document.querySelector('.threads').scrollTop;")
        .await;
    assert!(
        scrolled.as_f64().unwrap() > 100.0,
        "the list scrolls: {scrolled}"
    );
    app.open_chat("Chat 0").await;
    app.wait_for_text(".chat-title", "Chat 0").await;
    assert_eq!(
        app.js("return document.querySelector('.threads').scrollTop;")
            .await,
        scrolled,
        "the list stayed where it was"
    );
    app.quit().await;
}
