//! Small context windows as a user meets them: `cairn run` against scripted servers
//! that report 2k and 4k windows (or none), read through the bytes Cairn sends; and
//! answers bounded by their room, cut answers kept and said.

use cairn_testkit::ndjson;
use cairn_testkit::wire::{estimated_tokens, fixed_prompt_chars};
use serde_json::Value;

use super::support::*;

const OLLAMA_CHAT: &str = "POST /api/chat";

/// An Ollama server whose model is not loaded and says its length (`window`), or,
/// with `None`, says nothing about it.
async fn ollama(window: Option<u32>) -> FakeServer {
    let server = FakeServer::start().await;
    server.fallback("GET /api/ps", Reply::json(200, r#"{"models": []}"#));
    let show = match window {
        Some(tokens) => json!({"model_info": {"llama.context_length": tokens}}),
        None => json!({"details": {}}),
    };
    server.fallback("POST /api/show", Reply::json(200, show.to_string()));
    server
}

/// An OpenAI-compatible server that says nothing of its window, like a hosted API.
async fn openai_without_a_window() -> FakeServer {
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"small","object":"model"}]}"#,
        ),
    );
    server
}

/// `cairn run QUESTION` in default mode in a folder whose `notes.md` holds `notes`,
/// against a scripted Ollama model with a `window`-token context that reads the file
/// once and then answers `answer`.
async fn read_notes_then_answer(
    window: u32,
    notes: &str,
    question: &str,
    answer: &str,
) -> (Output, FakeServer) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), notes).unwrap();
    let server = ollama(Some(window)).await;
    server.push(
        OLLAMA_CHAT,
        Reply::ndjson(ndjson::tool_calls(&[(
            "read_file",
            json!({"path": "notes.md"}),
        )])),
    );
    server.push(OLLAMA_CHAT, Reply::ndjson(ndjson::text(&[answer])));
    let url = server.url();
    let workspace = dir.path().to_str().unwrap();
    let out = output(ask_ollama(&url, workspace, question, Shown::Json)).await;
    (out, server)
}

/// How `cairn run` shows its turn.
#[derive(Clone, Copy, PartialEq)]
enum Shown {
    Json,
    Transcript,
}

/// `cairn run QUESTION` in `workspace` against the Ollama at `url`, model `small`.
fn ask_ollama(url: &str, workspace: &str, question: &str, shown: Shown) -> Command {
    let mut args = vec![
        "run",
        "--base-url",
        url,
        "--dialect",
        "ollama",
        "--model",
        "small",
        "--workspace",
        workspace,
    ];
    if shown == Shown::Json {
        args.push("--json");
    }
    args.push(question);
    cairn(&args)
}

