//! The desktop bench's chats: 20 in the list, one of them an answer of 500 tool cards.
//! Shared by the bench and `examples/seed-chats.rs`, which `scripts/startup-order` runs
//! so that the app it traces starts as the bench measures it.

use std::path::Path;

use cairn_core::TurnOutcome;
use cairn_protocol::{ChatMessage, ExecutionTree, ExecutionTreeNode, TurnStatus, Usage};
use cairn_store::{NewThread, Store};

pub const BIG_THREAD: &str = "Five hundred tool cards";
pub const SMALL_THREAD: &str = "A short chat";

/// 20 chats, one of them with an answer of 500 tool cards.
pub async fn seed(db: &Path) {
    let store = Store::open(db).await.expect("the bench database");
    for n in 0..18 {
        let thread = new_thread(&store, format!("Earlier chat {n}")).await;
        answer(&store, &thread, "Hello", "Hi.", 0).await;
    }
    let small = new_thread(&store, SMALL_THREAD.into()).await;
    answer(&store, &small, "Hello", "A short answer.", 0).await;
    let big = new_thread(&store, BIG_THREAD.into()).await;
    answer(&store, &big, "Read every file", "Read them all.", 500).await;
}

/// A new chat titled `title`, by its id.
async fn new_thread(store: &Store, title: String) -> String {
    store
        .create_thread(NewThread {
            title,
            ..NewThread::default()
        })
        .await
        .unwrap()
        .id
}

async fn answer(store: &Store, thread: &str, prompt: &str, text: &str, cards: usize) {
    let start = store.begin_turn(thread, prompt).await.unwrap();
    let outcome = TurnOutcome {
        thread_id: thread.into(),
        message_id: start.assistant_id.clone(),
        status: TurnStatus::Completed,
        text: text.into(),
        reasoning: String::new(),
        messages: vec![ChatMessage::assistant(text)],
        tree: ExecutionTree::new(
            (0..cards)
                .map(|i| ExecutionTreeNode {
                    id: format!("call_{i}"),
                    parent_id: None,
                    name: "read_file".into(),
                    title: None,
                    args_preview: Some(format!("{{\"path\":\"src/module_{i}/lib.rs\"}}")),
                    result_preview: Some(format!("pub fn f{i}() -> u32 {{ {i} }}\n")),
                    is_error: Some(false),
                    duration_ms: 3,
                    ..ExecutionTreeNode::default()
                })
                .collect(),
        ),
        usage: Usage::default(),
        calls: Vec::new(),
        error: None,
        budget: None,
        switch: None,
        cut: None,
    };
    cairn_runtime::commit_turn(store, thread, &start.assistant_id, &outcome)
        .await
        .unwrap();
}
