//! `--agent`, `cairn agents list`, and the router handing over, against a fake
//! model server.

use super::support::*;

/// A folder of the user's profiles: a reviewer on its own model, and a broken file.
fn user_agents() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("reviewer.md"),
        "---\ndescription: Reviews changes\nbase: chat\nmodel: big\n---\nReview carefully.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.md"), "---\nbase: nowhere\n---\n").unwrap();
    dir
}

fn with_agents(args: &[&str], agents: &std::path::Path) -> Command {
    let mut command = cairn(args);
    command.env("CAIRN_AGENTS_DIR", agents);
    command
}

/// `cairn run` as the router, on `server`'s model `small`, with `args` after.
async fn routed(server: &FakeServer, agents: &std::path::Path, args: &[&str]) -> Output {
    let url = server.url();
    let mut all = vec![
        "run",
        "--base-url",
        &url,
        "--model",
        "small",
        "--agent",
        "auto",
    ];
    all.extend(args);
    output(with_agents(&all, agents)).await
}

fn system_prompt(request: &cairn_testkit::Recorded) -> String {
    request.json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_thread_keeps_the_agent_it_was_given() {
    let agents = user_agents();
    let server = FakeServer::start().await;
    server.push(CHAT, Reply::sse(sse::text(&["first"])));
    server.push(CHAT, Reply::sse(sse::text(&["second"])));
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    let base = [
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "small",
        "--json",
    ];
    let mut first: Vec<&str> = base.to_vec();
    first.extend(["--agent", "reviewer", "review this"]);
    let out = output(with_agents(&first, agents.path())).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let thread = done(&out.events()).thread_id.clone();
    let mut again: Vec<&str> = base.to_vec();
    again.extend(["--thread", &thread, "and this"]);
    let out = output(with_agents(&again, agents.path())).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_to(CHAT);
    for request in &requests {
        assert_eq!(request.json()["model"], "big");
        assert!(system_prompt(request).contains("Review carefully."));
    }
    // The skipped file is reported with its path and reason, and the run goes on.
    assert!(out.stderr.contains("broken.md"), "{}", out.stderr);
    assert!(
        out.stderr.contains("its base `nowhere` is unknown"),
        "{}",
        out.stderr
    );
    let shown = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    let threads: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(threads[0]["agent"], "reviewer");
}

#[tokio::test]
async fn an_unknown_or_hidden_agent_exits_2_with_the_visible_ones_and_stores_nothing() {
    let agents = user_agents();
    let server = FakeServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = server.url();
    for (agent, problem) in [
        ("ghost", "there is no agent `ghost`"),
        ("explore", "`explore` is an agent for subtasks only"),
    ] {
        let out = output(with_agents(
            &[
                "run",
                "--db",
                &db,
                "--base-url",
                &url,
                "--model",
                "m",
                "--agent",
                agent,
                "hi",
            ],
            agents.path(),
        ))
        .await;
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("cairn: {problem}. Agents: auto, chat, reviewer")),
            "{}",
            out.stderr
        );
    }
    // The environment names one the same way.
    let mut command = with_agents(
        &["run", "--db", &db, "--base-url", &url, "--model", "m", "hi"],
        agents.path(),
    );
    command.env("CAIRN_AGENT", "ghost");
    assert_eq!(output(command).await.code, 2);
    assert!(server.requests().is_empty());
    let listed = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    assert_eq!(listed.stdout.trim(), "[]");
}

