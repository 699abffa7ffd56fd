//! The store on real SQLite files in temporary folders: threads, settings, rules and
//! memory, and what a damaged, newer, locked or full database does. (Turns recorded
//! through the engine are tested in the runtime, which owns the recorder.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use cairn_protocol::{Handover, PermissionMode, Role, RuleList};
use cairn_store::{NewThread, Page, Store, StoreError, StoreOptions, title_from_prompt};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, SqliteConnection};

async fn fresh() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("nested/cairn.db"))
        .await
        .unwrap();
    (dir, store)
}

#[tokio::test]
async fn threads_are_created_listed_renamed_configured_and_deleted() {
    let (dir, store) = fresh().await;
    let first = store
        .create_thread(NewThread {
            title: title_from_prompt("Plan the trip\nto Lisbon"),
            ..NewThread::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (first.title.as_str(), first.mode, first.message_count),
        ("Plan the trip", PermissionMode::Default, 0)
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = store
        .create_thread(NewThread {
            title: "Second".into(),
            ..NewThread::default()
        })
        .await
        .unwrap();

    let listed: Vec<_> = store
        .list_threads(Page::default())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(
        listed,
        [second.id.clone(), first.id.clone()],
        "most recent first"
    );
    let page: Vec<_> = store
        .list_threads(Page {
            limit: 1,
            offset: 1,
        })
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(page, std::slice::from_ref(&first.id));

    assert_eq!(
        store
            .rename_thread(&first.id, "  Lisbon  ")
            .await
            .unwrap()
            .title,
        "Lisbon"
    );
    assert!(matches!(
        store.rename_thread(&first.id, " ").await,
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(
        store
            .set_mode(&first.id, PermissionMode::Plan)
            .await
            .unwrap()
            .mode,
        PermissionMode::Plan
    );
    let workspace = store
        .set_workspace(&first.id, Some(dir.path()))
        .await
        .unwrap()
        .workspace
        .unwrap();
    assert_eq!(
        workspace,
        dir.path().canonicalize().unwrap().to_string_lossy()
    );
    assert!(matches!(
        store
            .set_workspace(&first.id, Some(&dir.path().join("missing")))
            .await,
        Err(StoreError::Invalid(_))
    ));
    let configured = store
        .set_model(&first.id, "ollama", "http://localhost:11434", "qwen3:8b")
        .await
        .unwrap();
    assert_eq!(configured.model.as_deref(), Some("qwen3:8b"));

    store.begin_turn(&first.id, "hello").await.unwrap();
    assert!(store.delete_thread(&first.id).await.unwrap());
    assert!(!store.delete_thread(&first.id).await.unwrap());
    assert!(matches!(
        store.messages(&first.id).await,
        Err(StoreError::NotFound { kind: "thread", .. })
    ));
    assert!(
        store.search("hello", 10).await.unwrap().is_empty(),
        "deleted messages leave the index too"
    );
    let orphans: i64 = sqlx_count(&store, "messages").await;
    assert_eq!(orphans, 0);
}

/// A raw connection of the test's own, to look at and tamper with the file directly.
async fn raw(path: &std::path::Path) -> SqliteConnection {
    SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap()
}

async fn sqlx_count(store: &Store, table: &str) -> i64 {
    let mut connection = raw(store.path()).await;
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&mut connection)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_database_from_a_newer_version_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let store = Store::open(&path).await.unwrap();
    store.close().await;
    let mut connection = raw(&path).await;
    sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (9999, 'from the future', 1, x'00', 0)")
        .execute(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).await.unwrap_err();
    assert!(
        matches!(err, StoreError::NewerVersion { found: 9999, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("Update Cairn to open it; the file was not changed")
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[tokio::test]
async fn a_damaged_or_foreign_file_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database, just text that happens to be long enough",
    )
    .unwrap();
    let err = Store::open(&garbage).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("It was not changed"));
    assert_eq!(
        std::fs::read(&garbage).unwrap(),
        b"this is not a database, just text that happens to be long enough"
    );
    assert!(!dir.path().join("garbage.db-wal").exists());

    let foreign = dir.path().join("foreign.db");
    let mut connection = SqliteConnectOptions::new()
        .filename(&foreign)
        .create_if_missing(true)
        .connect()
        .await
        .unwrap();
    sqlx::query("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")
        .execute(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    let before = std::fs::read(&foreign).unwrap();
    let err = Store::open(&foreign).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { ref detail, .. } if detail.contains("another program")),
        "{err}"
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), before);
}

#[tokio::test]
async fn a_lock_held_elsewhere_is_waited_for_then_reported() {
    let (_dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    let short = Store::open_with(
        store.path(),
        StoreOptions {
            lock_timeout: Duration::from_millis(200),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let mut holder = raw(store.path()).await;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let err = short.begin_turn(&thread.id, "blocked").await.unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "it waited first"
    );
    assert!(err.to_string().contains("is locked by another program"));
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    short.begin_turn(&thread.id, "now it works").await.unwrap();
}

#[tokio::test]
async fn a_full_disk_saves_nothing_half() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let store = Store::open(&path).await.unwrap();
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    store.close().await;
    let mut connection = raw(&path).await;
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    let pages = u64::try_from(pages).unwrap();
    let store = Store::open_with(
        &path,
        StoreOptions {
            max_pages: Some(pages + 8),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();

    let huge = "x".repeat(200_000);
    let err = store.begin_turn(&thread.id, &huge).await.unwrap_err();
    assert!(matches!(err, StoreError::Full { .. }), "{err}");
    assert!(
        store.messages(&thread.id).await.unwrap().is_empty(),
        "neither row of the turn was written"
    );
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
}

#[tokio::test]
async fn settings_rules_and_memory_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    {
        let store = Store::open(&path).await.unwrap();
        assert_eq!(
            store.setting::<String>("default_model").await.unwrap(),
            None
        );
        store
            .set_setting("default_model", &"qwen3:8b")
            .await
            .unwrap();
        store
            .set_setting("default_model", &"llama3.2")
            .await
            .unwrap();
        let allow = store
            .add_rule(RuleList::Allow, "run_command(cargo test:*)")
            .await
            .unwrap();
        let again = store
            .add_rule(RuleList::Allow, "run_command(cargo test:*)")
            .await
            .unwrap();
        assert_eq!(allow, again, "adding twice keeps one");
        store
            .add_rule(RuleList::Deny, "run_command(rm:*)")
            .await
            .unwrap();
        store
            .memory_write("user.name", "Ada\nlikes Rust")
            .await
            .unwrap();
        store
            .memory_write("user.name", "Ada Lovelace")
            .await
            .unwrap();
        store.close().await;
    }
    let store = Store::open(&path).await.unwrap();
    assert_eq!(
        store
            .setting::<String>("default_model")
            .await
            .unwrap()
            .as_deref(),
        Some("llama3.2")
    );
    let rules = store.rules().await.unwrap();
    let listed: Vec<_> = rules.iter().map(|r| (r.list, r.rule.as_str())).collect();
    assert_eq!(
        listed,
        [
            (RuleList::Allow, "run_command(cargo test:*)"),
            (RuleList::Deny, "run_command(rm:*)")
        ]
    );
    assert!(store.remove_rule(rules[0].id).await.unwrap());
    assert!(!store.remove_rule(rules[0].id).await.unwrap());
    assert_eq!(store.rules().await.unwrap().len(), 1);
    assert_eq!(
        store.memory_read("user.name").await.unwrap().as_deref(),
        Some("Ada Lovelace")
    );
    assert_eq!(
        store.memory_list().await.unwrap(),
        [("user.name".to_owned(), "Ada Lovelace".to_owned())]
    );
}

#[tokio::test]
async fn a_hand_over_is_stored_as_a_synthetic_message_and_comes_back_whole() {
    let (dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    assert_eq!((thread.agent.as_deref(), thread.routes), (None, false));
    let routed = store.set_agent(&thread.id, "auto", true).await.unwrap();
    assert_eq!(
        (routed.agent.as_deref(), routed.routes),
        (Some("auto"), true)
    );
    store
        .begin_turn(&thread.id, "review my diff")
        .await
        .unwrap();
    let handover = Handover {
        from: "auto".into(),
        to: "reviewer".into(),
        reason: Some("a review".into()),
    };
    let start = store
        .begin_handover(&thread.id, &handover, "Review the diff.")
        .await
        .unwrap();
    assert!(start.user.synthetic);
    assert_eq!(start.user.handover.as_ref(), Some(&handover));
    // The thread answers as the target from now on, and still routes.
    let after = store.thread(&thread.id).await.unwrap();
    assert_eq!(
        (after.agent.as_deref(), after.routes),
        (Some("reviewer"), true)
    );
    // Choosing an agent by hand keeps the routing the thread already has.
    let chosen = store.set_agent(&thread.id, "chat", false).await.unwrap();
    assert!(chosen.routes);
    drop(store);

    let store = Store::open(dir.path().join("nested/cairn.db"))
        .await
        .unwrap();
    let messages = store.messages(&thread.id).await.unwrap();
    let users: Vec<(&str, bool, Option<&Handover>)> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| (m.content.as_str(), m.synthetic, m.handover.as_ref()))
        .collect();
    assert_eq!(
        users,
        [
            ("review my diff", false, None),
            ("Review the diff.", true, Some(&handover)),
        ]
    );
    // The model reads the follow-up as the user's turn.
    let history = store.history(&thread.id).await.unwrap();
    assert!(history.iter().any(|m| m.content() == "Review the diff."));
    // Export and import keep the mark; Markdown shows the hand-over.
    let export = store.export_json(&thread.id).await.unwrap();
    let markdown = cairn_store::markdown(&export);
    assert!(
        markdown.contains("_auto → reviewer: a review_"),
        "{markdown}"
    );
    store.delete_thread(&thread.id).await.unwrap();
    store.import(&export).await.unwrap();
    let again = store.messages(&thread.id).await.unwrap();
    assert_eq!(again, messages);
    let thread = store.thread(&thread.id).await.unwrap();
    assert_eq!(
        (thread.agent.as_deref(), thread.routes),
        (Some("chat"), true)
    );
}

#[tokio::test]
async fn a_search_ranks_every_match_before_it_keeps_the_best_few() {
    let (_dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    for n in 0..30 {
        store
            .begin_turn(
                &thread.id,
                &format!("note {n} mentions cargo once, among many other words here"),
            )
            .await
            .unwrap();
    }
    // Written last, so not first by order of rows: only the rank puts it first.
    store
        .begin_turn(&thread.id, "cargo cargo: cargo")
        .await
        .unwrap();
    let hits = store.search("cargo", 5).await.unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].snippet, "[cargo] [cargo]: [cargo]");
    assert!(
        hits[1..]
            .iter()
            .all(|hit| hit.snippet.contains("mentions [cargo] once"))
    );
    assert!(hits.iter().all(|hit| hit.thread_id == thread.id));
}

#[tokio::test]
async fn a_thread_answered_by_a_running_process_is_marked_and_an_ended_ones_mark_holds_nothing() {
    let (_dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    // Another process's mark, written as that process would: first while it runs (a
    // child that reads its input until it ends, on every system), then once it ended.
    let mark = |pid: i64| {
        let (path, id) = (store.path().to_owned(), thread.id.clone());
        async move {
            let mut connection = raw(&path).await;
            sqlx::query(
                "INSERT OR REPLACE INTO answering (thread_id, pid, since) VALUES (?, ?, 0)",
            )
            .bind(id)
            .bind(pid)
            .execute(&mut connection)
            .await
            .unwrap();
        }
    };
    let mut other = std::process::Command::new(if cfg!(windows) { "cmd" } else { "cat" })
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = i64::from(other.id());
    mark(pid).await;
    assert!(store.answered_elsewhere(&thread.id).await.unwrap());
    assert!(!store.claim_answering(&thread.id).await.unwrap(), "refused");
    drop(other.stdin.take());
    other.wait().unwrap();
    mark(pid).await;
    assert!(!store.answered_elsewhere(&thread.id).await.unwrap());
    assert!(
        store.claim_answering(&thread.id).await.unwrap(),
        "taken over"
    );
    // This process's own mark: not "elsewhere", claimed again at will, and released.
    assert!(!store.answered_elsewhere(&thread.id).await.unwrap());
    assert!(store.claim_answering(&thread.id).await.unwrap());
    store.release_answering(&thread.id).await.unwrap();
    assert_eq!(sqlx_count(&store, "answering").await, 0);
}

#[tokio::test]
async fn markdown_shows_a_question_cairn_wrote_as_the_window_did() {
    let (_dir, store) = fresh().await;
    let thread = store.create_thread(NewThread::default()).await.unwrap();
    store
        .begin_turn_shown(
            &thread.id,
            "Run plan p1 as it is: call create_plan with plan_id p1",
            "Run plan p1",
        )
        .await
        .unwrap();
    let markdown = cairn_store::markdown(&store.export_json(&thread.id).await.unwrap());
    assert!(markdown.contains("## You\n\nRun plan p1\n"), "{markdown}");
    assert!(
        markdown.contains(
            "<details><summary>What the agent read</summary>\n\nRun plan p1 as it is: call \
             create_plan with plan_id p1\n\n</details>"
        ),
        "{markdown}"
    );
}
