//! Stored threads: continuing, search, export and import, a damaged file, kill -9, rules.

use super::support::*;

#[tokio::test]
async fn runs_are_stored_and_a_thread_continues_where_it_left_off() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "call_l",
            "list_dir",
            json!({"path": "."}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["One file: a.txt"])));
    server.push(CHAT, Reply::sse(sse::text(&["It says hi."])));
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "hi").unwrap();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "What files\nare here?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let thread_id = done(&out.events()).thread_id.clone();

    let out = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    let threads: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(threads[0]["id"], thread_id.as_str());
    assert_eq!(threads[0]["title"], "What files");
    assert_eq!(threads[0]["mode"], "auto");
    assert_eq!(threads[0]["model"], "m");
    assert_eq!(threads[0]["message_count"], 2);

    let out = output(cairn(&[
        "threads", "show", &thread_id, "--db", &db, "--json",
    ]))
    .await;
    let shown: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let answer = &shown["messages"][1];
    assert_eq!(answer["content"], "One file: a.txt");
    assert_eq!(answer["status"], "complete");
    assert_eq!(answer["execution_tree"]["version"], 1);
    assert_eq!(answer["execution_tree"]["nodes"][0]["name"], "list_dir");

    // Continued without naming the server, model, mode or workspace: the thread's own.
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--thread",
        &thread_id,
        "--json",
        "What does it say?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let third = server.requests_to(CHAT)[2].json();
    let messages = third["messages"].as_array().unwrap();
    let roles: Vec<_> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    // The thread's first message, as stored, opened by its context as it is sent.
    let first = messages[1]["content"].as_str().unwrap();
    assert!(
        first.ends_with("</context>\n\nWhat files\nare here?"),
        "{first}"
    );
    assert!(first.contains("Permission mode: auto"), "{first}");
    assert_eq!(messages[3]["tool_call_id"], "call_l");
    assert_eq!(third["model"], "m");
}

