//! `cairn servers`, an agent on a named server, and usage split by server, against
//! fake model servers.

use super::support::*;

/// A llama.cpp-like server with `slots` slots that answers every chat with `text`.
async fn machine(slots: u32, text: &'static str) -> FakeServer {
    cairn_testkit::machines::llama_box(slots, Duration::ZERO, text).await
}

fn in_db(args: &[&str], db: &str) -> Command {
    let mut all = vec!["servers", "--db", db];
    all.extend(args);
    cairn(&all)
}

#[tokio::test]
async fn servers_are_added_listed_and_removed_and_mistakes_exit_2() {
    let gpu = machine(4, "hi").await;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let url = gpu.url();
    let added = output(in_db(&["add", "gpu", &url], &db)).await;
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(added.stdout.contains("Added `gpu`"), "{}", added.stdout);

    let listed = output(in_db(&["list"], &db)).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("gpu") && listed.stdout.contains("llama.cpp server, 4 slots"),
        "{}",
        listed.stdout
    );
    let json = output(in_db(&["list", "--json"], &db)).await;
    let list: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(list[0]["name"], "gpu");
    assert_eq!(list[0]["kind"], "llama_cpp");
    assert_eq!(list[0]["slots"], 4);
    assert_eq!(list[0]["dialect"], "openai");

    for (args, expected) in [
        (vec!["add", "gpu", url.as_str()], "already named `gpu`"),
        (vec!["add", "box", "not an address"], "server `box`"),
        (
            vec!["add", "box", url.as_str(), "--slots", "0"],
            "slots must be between 1 and 64",
        ),
        (vec!["remove", "nope"], "no server named `nope`"),
    ] {
        let failed = output(in_db(&args, &db)).await;
        assert_eq!(failed.code, 2, "{args:?}: {}", failed.stderr);
        assert!(
            failed.stderr.contains(expected),
            "{args:?}: {}",
            failed.stderr
        );
    }
    let removed = output(in_db(&["remove", "gpu"], &db)).await;
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    let empty = output(in_db(&["list"], &db)).await;
    assert!(
        empty.stdout.contains("No servers are named"),
        "{}",
        empty.stdout
    );
}

#[tokio::test]
async fn an_agent_on_a_named_server_asks_it_and_usage_splits_by_server() {
    let home = machine(4, "home answer").await;
    let gpu = machine(1, "the box says hi").await;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let agents = tempfile::tempdir().unwrap();
    cairn_testkit::machines::profile_on(agents.path(), "boxed", "gpu");
    cairn_testkit::machines::profile_on(agents.path(), "lost", "nowhere");
    let gpu_url = gpu.url();
    assert_eq!(output(in_db(&["add", "gpu", &gpu_url], &db)).await.code, 0);

    // `cairn run --db DB --json ARGS… hello`, with the profiles above.
    let run = |args: &[&str]| {
        let mut all = vec!["run", "--db", &db, "--model", "m", "--json"];
        all.extend(args);
        all.push("hello");
        let mut command = cairn(&all);
        command.env("CAIRN_AGENTS_DIR", agents.path());
        command
    };
    // A profile on a server nobody named: exit 2 before anything is stored.
    let home_url = home.url();
    let at_home = |agent: &'static str| run(&["--base-url", &home_url, "--agent", agent]);
    let refused = output(at_home("lost")).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("no server named `nowhere`"),
        "{}",
        refused.stderr
    );
    let threads = output(cairn(&["threads", "list", "--db", &db, "--json"])).await;
    assert_eq!(threads.stdout.trim(), "[]", "nothing was stored");

    // `--provider` takes a named server like a preset.
    let first = output(run(&["--provider", "gpu"])).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(gpu.requests_to(CHAT).len(), 1);

    // A thread answered at home and then as the boxed agent: usage splits by server.
    let answered = output(at_home("boxed")).await;
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    assert_eq!(
        gpu.requests_to(CHAT).len(),
        2,
        "the boxed agent asked the box"
    );
    assert!(home.requests_to(CHAT).is_empty());
    let plain = output(run(&["--base-url", &home_url])).await;
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let usage = output(cairn(&["usage", "--db", &db])).await;
    assert!(
        usage.stdout.contains("server"),
        "a server column: {}",
        usage.stdout
    );
    assert!(usage.stdout.contains("on gpu: 2 calls"), "{}", usage.stdout);
    let home_name = home_url.trim_start_matches("http://");
    assert!(
        usage.stdout.contains(&format!("on {home_name}: 1 call:")),
        "{}",
        usage.stdout
    );
    let json = output(cairn(&["usage", "--db", &db, "--json"])).await;
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(json["by_server"].as_array().unwrap().len(), 2);
}