fn tool_calls_made(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallUpdate(update) if update.status == ToolCallStatus::Start => {
                Some(update.name.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_4k_model_reading_a_40_kb_file_sees_the_cut_in_its_next_request() {
    let text: String = (1..=800)
        .map(|n| format!("note {n:03}: the garden path runs past the old stone wall\n"))
        .collect();
    assert!(text.len() > 40_000);
    let (out, server) = read_notes_then_answer(
        4096,
        &text,
        "What does notes.md say?",
        "The notes run from 001 to 800.",
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(tool_calls_made(&events), ["read_file"], "read once");

    let chats = server.requests_to(OLLAMA_CHAT);
    assert_eq!(chats.len(), 2);
    let next = chats[1].json();
    let result = next["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(result["role"], "tool");
    let cut = result["content"].as_str().unwrap();
    assert!(cut.starts_with("note 001:"), "the head: {cut}");
    assert!(
        cut.ends_with("note 800: the garden path runs past the old stone wall\n"),
        "the tail: {cut}"
    );
    assert!(
        cut.contains("Read them with read_tool_result {\"tool_call_id\": "),
        "{cut}"
    );
    for (n, chat) in chats.iter().enumerate() {
        let body = chat.json();
        assert_eq!(body["options"]["num_ctx"], 4096);
        let tokens = estimated_tokens(&body);
        assert!(
            tokens * 5 <= 4096 * 4,
            "request {n}: {tokens} of 4096 tokens"
        );
    }
}

#[tokio::test]
async fn a_2k_model_answers_from_a_file_with_one_read() {
    let (out, server) = read_notes_then_answer(
        2048,
        "# Launch\n\nThe launch is on 3 March at 10:00, in the main hall.\nBring the slides.\n",
        "When is the launch? It is in notes.md.",
        "The launch is on 3 March at 10:00.",
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert!(
        !events.iter().any(|e| matches!(e, Event::BudgetExceeded(_))),
        "{events:?}"
    );
    assert_eq!(tool_calls_made(&events), ["read_file"]);
    assert_eq!(done(&events).status, TurnStatus::Completed);

    let chats = server.requests_to(OLLAMA_CHAT);
    let first = chats[0].json();
    let fixed = fixed_prompt_chars(&first);
    assert!(fixed <= 4096, "the fixed prompt is {fixed} characters");
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    for core in [
        "read_file",
        "list_dir",
        "search_files",
        "write_file",
        "edit_file",
        "run_command",
    ] {
        assert!(names.contains(&core), "{core} in {names:?}");
    }
    assert!(
        names.contains(&"load_tools") && !names.contains(&"run_subtask"),
        "{names:?}"
    );
    let read = chats[1].json();
    let result = read["messages"].as_array().unwrap().last().unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("3 March at 10:00"),
        "the whole file: {result}"
    );
    for chat in &chats {
        assert!(estimated_tokens(&chat.json()) <= 2048 - 512);
    }
}

/// The server's chat route and a three-round script for it in each dialect: a read,
/// a listing, an answer.
async fn three_rounds(dialect: &str) -> (FakeServer, &'static str) {
    match dialect {
        "ollama" => {
            let server = ollama(None).await;
            for reply in [
                ndjson::tool_calls(&[("read_file", json!({"path": "notes.md"}))]),
                ndjson::tool_calls(&[("list_dir", json!({"path": "."}))]),
                ndjson::text(&["Done."]),
            ] {
                server.push(OLLAMA_CHAT, Reply::ndjson(reply));
            }
            (server, OLLAMA_CHAT)
        }
        _ => {
            let server = openai_without_a_window().await;
            for reply in [
                sse::tool_calls(&[("c1", "read_file", json!({"path": "notes.md"}))]),
                sse::tool_calls(&[("c2", "list_dir", json!({"path": "."}))]),
                sse::text(&["Done."]),
            ] {
                server.push(CHAT, Reply::sse(reply));
            }
            (server, CHAT)
        }
    }
}

#[tokio::test]
async fn a_default_turns_fixed_prompt_is_small_and_the_same_every_round_in_both_dialects() {
    for dialect in ["ollama", "openai"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "notes\n").unwrap();
        let (server, route) = three_rounds(dialect).await;
        let url = server.url();
        let workspace = dir.path().to_str().unwrap();
        let out = output(cairn(&[
            "run",
            "--base-url",
            &url,
            "--dialect",
            dialect,
            "--model",
            "small",
            "--workspace",
            workspace,
            "--json",
            "What is in notes.md?",
        ]))
        .await;
        assert_eq!(out.code, 0, "{dialect}: {}", out.stderr);
        let chats: Vec<Value> = server
            .requests_to(route)
            .iter()
            .map(Recorded::json)
            .collect();
        assert_eq!(chats.len(), 3, "{dialect}");
        let fixed = fixed_prompt_chars(&chats[0]);
        assert!(
            fixed <= 6200,
            "{dialect}: the fixed prompt is {fixed} characters"
        );
        for pair in chats.windows(2) {
            assert_eq!(
                pair[0]["tools"], pair[1]["tools"],
                "{dialect}: the same tools"
            );
            let (before, after) = (
                pair[0]["messages"].as_array().unwrap(),
                pair[1]["messages"].as_array().unwrap(),
            );
            assert_eq!(
                before[..],
                after[..before.len()],
                "{dialect}: a prefix of the next"
            );
        }
    }
}

#[tokio::test]
async fn a_second_run_asks_the_server_nothing_before_its_first_model_call() {
    let db = scratch_db();
    let server = ollama(Some(8192)).await;
    server.fallback(OLLAMA_CHAT, Reply::ndjson(ndjson::text(&["Hi."])));
    let url = server.url();
    let run = || {
        let mut command = cairn(&[
            "run",
            "--base-url",
            &url,
            "--dialect",
            "ollama",
            "--model",
            "small",
            "hi",
        ]);
        command.env("CAIRN_DB", &db);
        output(command)
    };
    let first = run().await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let mut asked: Vec<String> = server.requests().iter().map(Recorded::route).collect();
    asked[..2].sort();
    assert_eq!(
        asked,
        ["GET /api/ps", "POST /api/show", OLLAMA_CHAT],
        "both questions at once, before the first call"
    );

    let second = run().await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    let asked: Vec<String> = server.requests()[3..].iter().map(Recorded::route).collect();
    assert_eq!(asked, [OLLAMA_CHAT], "the window came from the database");
    assert_eq!(
        server.requests_to(OLLAMA_CHAT)[1].json()["options"]["num_ctx"],
        8192,
        "and still reaches the server"
    );
}

#[tokio::test]
async fn a_request_refused_for_its_size_again_and_again_fails_and_the_next_run_asks_again() {
    let db = scratch_db();
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(200, r#"{"data":[{"id":"small","meta":{"n_ctx":4096}}]}"#),
    );
    // Refused with no count: fitted again and sent again twice, then the turn fails.
    for _ in 0..3 {
        server.push(
            CHAT,
            Reply::json(
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            ),
        );
    }
    server.fallback(CHAT, Reply::sse(sse::text(&["Hi."])));
    let url = server.url();
    let run = |json: bool| {
        let mut args = vec![
            "run",
            "--base-url",
            &url,
            "--dialect",
            "openai",
            "--model",
            "small",
        ];
        if json {
            args.push("--json");
        }
        args.push("hi");
        let mut command = cairn(&args);
        command.env("CAIRN_DB", &db);
        output(command)
    };
    let refused = run(true).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    let events = refused.events();
    assert!(
        error_message(&events).contains("exceeds the available context size"),
        "{events:?}"
    );
    let refits: Vec<&PromptCut> = events
        .iter()
        .filter_map(|event| match event {
            Event::PromptCut(cut) => Some(cut),
            _ => None,
        })
        .collect();
    assert_eq!(
        refits.len(),
        2,
        "said each time it was sent again: {events:?}"
    );
    assert!(refits.iter().all(|cut| cut.refused && cut.window == 4096));
    assert_eq!(server.requests_to(CHAT).len(), 3);
    let asked = server.requests_to("GET /v1/models").len();
    assert_eq!(asked, 1);

    let again = run(false).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        server.requests_to("GET /v1/models").len(),
        2,
        "the window the server refused was forgotten and asked again"
    );
}

/// A file of `bytes` bytes or more, of numbered lines.
fn long_notes(bytes: usize) -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < bytes {
        n += 1;
        text.push_str(&format!(
            "note {n:04}: the garden path runs past the old stone wall\n"
        ));
    }
    text
}

/// A folder whose `notes.md` is 60 KB, and an Ollama that says a 32k window and whose
/// model reads it first: the request after holds about 20,000 tokens.
async fn long_notes_read_on_a_32k_ollama() -> (tempfile::TempDir, FakeServer) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), long_notes(60_000)).unwrap();
    let server = ollama(Some(32768)).await;
    server.push(
        OLLAMA_CHAT,
        Reply::ndjson(ndjson::tool_calls(&[(
            "read_file",
            json!({"path": "notes.md"}),
        )])),
    );
    (dir, server)
}