#[tokio::test]
async fn threads_are_searched_exported_renamed_imported_and_deleted() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::text(&["Saffron gives paella its colour."])),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "why is paella yellow?",
    ]))
    .await;
    let id = done(&out.events()).thread_id.clone();

    let out = output(cairn(&["threads", "search", "saffron", "--db", &db])).await;
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains(&id) && out.stdout.contains("[Saffron]"),
        "{}",
        out.stdout
    );

    let out = output(cairn(&[
        "threads", "rename", &id, "Paella", "colour", "--db", &db,
    ]))
    .await;
    assert!(out.stdout.contains("\tPaella colour\t"), "{}", out.stdout);

    let markdown = output(cairn(&["threads", "export", &id, "--db", &db]))
        .await
        .stdout;
    assert!(
        markdown.starts_with("# Paella colour\n") && markdown.contains("## Cairn\n\nSaffron gives"),
        "{markdown}"
    );
    let file = dir.path().join("paella.json");
    let out = output(cairn(&[
        "threads",
        "export",
        &id,
        "--format",
        "json",
        "-o",
        file.to_str().unwrap(),
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    let out = output(cairn(&["threads", "delete", &id, "--db", &db])).await;
    assert_eq!(out.stdout, format!("deleted {id}\n"));
    let out = output(cairn(&["threads", "delete", &id, "--db", &db])).await;
    assert_eq!(
        (out.code, out.stderr.trim()),
        (2, format!("cairn: no thread `{id}`").as_str())
    );
    assert_eq!(
        output(cairn(&["threads", "search", "saffron", "--db", &db]))
            .await
            .stdout,
        "no messages match\n"
    );

    let out = output(cairn(&[
        "threads",
        "import",
        file.to_str().unwrap(),
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let again = output(cairn(&["threads", "export", &id, "--db", &db]))
        .await
        .stdout;
    assert_eq!(again, markdown, "the import brought back the same thread");
}

#[tokio::test]
async fn a_database_cairn_cannot_read_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    std::fs::write(&path, b"plain text, not a database at all, really").unwrap();
    let out = output(cairn(&["threads", "list", "--db", path.to_str().unwrap()])).await;
    // A database that cannot be used is a storage failure (1), not a usage error.
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("is not a Cairn database or is damaged")
            && out.stderr.contains("It was not changed"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"plain text, not a database at all, really"
    );
}

#[tokio::test]
async fn kill_9_mid_answer_leaves_a_sound_file_with_the_question_and_the_partial_answer() {
    let server = FakeServer::start().await;
    let words: Vec<String> = (0..400).map(|n| format!("w{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    server.push(
        CHAT,
        Reply::sse(sse::text(&words)).paced(120, Duration::from_millis(20)),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let (mut child, mut events) = spawn_json(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "count slowly",
    ])
    .await;
    let mut streamed = String::new();
    while streamed.len() < 200 {
        if let Event::Chunk(chunk) = next_event(&mut events).await {
            streamed.push_str(&chunk.content);
        }
    }
    // Past one text flush, so the file holds some of what streamed.
    tokio::time::sleep(Duration::from_millis(400)).await;
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), None, "killed by a signal");

    let store = cairn_store::Store::open(&db).await.unwrap();
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
    let thread = &store
        .list_threads(cairn_store::Page::default())
        .await
        .unwrap()[0];
    let messages = store.messages(&thread.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].content, "count slowly");
    assert_eq!(messages[1].status, cairn_protocol::MessageStatus::Partial);
    assert!(
        messages[1].content.starts_with("w0 w1 w2 "),
        "{:?}",
        messages[1].content
    );
    assert!(
        messages[1].content.len() >= 100,
        "at most the last moments were lost: {:?}",
        messages[1].content
    );
}

#[tokio::test]
async fn rules_are_kept_with_the_threads_and_deny_holds_even_in_auto() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&[
        "rules",
        "add",
        "deny",
        "run_command(rm:*)",
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.ends_with("\tdeny\trun_command(rm:*)\n"));
    let out = output(cairn(&["rules", "add", "allow", "rm -rf", "--db", &db])).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`rm -rf` is not a rule"),
        "{}",
        out.stderr
    );
    let listed = output(cairn(&["rules", "list", "--json", "--db", &db]))
        .await
        .stdout;
    let rules: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(
        rules,
        json!([{"id": 1, "list": "deny", "rule": "run_command(rm:*)"}])
    );

    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "run_command",
            json!({"command": "ls && rm -rf keep"}),
        )])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::text(&["I was not allowed to delete it."])),
    );
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("keep")).unwrap();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--json",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "clean up",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        workspace.path().join("keep").exists(),
        "the deny rule held in auto mode"
    );
    let result = server.requests_to(CHAT)[1].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert!(
        result
            .as_str()
            .unwrap()
            .contains("the user's rule `run_command(rm:*)` refuses this call"),
        "{result}"
    );

    assert_eq!(
        output(cairn(&["rules", "remove", "1", "--db", &db]))
            .await
            .stdout,
        "removed rule 1\n"
    );
    let out = output(cairn(&["rules", "remove", "1", "--db", &db])).await;
    assert_eq!(out.code, 2);
}

