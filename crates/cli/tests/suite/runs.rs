//! `cairn run`: the event lines, the model it picks, both dialects, a stalled stream, Ctrl-C.

use super::support::*;

#[tokio::test]
async fn json_mode_prints_exactly_the_event_lines_and_exits_0() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(fixture("openai/plain_stream_with_usage.sse")),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "gpt-4o",
        "--json",
        "what's",
        "the weather?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let kinds: Vec<_> = events.iter().map(Event::type_name).collect();
    assert_eq!(kinds.first(), Some(&"agent_state"));
    assert_eq!(&kinds[kinds.len() - 2..], ["agent_state", "done"]);
    assert!(
        kinds[1..kinds.len() - 2].iter().all(|k| *k == "chunk"),
        "{kinds:?}"
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Chunk(c) => Some(c.content.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.starts_with("I'm unable to provide real-time weather updates."));
    let done = done(&events);
    assert_eq!(done.status, TurnStatus::Completed);
    assert_eq!(
        (done.usage.prompt_tokens, done.usage.completion_tokens),
        (14, 30)
    );
    let sent = server.requests_to(CHAT)[0].json();
    assert_eq!(sent["model"], "gpt-4o");
    // The question, opened by the thread's context (its first message).
    let last = sent["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    let content = last["content"].as_str().unwrap();
    assert!(
        content.starts_with("<context>\n")
            && content.ends_with("</context>\n\nwhat's the weather?"),
        "{content}"
    );
}

#[tokio::test]
async fn the_model_defaults_to_the_servers_only_one() {
    let server = FakeServer::start().await;
    server.push(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"only-model","object":"model"}]}"#,
        ),
    );
    server.push(CHAT, Reply::sse(sse::text(&["hi"])));
    let url = server.url();
    let out = output(cairn(&["run", "--base-url", &url, "--json", "hello"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_to(CHAT)[0].json()["model"], "only-model");

    server.push(
        "GET /v1/models",
        Reply::json(200, r#"{"data":[{"id":"a"},{"id":"b"}]}"#),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&["run", "--db", &db, "--base-url", &url, "hello"])).await;
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        format!("cairn: {url} offers several models; choose one with --model: a, b")
    );
    let listed = output(cairn(&["threads", "list", "--db", &db])).await;
    assert_eq!(
        listed.stdout.trim(),
        "no threads yet",
        "a run that could not start leaves no empty thread"
    );
}

#[tokio::test]
async fn a_first_turn_that_fails_lists_as_failed_with_its_question() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 3);
    let listed = output(cairn(&["threads", "list", "--db", &db])).await;
    let row: Vec<&str> = listed.stdout.trim().split('\t').collect();
    assert_eq!(
        row[1..],
        ["hi", "2 messages", "default", "failed"],
        "{row:?}"
    );
}

#[tokio::test]
async fn the_native_ollama_dialect_streams_the_same_events() {
    let server = FakeServer::start().await;
    server.push(
        "POST /api/show",
        Reply::json(200, r#"{"model_info":{"qwen35.context_length":32768}}"#),
    );
    server.push(
        "POST /api/chat",
        Reply::ndjson(fixture("ollama/chat_stream_thinking.ndjson")),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "ollama",
        "--model",
        "qwen3.5:2b",
        "--json",
        "say hello",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Reasoning(r) => Some(r.content.as_str()),
            _ => None,
        })
        .collect();
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Chunk(c) => Some(c.content.as_str()),
            _ => None,
        })
        .collect();
    assert!(reasoning.starts_with("Thinking Process:"));
    assert_eq!(text, "Hello");
    assert_eq!(
        (
            done(&events).usage.prompt_tokens,
            done(&events).usage.completion_tokens
        ),
        (18, 229)
    );
    let chat = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .unwrap()
        .json();
    assert_eq!(chat["think"], true);
    assert_eq!(chat["options"]["temperature"], 0.0);
}

#[tokio::test]
async fn a_stalled_stream_gives_up_after_the_idle_timeout() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(
            &b"data: {\"choices\":[{\"delta\":{\"content\":\"Thinking about it\"}}]}\n\n"[..],
        )
        .then(cairn_testkit::Piece::Hang),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--model",
        "m",
        "--idle-timeout",
        "1",
        "--json",
        "hi",
    ]))
    .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    let events = out.events();
    assert!(
        matches!(&events[1], Event::Chunk(c) if c.content == "Thinking about it"),
        "the partial text came first"
    );
    assert!(
        error_message(&events).contains("sent nothing for 1 s"),
        "{events:?}"
    );
}