fn prompt_cuts(events: &[Event]) -> Vec<PromptCut> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::PromptCut(cut) => Some(cut.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_ollama_that_reads_part_of_a_long_prompt_gets_a_turn_that_says_so_and_fits() {
    let db = scratch_db();
    // It says the model's own length, but runs with a 4,096-token window (Ollama
    // behind a setting or a proxy Cairn cannot see): it cuts the long prompt and
    // answers 200 from what it kept.
    let (dir, server) = long_notes_read_on_a_32k_ollama().await;
    server.push(
        OLLAMA_CHAT,
        Reply::ndjson(ndjson::text_after_reading(
            &["The notes are about a garden."],
            4096,
        )),
    );
    server.fallback(OLLAMA_CHAT, Reply::ndjson(ndjson::text(&["Yes."])));
    let url = server.url();
    let workspace = dir.path().to_str().unwrap();
    let run = |question: &'static str| {
        let mut command = ask_ollama(&url, workspace, question, Shown::Json);
        command.env("CAIRN_DB", &db);
        output(command)
    };
    let out = run("What does notes.md say?").await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let chats = server.requests_to(OLLAMA_CHAT);
    let sent = estimated_tokens(&chats[1].json());
    assert!(sent > 2 * 4096, "the second request is long: {sent}");
    let cuts = prompt_cuts(&out.events());
    assert_eq!(cuts.len(), 1, "{:?}", out.events());
    let cut = &cuts[0];
    assert_eq!(
        (cut.parent_id.as_deref(), cut.read, cut.window, cut.refused),
        (None, 4096, 4096, false)
    );
    assert!(
        cut.sent * 10 >= sent * 9 && cut.sent * 10 <= sent * 11,
        "Cairn's estimate of what it sent ({}) is the request's ({sent})",
        cut.sent
    );
    assert!(
        cut.said()
            .starts_with("The model server read only 4,096 of about"),
        "{}",
        cut.said()
    );
    let events = out.events();
    let finished = done(&events);
    assert_eq!(finished.status, TurnStatus::Completed);

    // Stored with the answer: a reloaded chat says what the live one said.
    let mut show = cairn(&["threads", "show", &finished.thread_id, "--json"]);
    show.env("CAIRN_DB", &db);
    let shown: Value = serde_json::from_str(&output(show).await.stdout).unwrap();
    let answer = shown["messages"].as_array().unwrap().last().unwrap();
    let stored: PromptCut =
        serde_json::from_value(answer["execution_tree"]["prompt_cut"].clone()).unwrap();
    assert_eq!(&stored, cut);

    // The window the server showed is kept: the next run fits it from its first request.
    let next = run("Is the path by the wall?").await;
    assert_eq!(next.code, 0, "{}", next.stderr);
    let chats = server.requests_to(OLLAMA_CHAT);
    let request = chats.last().unwrap().json();
    assert_eq!(request["options"]["num_ctx"], 4096);
    let tokens = estimated_tokens(&request);
    assert!(tokens <= 4096, "the next run's request fits: {tokens}");
    assert!(
        prompt_cuts(&next.events()).is_empty(),
        "{:?}",
        next.events()
    );
}