#[tokio::test]
async fn the_usage_log_lists_every_call_and_sums_to_what_done_reported() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "run_subtask",
            json!({"title": "Count", "instructions": "count"}),
        )])),
    );
    server.push(
        CHAT,
        Reply::sse(fixture("openai/plain_stream_with_usage.sse")),
    );
    server.push(
        CHAT,
        Reply::sse(fixture("openai/plain_stream_with_usage.sse")),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "go",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let done = done(&out.events()).clone();
    let usage = output(cairn(&[
        "usage",
        "--db",
        &db,
        "--thread",
        &done.thread_id,
        "--json",
    ]))
    .await;
    assert_eq!(usage.code, 0, "{}", usage.stderr);
    let log: serde_json::Value = serde_json::from_str(&usage.stdout).unwrap();
    let operations: Vec<&str> = log["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["operation"].as_str().unwrap())
        .collect();
    // In the order they ended: the first round, the subtask, the answer after it.
    assert_eq!(operations, ["turn", "subtask", "turn"]);
    let totals = &log["totals"];
    assert_eq!(totals["llm_calls"], done.usage.llm_calls);
    assert_eq!(totals["prompt_tokens"], done.usage.prompt_tokens);
    assert_eq!(totals["completion_tokens"], done.usage.completion_tokens);
    assert!(
        log["calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["message_id"] == done.message_id.as_str())
    );
    assert_eq!(totals["cost"], 0.0, "a model with no price costs nothing");
    // Priced per million tokens, the same calls cost what their tokens say.
    let refused = output(cairn(&["usage", "--db", &db, "price", "m", "-1", "2"])).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("cannot be negative"),
        "{}",
        refused.stderr
    );
    let priced = output(cairn(&["usage", "--db", &db, "price", "m", "2", "10"])).await;
    assert_eq!(priced.code, 0, "{}", priced.stderr);
    let usage = output(cairn(&["usage", "--db", &db, "--json"])).await;
    let log: serde_json::Value = serde_json::from_str(&usage.stdout).unwrap();
    let expected = (done.usage.prompt_tokens as f64 * 2.0
        + done.usage.completion_tokens as f64 * 10.0)
        / 1_000_000.0;
    let cost = log["totals"]["cost"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    let per_call: f64 = log["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cost"].as_f64().unwrap())
        .sum();
    assert!((per_call - cost).abs() < 1e-12);
    let table = output(cairn(&["usage", "--db", &db])).await;
    assert!(table.stdout.contains("3 calls:"), "{}", table.stdout);
    // The columns say what they are, and each figure sits under its name.
    let lines: Vec<&str> = table.stdout.lines().collect();
    let header = lines[0];
    for name in [
        "call", "model", "prompt", "output", "time", "cost", "answer",
    ] {
        assert!(header.contains(name), "{header}");
    }
    let cost_ends = header.find("cost").unwrap() + "cost".len();
    for row in &lines[1..4] {
        let cost = row[..cost_ends].rsplit(' ').next().unwrap();
        assert!(
            cost.parse::<f64>().is_ok(),
            "{cost:?} under `cost` in {row:?}"
        );
    }
    assert!(
        table
            .stdout
            .trim_end()
            .ends_with(&format!("cost {expected:.4}")),
        "{}",
        table.stdout
    );
    let removed = output(cairn(&["usage", "--db", &db, "price", "m", "--remove"])).await;
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(removed.stdout.trim(), "");
    let missing = output(cairn(&["usage", "--db", &db, "--thread", "nope"])).await;
    assert_eq!(missing.code, 2, "{}", missing.stderr);
}

#[tokio::test]
async fn a_thread_answering_in_another_process_is_not_deleted_renamed_imported_over_or_answered_twice()
 {
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["First."])));
    // The second answer is held until the test lets it go.
    server.push(
        CHAT,
        Reply::new(200, "text/event-stream")
            .then(cairn_testkit::Piece::Gate("answer".into()))
            .then(cairn_testkit::Piece::Bytes(sse::text(&["Second."]))),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--db",
            &db,
            "--base-url",
            &url,
            "--model",
            "m",
            "--json",
        ];
        args.extend_from_slice(extra);
        cairn(&args)
    };
    let first = output(run(&["Hello."])).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let thread = done(&first.events()).thread_id.clone();
    // Its export, as a user would bring it back from another machine.
    let export = dir.path().join("thread.json");
    let exported = output(cairn(&[
        "threads",
        "export",
        &thread,
        "--db",
        &db,
        "--format",
        "json",
        "--output",
        export.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let answering = run(&["--thread", &thread, "Again."]).spawn().unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while server.requests_to(CHAT).len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the second run asks the model");

    let refused = "this chat is still answering; stop it or wait for it before";
    let delete = output(cairn(&["threads", "delete", &thread, "--db", &db])).await;
    assert_eq!(delete.code, 1, "{}", delete.stderr);
    assert!(
        delete.stderr.contains(&format!("{refused} deleting it")),
        "{}",
        delete.stderr
    );
    let rename = output(cairn(&["threads", "rename", &thread, "New", "--db", &db])).await;
    assert_eq!(rename.code, 1, "{}", rename.stderr);
    assert!(
        rename.stderr.contains(&format!("{refused} renaming it")),
        "{}",
        rename.stderr
    );
    let import = output(cairn(&[
        "threads",
        "import",
        export.to_str().unwrap(),
        "--db",
        &db,
    ]))
    .await;
    assert_eq!(import.code, 1, "{}", import.stderr);
    assert!(
        import
            .stderr
            .contains(&format!("{refused} importing over it")),
        "{}",
        import.stderr
    );
    let twice = output(run(&["--thread", &thread, "Meanwhile?"])).await;
    assert_eq!(twice.code, 1, "{}", twice.stderr);
    assert!(
        twice
            .stderr
            .contains("a turn is already running in this thread"),
        "{}",
        twice.stderr
    );
    assert_eq!(server.requests_to(CHAT).len(), 2, "nothing more was asked");

    server.open_gate("answer");
    let out = tokio::time::timeout(Duration::from_secs(20), answering.wait_with_output())
        .await
        .expect("the answer ends")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The answer was stored whole, under the title it had.
    let shown = output(cairn(&["threads", "show", &thread, "--db", &db, "--json"])).await;
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    let answers: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(answers, ["First.", "Second."]);
    // Answered, the thread is the user's again.
    let delete = output(cairn(&["threads", "delete", &thread, "--db", &db])).await;
    assert_eq!(delete.code, 0, "{}", delete.stderr);
}

#[tokio::test]
async fn a_run_killed_mid_answer_leaves_its_thread_free() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::new(200, "text/event-stream").then(cairn_testkit::Piece::Hang),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let mut answering = cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--json",
        "Hello.",
    ])
    .spawn()
    .unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while server.requests_to(CHAT).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the run asks the model");
    answering.start_kill().unwrap();
    answering.wait().await.unwrap();
    let out = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    let threads: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let thread = threads[0]["id"].as_str().unwrap().to_owned();
    // Its mark stays in the file, but its process is gone: it holds nothing.
    let delete = output(cairn(&["threads", "delete", &thread, "--db", &db])).await;
    assert_eq!(delete.code, 0, "{}", delete.stderr);
}

