//! Chats: the folder a new one starts in, search, and the app and the CLI opening one
//! new database.

use std::time::Duration;

use cairn_testkit::{Reply, sse};
use serde_json::json;

use crate::model::Model;
use crate::{
    CHAT,
    harness::{self, App, Home, text_of},
};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_new_chat_starts_in_the_last_folder_used() {
    let model = Model::start().await;
    model.says(&["Looked."]);
    let home = Home::new();
    let workspace = home.workspace();
    let app = model.launch(&home).await;
    app.wait_for_text(".welcome-folder", "Choose a folder")
        .await;
    app.choose_workspace(&workspace).await;
    app.wait_for_text(".welcome-folder", "Cairn works in").await;
    app.send("Look around").await;
    app.wait_for_text(".message.assistant .md", "Looked.").await;

    app.click(".new-chat").await;
    app.wait_for_text(".workspace-button", "project").await;
    app.wait_for_text(".welcome-folder", &workspace.display().to_string())
        .await;
    assert_eq!(
        app.js("return document.querySelector('.mode-select').value;")
            .await,
        json!("default"),
        "the folder carries over, the mode does not"
    );
    app.quit().await;

    // And after a restart.
    let app = model.launch(&home).await;
    app.wait_for_text(".workspace-button", "project").await;
    app.screenshot("new-chat-in-last-folder").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_search_lists_each_chat_once_in_plain_words_with_the_hit_marked() {
    let model = Model::start().await;
    model.push(
        CHAT,
        Reply::sse(sse::text(&[
            "The **pebble** is in [the garden](https://example.com/a/b). It is a \
             stoneandpebbleandstoneandpebbleandstoneandpebbleandstoneandpebbleandstone.",
        ])),
    );
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Where is the pebble?").await;
    app.wait_for_text(".message.assistant .md", "garden").await;

    app.wait_for(".search")
        .await
        .send_keys("pebble")
        .await
        .unwrap();
    app.wait_for(".hit").await;
    assert_eq!(
        app.count(".hit").await,
        1,
        "the question and the answer: one chat"
    );
    let snippet = text_of(&app.wait_for(".hit-snippet").await).await;
    for mark in ["**", "](", "[", "`"] {
        assert!(!snippet.contains(mark), "{mark:?} in {snippet:?}");
    }
    assert_eq!(
        text_of(&app.wait_for(".hit-snippet mark").await)
            .await
            .to_lowercase(),
        "pebble"
    );
    assert_eq!(
        app.js("const h = document.querySelector('.hits'); return h.scrollWidth - h.clientWidth;")
            .await,
        json!(0),
        "nothing sticks out sideways"
    );
    app.screenshot("search-hits").await;

    // A word only the answer has: its snippet comes from the Markdown.
    let search = app.wait_for(".search").await;
    search.clear().await.unwrap();
    search.send_keys("garden").await.unwrap();
    let snippet = text_of(&app.wait_for_text(".hit-snippet", "garden").await).await;
    for mark in ["**", "](", "[", "https"] {
        assert!(!snippet.contains(mark), "{mark:?} in {snippet:?}");
    }
    assert!(
        snippet.contains("The pebble is in the garden"),
        "{snippet:?}"
    );
    assert_eq!(
        app.js("const h = document.querySelector('.hits'); return h.scrollWidth - h.clientWidth;")
            .await,
        json!(0),
        "a long word wraps instead of sticking out"
    );
    app.screenshot("search-hits-answer").await;
    let hit = app.wait_for(".hit").await;
    hit.click().await.unwrap();
    app.wait_for_text(".chat-title", "Where is the pebble?")
        .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_app_and_the_cli_open_a_new_database_together() {
    let model = Model::start().await;
    model.says(&["Both opened it."]);
    let home = Home::new();
    let cli = std::path::Path::new(harness::app()).with_file_name("cairn");
    assert!(
        cli.exists(),
        "{} is not built: cargo build -p cairn-cli",
        cli.display()
    );
    // Whoever creates and migrates the file holds the lock beside it. Held here, it
    // makes the app and three CLI runs wait at the same point of their first open,
    // and all of them go at once when it is let go.
    let mut lock_path = home.db().into_os_string();
    lock_path.push(".lock");
    let lock = std::fs::File::create(&lock_path).unwrap();
    lock.lock().unwrap();
    let env = harness::app_env(&home, &model.url());
    let runs: Vec<_> = (0..3)
        .map(|_| {
            tokio::process::Command::new(&cli)
                .args(["threads", "list", "--json"])
                .envs(env.clone())
                .kill_on_drop(true)
                .output()
        })
        .map(tokio::spawn)
        .collect();
    let url = model.url();
    let launch = App::launch(&home, &url);
    let app = {
        let releasing = async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(!home.db().exists(), "nobody opened the file past the lock");
            drop(lock);
        };
        let (app, ()) = tokio::join!(launch, releasing);
        app
    };
    for run in runs {
        let out = run.await.unwrap().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The app works on the file as usual.
    app.send("Did you both open it?").await;
    app.wait_for_text(".message.assistant .md", "Both opened it.")
        .await;
    assert_eq!(app.count(".toast").await, 0, "no error was said");
    app.quit().await;
}