#[tokio::test]
async fn agents_list_shows_every_profile_and_every_skipped_file() {
    let agents = user_agents();
    let workspace = tempfile::tempdir().unwrap();
    let project = workspace.path().join(".cairn/agents");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("chat.md"),
        "---\ndescription: The project's chat\nui: {hidden: false}\n---\n",
    )
    .unwrap();
    let folder = workspace.path().to_str().unwrap();
    let out = output(with_agents(
        &["agents", "list", "--workspace", folder, "--json"],
        agents.path(),
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let rows: Vec<(String, String, Option<String>)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["id"].as_str().unwrap().to_owned(),
                row["source"].as_str().unwrap().to_owned(),
                row["error"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("auto".into(), "builtin".into(), None),
            (
                "broken".into(),
                "user".into(),
                Some("its base `nowhere` is unknown".into())
            ),
            ("chat".into(), "workspace".into(), None),
            ("explore".into(), "builtin".into(), None),
            ("review".into(), "builtin".into(), None),
            ("reviewer".into(), "user".into(), None),
        ]
    );
    let reviewer = &list[5];
    for key in [
        "description",
        "base",
        "hidden",
        "runnable",
        "model",
        "error",
    ] {
        assert!(reviewer.get(key).is_some(), "{key} missing: {reviewer}");
    }
    assert_eq!(
        (
            &reviewer["base"],
            &reviewer["model"],
            &reviewer["hidden"],
            &reviewer["runnable"]
        ),
        (&json!("chat"), &json!("big"), &json!(false), &json!(true))
    );
    assert_eq!(list[3]["hidden"], true);

    let table = output(with_agents(&["agents", "list"], agents.path())).await;
    assert_eq!(table.code, 0);
    assert!(table.stdout.contains("explore"), "{}", table.stdout);
    assert!(table.stdout.contains("subtasks only"), "{}", table.stdout);
    // A built-in the engine uses for a part says the part, not two rules that read as
    // a contradiction ("subtasks only, not a subtask").
    let review = table
        .stdout
        .lines()
        .find(|line| line.starts_with("review "))
        .unwrap_or_default();
    assert!(review.ends_with("(builtin, reviews plans)"), "{review}");
    let auto = table
        .stdout
        .lines()
        .find(|line| line.starts_with("auto "))
        .unwrap_or_default();
    assert!(auto.contains("routes each request"), "{auto}");
    assert!(
        table.stdout.contains("skipped ") && table.stdout.contains("broken.md: its base"),
        "{}",
        table.stdout
    );
}

#[tokio::test]
async fn the_router_hands_over_within_one_run_that_ends_with_one_done() {
    let agents = user_agents();
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "switch_agent",
            json!({"agent": "reviewer", "reason": "a review", "follow_up": "Review it."}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Looks ", "right."])));
    let out = routed(&server, agents.path(), &["--json", "review"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let kinds: Vec<&str> = events.iter().map(Event::type_name).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "done").count(),
        1,
        "{kinds:?}"
    );
    let switched = events
        .iter()
        .find_map(|e| match e {
            Event::AgentSwitched(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (
            switched.from.as_str(),
            switched.to.as_str(),
            switched.reason.as_deref()
        ),
        ("auto", "reviewer", Some("a review"))
    );
    assert_eq!(switched.follow_up, "Review it.");
    let done = done(&events);
    assert_eq!(done.message_id, switched.message_id);
    let requests = server.requests_to(CHAT);
    assert_eq!(requests[0].json()["model"], "small");
    assert_eq!(requests[1].json()["model"], "big");
    let last = requests[1].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "Review it.");

    // Without --json the hand-over is a line of the transcript.
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c2",
            "switch_agent",
            json!({"agent": "chat"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["Hello."])));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cairn.db").display().to_string();
    let out = routed(&server, agents.path(), &["--db", &db, "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("── auto → chat ──"), "{}", out.stdout);
    assert!(out.stdout.trim_end().ends_with("Hello."), "{}", out.stdout);
    assert!(
        out.stdout.contains("✓ switch_agent to chat · "),
        "{}",
        out.stdout
    );

    // Read back, the follow-up is Cairn's, written for the agent it handed to.
    let thread = out
        .stderr
        .split("--thread ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the thread id on stderr")
        .to_owned();
    let shown = output(cairn(&["threads", "show", &thread, "--db", &db])).await;
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let speakers: Vec<&str> = shown
        .stdout
        .lines()
        .filter(|line| line.ends_with(':') && !line.starts_with(' '))
        .collect();
    assert_eq!(
        speakers,
        ["You:", "Cairn:", "Cairn, for chat:", "Cairn:"],
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("✓ switch_agent to chat · "),
        "{}",
        shown.stdout
    );
}

#[tokio::test]
async fn a_profiles_model_the_server_lacks_is_a_clear_provider_failure() {
    let agents = user_agents();
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "switch_agent",
            json!({"agent": "reviewer"}),
        )])),
    );
    server.push(
        CHAT,
        Reply::json(
            404,
            r#"{"error":{"message":"model 'big' not found","type":"invalid_request_error"}}"#,
        ),
    );
    // Asked for the context window too, so it answers every time.
    server.fallback(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"small","object":"model"}]}"#,
        ),
    );
    let out = routed(&server, agents.path(), &["--json", "review"]).await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    let message = error_message(&out.events());
    assert!(
        message.starts_with("the agent `reviewer` asks for the model `big`: "),
        "{message}"
    );
    assert!(message.contains("has no model `big`"), "{message}");
    assert_eq!(done(&out.events()).status, TurnStatus::Failed);
}