#[tokio::test]
async fn restore_shows_what_it_will_change_then_puts_an_answers_files_back() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[
            (
                "w1",
                "write_file",
                json!({"path": "notes.md", "content": "alpha\nBETA\n"}),
            ),
            (
                "w2",
                "write_file",
                json!({"path": "new.md", "content": "new\n"}),
            ),
        ])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Changed both."])));
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let workspace = tempfile::tempdir().unwrap();
    let notes = workspace.path().join("notes.md");
    std::fs::write(&notes, "alpha\nbeta\n").unwrap();
    let url = server.url();
    let folder = workspace.path().to_str().unwrap();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--mode",
        "auto",
        "--workspace",
        folder,
        "--json",
        "change the notes",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let thread = done(&out.events()).thread_id.clone();

    // `threads show` says which answer changed what, and how to take it back.
    let shown = output(cairn(&["threads", "show", &thread, "--db", &db])).await;
    assert!(
        shown
            .stdout
            .contains("(changed new.md, notes.md: `cairn threads restore "),
        "{}",
        shown.stdout
    );

    // A dry run shows each file and its diff back, and changes nothing.
    let dry = output(cairn(&[
        "threads",
        "restore",
        &thread,
        "--db",
        &db,
        "--dry-run",
    ]))
    .await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout
            .contains("  new.md: removed (the answer created it)\n")
            && dry.stdout.contains("  notes.md: put back as it was\n")
            && dry.stdout.contains("      -BETA\n      +beta\n"),
        "{}",
        dry.stdout
    );
    assert!(workspace.path().join("new.md").exists());

    // The user edits a file afterwards: refused, exit 2, nothing changed.
    std::fs::write(&notes, "alpha\nmine\n").unwrap();
    let refused = output(cairn(&["threads", "restore", &thread, "--db", &db])).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stdout
            .contains("  ✗ notes.md: changed after this answer wrote it"),
        "{}",
        refused.stdout
    );
    assert!(
        refused
            .stderr
            .contains("nothing was restored: notes.md changed after"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nmine\n");
    assert!(workspace.path().join("new.md").exists());

    // Put back as the answer left it: now it restores.
    std::fs::write(&notes, "alpha\nBETA\n").unwrap();
    let restored = output(cairn(&["threads", "restore", &thread, "--db", &db])).await;
    assert_eq!(restored.code, 0, "{}", restored.stderr);
    assert!(
        restored.stdout.ends_with("restored 2 files\n"),
        "{}",
        restored.stdout
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\nbeta\n");
    assert!(!workspace.path().join("new.md").exists());
    let again = output(cairn(&["threads", "restore", &thread, "--db", &db])).await;
    assert_ne!(again.code, 0);
    assert!(
        again
            .stderr
            .contains("no answer in this chat changed files"),
        "{}",
        again.stderr
    );
    // An answer of another chat, or none at all, is not this chat's to restore.
    let elsewhere = output(cairn(&[
        "threads",
        "restore",
        &thread,
        "--answer",
        "not-an-answer",
        "--db",
        &db,
    ]))
    .await;
    assert_ne!(elsewhere.code, 0);
    assert!(
        elsewhere
            .stderr
            .contains("this chat has no answer `not-an-answer`"),
        "{}",
        elsewhere.stderr
    );
}