#[tokio::test]
async fn an_ollama_refusing_a_prompt_too_long_gets_it_fitted_to_its_count_and_sent_again() {
    let (dir, server) = long_notes_read_on_a_32k_ollama().await;
    // Ollama asked not to cut (`truncate: false`) passes on its runner's refusal, as
    // measured: the runner's JSON inside Ollama's error string.
    let inner = json!({"error": {"code": 400,
        "message": "request (30000 tokens) exceeds the available context size (8192 tokens), try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 30000, "n_ctx": 8192}});
    server.push(
        OLLAMA_CHAT,
        Reply::json(400, json!({"error": inner.to_string()}).to_string()),
    );
    server.push(
        OLLAMA_CHAT,
        Reply::ndjson(ndjson::text(&["The notes are about a garden."])),
    );
    let url = server.url();
    let workspace = dir.path().to_str().unwrap();
    let out = output(ask_ollama(
        &url,
        workspace,
        "What does notes.md say?",
        Shown::Transcript,
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("! The model server counted 30,000 tokens in a prompt Cairn estimated at"),
        "the transcript says it: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains("The notes are about a garden."),
        "{}",
        out.stdout
    );

    let chats = server.requests_to(OLLAMA_CHAT);
    assert_eq!(chats.len(), 3);
    for chat in &chats {
        assert_eq!(
            chat.json()["truncate"],
            false,
            "asked never to cut in silence"
        );
    }
    let refused = chats[1].json();
    let again = chats[2].json();
    assert_eq!(refused["options"]["num_ctx"], 32768);
    assert_eq!(
        again["options"]["num_ctx"], 8192,
        "the window the server said"
    );
    // Counted as the server counts (30,000 for what Cairn estimated the refused
    // request at), the request sent again fits the window with room to answer.
    let (before, after) = (estimated_tokens(&refused), estimated_tokens(&again));
    let counted = after * 30_000 / before;
    assert!(
        counted <= 8192 * 3 / 4,
        "{after} estimated, {counted} counted"
    );
}

#[tokio::test]
async fn each_answer_is_bounded_by_its_room_and_a_cut_one_is_kept_and_said() {
    let db = scratch_db();
    // llama.cpp's server: its model list says the context it runs with.
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(200, r#"{"data":[{"id":"small","meta":{"n_ctx":4096}}]}"#),
    );
    // A recorded answer the server stopped at its length limit.
    server.push(
        CHAT,
        Reply::sse(fixture("openai/finish_length_max_tokens.sse")),
    );
    let url = server.url();
    let mut command = cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "openai",
        "--model",
        "small",
        "--json",
        "Name three birds.",
    ]);
    command.env("CAIRN_DB", &db);
    let out = output(command).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = server.requests_to(CHAT)[0].json();
    let max_tokens = request["max_tokens"].as_u64().unwrap();
    assert!(max_tokens <= 2048, "{max_tokens}");
    let events = out.events();
    let done = done(&events);
    assert_eq!(done.status, TurnStatus::Completed);
    assert_eq!(done.cut, Some(cairn_protocol::Cut::Length));
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            Event::Chunk(chunk) => Some(chunk.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "{\"");

    // Stored as cut, with its text and the reason.
    let mut show = cairn(&["threads", "show", &done.thread_id, "--json"]);
    show.env("CAIRN_DB", &db);
    let shown: Value = serde_json::from_str(&output(show).await.stdout).unwrap();
    let answer = shown["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(answer["content"], "{\"");
    assert_eq!(answer["status"], "partial");
    assert_eq!(answer["execution_tree"]["cut"], "length");
    assert!(
        answer["error"].as_str().unwrap().contains("length limit"),
        "{answer}"
    );

    // The transcript says it too, in Ollama's words for the same thing.
    let server = ollama(Some(8192)).await;
    server.push(
        OLLAMA_CHAT,
        Reply::ndjson(fixture("ollama/chat_stream_done_reason_length.ndjson")),
    );
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "ollama",
        "--model",
        "small",
        "Write about the theory of everything.",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("! The model stopped at its length limit"),
        "{}",
        out.stdout
    );
    let options = &server.requests_to(OLLAMA_CHAT)[0].json()["options"];
    assert_eq!(options["num_predict"], 2048, "a quarter of 8192");
}

#[tokio::test]
async fn a_real_small_models_runaway_answer_is_stopped_and_said() {
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(200, r#"{"data":[{"id":"smollm2","meta":{"n_ctx":4096}}]}"#),
    );
    // SmolLM2-135M through llama.cpp, recorded: "# \n" over and over.
    let recorded = fixture("openai/llamacpp_smollm2_runaway.sse");
    server.push(CHAT, Reply::sse(recorded.clone()));
    let url = server.url();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "openai",
        "--model",
        "smollm2",
        "--json",
        "What is in small.txt?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(done(&events).cut, Some(cairn_protocol::Cut::Repetition));
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            Event::Chunk(chunk) => Some(chunk.content.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        text.starts_with("In small.txt, the following is in the file:"),
        "{text}"
    );
    assert!(
        text.len() < 1000,
        "stopped before the length limit: {} bytes",
        text.len()
    );
    assert!(
        text.contains(&"# \n".repeat(100)),
        "the text so far is kept: {text}"
    );
}

#[tokio::test]
async fn a_template_without_tools_gets_them_described_and_its_text_calls_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "The launch is on 3 March.\n").unwrap();
    // llama.cpp's server with SmolLM2's own template: it renders no tools, and says so.
    let server = FakeServer::start().await;
    server.fallback(
        "GET /v1/models",
        Reply::json(200, r#"{"data":[{"id":"smollm2","meta":{"n_ctx":8192}}]}"#),
    );
    server.fallback(
        "GET /props",
        Reply::json(
            200,
            r#"{"default_generation_settings":{"n_ctx":8192},"total_slots":4,
               "chat_template_caps":{"supports_tools":false,"supports_tool_calls":false}}"#,
        ),
    );
    // The model writes its call as text, then answers from the result.
    server.push(
        CHAT,
        Reply::sse(sse::text(&[
            "<tool_call>{\"name\": \"read_file\", ",
            "\"arguments\": {\"path\": \"notes.md\"}}</tool_call>",
        ])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["The launch is on 3 March."])));
    let url = server.url();
    let workspace = dir.path().to_str().unwrap();
    let out = output(cairn(&[
        "run",
        "--base-url",
        &url,
        "--dialect",
        "openai",
        "--model",
        "smollm2",
        "--workspace",
        workspace,
        "--json",
        "When is the launch?",
    ]))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(tool_calls_made(&events), ["read_file"], "the text call ran");
    assert_eq!(done(&events).status, TurnStatus::Completed);

    let chats: Vec<Value> = server
        .requests_to(CHAT)
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert!(chat.get("tools").is_none(), "no tools on the wire: {chat}");
    }
    let system = chats[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<tool_call>{\"name\": \"TOOL\", \"arguments\": {…}}</tool_call>"),
        "{system}"
    );
    for described in [
        "- read_file(path: string, limit?: integer, offset?: integer): ",
        "- list_dir(path: string): ",
        "- run_command(command: string, network?: boolean, outside_sandbox?: boolean, timeout_ms?: integer): ",
        "- load_tools(groups: array of ",
    ] {
        assert!(system.contains(described), "{described} in {system}");
    }
    // The call went back as the model wrote it, its result as the user's.
    let messages = chats[1]["messages"].as_array().unwrap();
    let call = &messages[messages.len() - 2];
    assert_eq!(call["role"], "assistant");
    assert!(call.get("tool_calls").is_none());
    assert_eq!(
        call["content"],
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}</tool_call>"
    );
    let result = messages.last().unwrap();
    assert_eq!(result["role"], "user");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("[tool results]\nResult of read_file:\n"),
        "{result}"
    );
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("The launch is on 3 March.")
    );
}
