//! The human transcript: text, tool cards by depth, budget notices.

use super::support::*;

#[tokio::test]
async fn the_transcript_shows_text_and_tool_cards_by_depth() {
    let server = FakeServer::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "c1",
            "run_subtask",
            json!({"title": "Survey", "instructions": "list the root"}),
        )])),
    );
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[("c2", "list_dir", json!({"path": "."}))])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["a.txt is there"])));
    server.push(
        CHAT,
        Reply::sse(sse::text(&["The folder holds ", "a.txt."])),
    );
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "hi").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cairn.db").display().to_string();
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--db",
        &db,
        "--base-url",
        &url,
        "--model",
        "m",
        "--workspace",
        workspace.path().to_str().unwrap(),
        "what is here?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "  ▸ subtask “Survey”");
    // The headline the window shows, not the raw arguments.
    assert_eq!(lines[1], "    ▸ list_dir ./");
    assert!(
        lines[2].starts_with("    ✓ list_dir ./ · ") && lines[2].ends_with(" ms · a.txt"),
        "{lines:?}"
    );
    assert_eq!(
        lines[3], "    a.txt is there",
        "the subtask's own text, under it"
    );
    assert!(
        lines[4].starts_with("  ✓ subtask “Survey” · ") && lines[4].ends_with(" · a.txt is there"),
        "{lines:?}"
    );
    assert_eq!(lines[5], "The folder holds a.txt.");
    assert_eq!(lines.len(), 6, "{lines:?}");

    // The stored answer reads in the same order, the subtask's text under its card.
    let thread = out
        .stderr
        .split("--thread ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the thread id on stderr")
        .to_owned();
    let shown = output(cairn(&["threads", "show", &thread, "--db", &db])).await;
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let answer: Vec<&str> = shown
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("Cairn"))
        .skip(1)
        .filter(|line| !line.is_empty())
        .collect();
    assert!(
        answer[0].starts_with("  ✓ subtask “Survey” · "),
        "{answer:?}"
    );
    assert!(answer[1].starts_with("    ✓ list_dir ./ · "), "{answer:?}");
    assert_eq!(answer[2], "  a.txt is there", "{answer:?}");
    assert_eq!(answer[3], "The folder holds a.txt.", "{answer:?}");
    assert_eq!(answer.len(), 4, "{answer:?}");
}

#[tokio::test]
async fn the_transcript_prints_a_one_line_budget_notice() {
    let out = out_of_llm_calls(false).await;
    assert_eq!(out.code, 4);
    assert_eq!(
        out.stdout.lines().last().unwrap(),
        "! budget exceeded: llm_calls (2 of 1); the answer above is partial; raise it with \
         CAIRN_MAX_TOTAL_LLM_CALLS"
    );
}