/// Ctrl-C before the turn has started (here while the server is still asked for its
/// models) ends the run at once with a stopped run's code, not by the signal's default.
#[tokio::test]
async fn ctrl_c_before_the_turn_starts_exits_130() {
    let server = FakeServer::start().await;
    server.push(
        "GET /v1/models",
        Reply::new(200, "application/json").then(cairn_testkit::Piece::Hang),
    );
    let url = server.url();
    let (child, _events) = spawn_json(&["run", "--base-url", &url, "--json", "hello"]).await;
    tokio::time::timeout(Duration::from_secs(30), async {
        while server.requests_to("GET /v1/models").is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the run asks for the server's models");
    interrupt(&child);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{:?}", out.status);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "cairn: stopped before the turn began"
    );
    assert!(server.requests_to(CHAT).is_empty());
}

#[tokio::test]
async fn ctrl_c_stops_the_turn_keeps_the_partial_answer_and_exits_130() {
    let server = FakeServer::start().await;
    let words: Vec<String> = (0..200).map(|n| format!("word{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    server.push(
        CHAT,
        Reply::sse(sse::text(&words)).paced(200, Duration::from_millis(50)),
    );
    let url = server.url();
    let (mut child, mut events) =
        spawn_json(&["run", "--base-url", &url, "--model", "m", "--json", "count"]).await;
    let mut streamed = String::new();
    while streamed.is_empty() {
        if let Event::Chunk(chunk) = next_event(&mut events).await {
            streamed.push_str(&chunk.content);
        }
    }
    interrupt(&child);
    let mut last = None;
    while !matches!(last, Some(Event::Done(_))) {
        let event = next_event(&mut events).await;
        if let Event::Chunk(chunk) = &event {
            streamed.push_str(&chunk.content);
        }
        last = Some(event);
    }
    let Some(Event::Done(done)) = last else {
        unreachable!()
    };
    assert_eq!(done.status, TurnStatus::Cancelled);
    assert!(streamed.starts_with("word0 "), "{streamed}");
    assert!(!streamed.contains("word199"), "the stream was not stopped");
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(130));
}

#[tokio::test]
async fn a_blank_message_gets_a_clarifying_question_without_a_model_call() {
    let server = FakeServer::start().await;
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = output(cairn(&["run", "--db", &db, "--base-url", &url, "  "])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), cairn_runtime::CLARIFYING_QUESTION);
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--json",
        "",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert!(
        matches!(&events[0], Event::Chunk(c) if c.content == cairn_runtime::CLARIFYING_QUESTION)
    );
    assert_eq!(done(&events).status, TurnStatus::Completed);
    assert_eq!(events.len(), 2);
    assert!(
        server.requests().is_empty(),
        "no model call, not even a model list"
    );
    let listed = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    assert_eq!(listed.stdout.trim(), "[]", "nothing stored");
}

#[tokio::test]
async fn model_parameters_apply_from_the_thread_then_the_defaults_and_a_flag_wins() {
    let server = FakeServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let llm = |args: &[&str]| {
        let mut all = vec!["llm", "--db", &db];
        all.extend(args);
        output(cairn(&all))
    };
    let refused = llm(&["set", "temperature", "3"]).await;
    assert_eq!(refused.code, 2);
    assert_eq!(
        refused.stderr.trim(),
        "cairn: temperature takes a number from 0 to 2, not `3`"
    );
    assert_eq!(llm(&["set", "temperature", "0.4"]).await.code, 0);
    assert_eq!(llm(&["set", "max_tokens", "300"]).await.code, 0);
    for _ in 0..4 {
        server.push(CHAT, Reply::sse(sse::text(&["ok"])));
    }
    let run = |extra: &[&str]| {
        let mut all = vec![
            "run",
            "--db",
            &db,
            "--base-url",
            &url,
            "--model",
            "m",
            "--json",
        ];
        all.extend(extra);
        all.push("hi");
        output(cairn(&all))
    };
    let first = run(&[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let thread = done(&first.events()).thread_id.clone();
    let set = llm(&["set", "temperature", "0.1", "--thread", &thread]).await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    let shown = llm(&["show", "--thread", &thread, "--json"]).await;
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        shown["effective"],
        json!({"temperature": 0.1, "max_tokens": 300})
    );
    assert_eq!(run(&["--thread", &thread]).await.code, 0);
    assert_eq!(
        run(&["--thread", &thread, "--temperature", "0.9"])
            .await
            .code,
        0
    );
    let sent: Vec<(f64, u64)> = server
        .requests_to(CHAT)
        .iter()
        .map(|r| {
            let body = r.json();
            (
                body["temperature"].as_f64().unwrap(),
                body["max_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    // A new thread: the defaults; the thread's own; a flag over both.
    assert_eq!(sent, [(0.4, 300), (0.1, 300), (0.9, 300)]);
    assert_eq!(llm(&["reset"]).await.code, 0);
    let shown = llm(&["show", "--thread", &thread, "--json"]).await;
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["effective"], json!({"temperature": 0.1}));
}
