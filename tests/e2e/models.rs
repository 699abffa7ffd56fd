//! Models and servers: the picker, reading the prompt ahead, real small models, paging
//! a long result, and the server settings' advice.

use std::time::Duration;

use cairn_testkit::{Reply, sse};
use serde_json::json;

use crate::{
    CHAT, first_chat_request,
    harness::{App, Home, text_of},
    layout::{assert_placeholders_fit, assert_usable},
    llama_cpp_models,
    mcp::mcp_fixture,
    model::Model,
    questions,
};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_model_picker_says_how_much_context_the_model_has_and_when_tools_wait() {
    let server = Model::start().await;
    // llama.cpp's model list says the context the model was started with.
    server.fallback("GET /v1/models", llama_cpp_models(4096));
    let home = Home::new();
    let app = server.launch(&home).await;
    let hint = app.wait_for_text(".context-hint", "4k context").await;
    assert_eq!(text_of(&hint).await, "4k context");
    let title = hint.attr("title").await.unwrap().unwrap_or_default();
    assert!(
        title.starts_with("This model takes 4096 tokens at once (llama.cpp server's n_ctx)."),
        "{title}"
    );
    assert_usable(&app, &[".context-hint", ".model-select", ".send"]).await;
    app.screenshot("context-hint").await;

    // With an MCP server's tools and a 1k context, the tools wait in their group.
    std::fs::write(
        home.mcp_config(),
        json!({"mcpServers": {"fixture": {"command": mcp_fixture()}}}).to_string(),
    )
    .unwrap();
    app.quit().await;
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime.allow_mcp_server("fixture", true).await.unwrap();
    drop(runtime);
    server.fallback("GET /v1/models", llama_cpp_models(1024));
    let app = server.launch(&home).await;
    app.wait_for_text(".context-hint", "1k context · tools on demand")
        .await;
    // A long hint at 1120 px: Send stays on the controls' first line, not one of its own.
    app.resize(1120, 800).await;
    let rows = app
        .js("const top = s => Math.round(document.querySelector(s).getBoundingClientRect().top); \
             return [top('.agent-chip'), top('.send'), document.querySelector('.send').getBoundingClientRect().height];")
        .await;
    let (chip, send, height) = (
        rows[0].as_f64().unwrap(),
        rows[1].as_f64().unwrap(),
        rows[2].as_f64().unwrap(),
    );
    assert!(
        (send - chip).abs() < height,
        "Send sits on the first line (chip at {chip}, Send at {send})"
    );
    app.screenshot("composer-1120").await;
    app.resize(800, 600).await;
    assert_usable(&app, &[".context-hint", ".model-select", ".send"]).await;
    app.screenshot("context-hint-tools-on-demand").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_local_server_reads_the_prompt_while_the_question_is_written() {
    let server = Model::start().await;
    server.fallback("GET /v1/models", llama_cpp_models(8192));
    server.respond(CHAT, |request: &cairn_testkit::Recorded| {
        Reply::sse(if cairn_testkit::wire::is_warm_up(&request.json()) {
            sse::text(&["."])
        } else {
            sse::text(&["Hello."])
        })
    });
    let home = Home::new();
    let workspace = home.workspace();
    let app = server.launch(&home).await;
    app.choose_workspace(&workspace).await;
    app.click(".composer-input").await;
    // Before a word is typed, the server has read what the question will follow.
    let start = std::time::Instant::now();
    let ahead = loop {
        let warm_ups: Vec<_> = server
            .requests_to(CHAT)
            .iter()
            .map(cairn_testkit::Recorded::json)
            .filter(cairn_testkit::wire::is_warm_up)
            .collect();
        // The folder's prompt: the one read once the folder was chosen.
        let folder = format!(
            "the folder `{}`.",
            workspace.file_name().unwrap().to_str().unwrap()
        );
        if let Some(last) = warm_ups.last()
            && cairn_testkit::wire::context_block(last).contains(&folder)
        {
            break last.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no warm-up for the folder: {warm_ups:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    app.send("Say hello.").await;
    app.wait_for_text(".message.assistant .md", "Hello.").await;
    let asked = first_chat_request(&server);
    let sent = asked["messages"].as_array().unwrap();
    // A new chat's context block was read ahead as a message of its own, which the
    // question then opens with.
    let (block, before) = ahead["messages"].as_array().unwrap().split_last().unwrap();
    assert_eq!(before, &sent[..sent.len() - 1]);
    let question = sent.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(
        question.strip_prefix(block["content"].as_str().unwrap()),
        Some("Say hello."),
        "the question added only itself"
    );
    assert_eq!(ahead["tools"], asked["tools"]);
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus, tauri-driver and the real model server: run scripts/test"]
async fn a_real_small_model_answers_in_the_window() {
    let server = std::env::var("CAIRN_REAL_MODEL_URL")
        .expect("CAIRN_REAL_MODEL_URL is not set: run under scripts/real-model with");
    let home = Home::new();
    // The harness names the model `test-model`; this server serves `smollm2`.
    let app = App::launch_with(&home, &server, &[("CAIRN_MODEL", "smollm2")]).await;
    // The picker reads the window from the server, and that SmolLM2's own template
    // takes no tools, so they reach the model through its prompt.
    app.wait_for_text(".context-hint", "4k context").await;
    app.wait_for_text(".context-hint", "tools through text")
        .await;
    app.send("What colour is the sky on a clear day? Answer in one sentence.")
        .await;
    // A real answer: some words, the turn over (no running chip, no Stop), no error.
    // The model's time is the machine's: as long as the slowest real run the suite
    // has seen, ten times over, not the app's 30 s.
    app.wait_for_js_within(
        "const md = document.querySelector('.message.assistant .md'); \
         return md && md.innerText.trim().split(/\\s+/).length >= 3 \
           && !document.querySelector('.message.assistant .chip') \
           && !document.querySelector('.running-chip') \
           && !document.querySelector('.stop');",
        REAL_MODEL_PATIENCE,
    )
    .await;
    assert_eq!(app.count(".message.assistant .notice.error").await, 0);
    let live = text_of(&app.wait_for(".message.assistant .md").await).await;
    app.screenshot("real-model-answer").await;
    app.quit().await;
    // What was stored reads as it was shown.
    let app = App::launch_with(&home, &server, &[("CAIRN_MODEL", "smollm2")]).await;
    app.open_chat("What colour is the sky").await;
    let stored = text_of(&app.wait_for(".message.assistant .md").await).await;
    assert_eq!(stored, live);
    app.quit().await;
}

/// How long a real model's answer may take in the window: SmolLM2's answers here take
/// 1–30 s; a busy machine slows it many times over.
const REAL_MODEL_PATIENCE: Duration = Duration::from_secs(600);

/// The call and offset the last "read the rest" note in a result names.
fn next_page(content: &str) -> Option<(String, usize)> {
    let at = content.rfind("{\"tool_call_id\": \"")?;
    let rest = &content[at + 18..];
    let (id, rest) = rest.split_once("\", \"offset\": ")?;
    let offset = rest.split('}').next()?.parse().ok()?;
    Some((id.to_owned(), offset))
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_4k_model_pages_a_long_file_back_and_answers_from_it() {
    let server = Model::start().await;
    server.fallback("GET /v1/models", llama_cpp_models(4096));
    // A model that reads the file, follows each "read the rest" note to its end, and
    // answers from the last page.
    server.respond(CHAT, |request: &cairn_testkit::Recorded| {
        let body = request.json();
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        Reply::sse(if last["role"] == "tool" {
            match next_page(last["content"].as_str().unwrap()) {
                Some((id, offset)) => sse::tool_calls(&[(
                    &format!("p{offset}"),
                    "read_tool_result",
                    json!({"tool_call_id": id, "offset": offset}),
                )]),
                None => sse::text(&["The last note, 800, says the path ends at the gate."]),
            }
        } else {
            sse::tool_calls(&[("r1", "read_file", json!({"path": "notes.md"}))])
        })
    });
    let home = Home::new();
    let workspace = home.workspace();
    let notes: String = (1..=800)
        .map(|n| match n {
            800 => "note 800: the path ends at the gate\n".to_owned(),
            _ => format!("note {n:03}: the garden path runs past the old stone wall\n"),
        })
        .collect();
    std::fs::write(workspace.join("notes.md"), &notes).unwrap();
    let app = server.launch(&home).await;
    app.choose_workspace(&workspace).await;
    // In a folder, the whole toolbelt crowds 4k: the picker says so, and what waits.
    let hint = app
        .wait_for_text(".context-hint", "4k context · tools on demand")
        .await;
    let title = hint.attr("title").await.unwrap().unwrap_or_default();
    assert!(
        title
            .ends_with("loads the rest as it needs them: llm, memory, plans, subtasks, todo, web."),
        "{title}"
    );
    app.screenshot("4k-tools-on-demand").await;

    app.send("What does the last note in notes.md say?").await;
    app.wait_for_text(".message.assistant .md", "the path ends at the gate")
        .await;
    let chats = questions(&server);
    assert!(chats.len() >= 5, "paged in {} requests", chats.len());
    for (n, chat) in chats.iter().enumerate() {
        let tokens = cairn_testkit::wire::estimated_tokens(chat);
        assert!(
            tokens * 5 <= 4096 * 4,
            "request {n}: {tokens} of 4096 tokens"
        );
        assert!(chat["max_tokens"].as_u64().is_some_and(|max| max <= 1024));
    }
    // The first result the model read: the head, the tail, and the way to the rest.
    let first = chats[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(first.starts_with("note 001:"), "{first}");
    assert!(
        first.ends_with("note 800: the path ends at the gate\n"),
        "{first}"
    );
    assert!(next_page(&first).is_some(), "{first}");
    // One card a call: the read, then each page.
    let outline = app.outline().await;
    let cards = outline
        .iter()
        .filter(|line| line.contains(" card "))
        .count();
    assert_eq!(cards, chats.len() - 1, "{outline:?}");
    assert_eq!(outline[0], "0 card read_file", "{outline:?}");
    assert!(
        outline[1..cards]
            .iter()
            .all(|line| line == "0 card read_tool_result"),
        "{outline:?}"
    );
    app.screenshot("4k-paged-answer").await;

    // After a restart the chat reads as it did.
    let live = app.outline().await;
    app.quit().await;
    let app = server.launch(&home).await;
    app.open_chat("What does the last note in notes.md say?")
        .await;
    app.wait_for_text(".message.assistant .md", "the path ends at the gate")
        .await;
    assert_eq!(app.outline().await, live);
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_long_result_is_cut_for_the_model_and_shown_whole_in_its_card() {
    let server = Model::start().await;
    server.push(
        CHAT,
        Reply::sse(sse::tool_calls(&[(
            "r1",
            "read_file",
            json!({"path": "long.txt"}),
        )])),
    );
    server.push(CHAT, Reply::sse(sse::text(&["I read it."])));
    let home = Home::new();
    let workspace = home.workspace();
    // About 90 KB: more than one result may take (50 KB), all of it one read.
    let lines: String = (1..=1500)
        .map(|n| format!("line {n:04} of a file longer than a small model takes in\n"))
        .collect();
    std::fs::write(workspace.join("long.txt"), &lines).unwrap();
    let app = server.launch(&home).await;
    app.choose_workspace(&workspace).await;
    app.send("Read the long file").await;
    app.wait_for_text(".message.assistant .md", "I read it.")
        .await;

    // The model read a cut that says how to read the rest.
    let followup = server.requests_to(CHAT)[1].json();
    let messages = followup["messages"].as_array().unwrap();
    let read = messages.iter().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(read.len() <= 50_000, "{} bytes", read.len());
    assert!(read.starts_with("line 0001"), "the head is kept");
    assert!(
        read.trim_end()
            .ends_with("line 1500 of a file longer than a small model takes in")
    );
    assert!(
        read.contains("read_tool_result {\"tool_call_id\": \"r1\""),
        "the way to the rest"
    );

    // The card shows its start, and every line on request.
    let offered = text_of(&app.wait_for_text(".show-all", "Show all").await).await;
    app.screenshot("long-result-start").await;
    app.click(".show-all").await;
    let shown = text_of(&app.wait_for_text(".card-result", "line 1500").await).await;
    assert_eq!(shown.trim_end(), lines.trim_end());
    assert_eq!(app.count(".show-all").await, 0);
    app.screenshot("long-result-whole").await;
    app.quit().await;

    // After a restart the card offers the same, and shows every line the tool returned.
    let app = server.launch(&home).await;
    app.open_chat("Read the long file").await;
    let card_head = ".card[data-card='r1'] > .card-head";
    app.wait_for(card_head).await;
    if app
        .js(&format!(
            "return document.querySelector(\"{card_head}\").getAttribute('aria-expanded');"
        ))
        .await
        != json!("true")
    {
        app.click(card_head).await;
    }
    let stored = text_of(&app.wait_for_text(".show-all", "Show all").await).await;
    assert_eq!(
        stored, offered,
        "the stored card offers what the live one did"
    );
    app.click(".show-all").await;
    let shown = text_of(&app.wait_for_text(".card-result", "line 1500").await).await;
    assert_eq!(shown.trim_end(), lines.trim_end());
    assert_eq!(
        app.count(".show-all").await,
        0,
        "the stored card's offer is gone too"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_server_settings_say_what_is_wrong_and_how_to_fix_it() {
    let server = Model::start().await;
    server.fallback("GET /v1/models", only_test_model());
    let home = Home::new();
    let app = server.launch(&home).await;
    app.click(".chat-head [aria-label='Settings']").await;
    // The harness starts the app with CAIRN_BASE_URL: the window says so.
    app.wait_for_text(".env-overrides", "CAIRN_BASE_URL=").await;
    app.wait_for_text(".status", "Connected: 1 model.").await;
    assert_placeholders_fit(&app, ".settings").await;

    // An Ollama server at an OpenAI-style address: the error says so and offers the way out.
    app.choose_in(".dialect", "ollama").await;
    let address = app.wait_for(".base-url").await;
    address.clear().await.unwrap();
    address
        .send_keys(format!("{}/v1", server.url()))
        .await
        .unwrap();
    app.wait_for_text(".status", "Checked when you stop typing")
        .await;
    let failure = app.wait_for_text(".status.error-text", "404").await;
    // In the theme's danger colour, not the muted grey of a hint.
    let colours = app
        .js("const probe = document.createElement('span'); document.body.append(probe); \
             probe.style.color = 'var(--danger)'; const danger = getComputedStyle(probe).color; \
             probe.style.color = 'var(--muted)'; const muted = getComputedStyle(probe).color; \
             probe.remove(); \
             return [getComputedStyle(document.querySelector('.status.error-text')).color, danger, muted];")
        .await;
    assert_eq!(colours[0], colours[1], "{colours}");
    assert_ne!(colours[1], colours[2], "{colours}");
    assert!(text_of(&failure).await.contains("OpenAI-compatible"));
    app.screenshot("settings-dialect-hint").await;
    app.click(".switch-dialect").await;
    app.wait_for_text(".status", "Connected: 1 model.").await;
    assert_eq!(
        app.js("return document.querySelector('.dialect').value;")
            .await,
        json!("openai")
    );

    // A typo in the address is explained in words.
    let address = app.wait_for(".base-url").await;
    address.clear().await.unwrap();
    address.send_keys("localhost:11434").await.unwrap();
    let said = text_of(&app.wait_for_text(".status.error-text", "http://").await).await;
    assert!(said.contains("needs http:// or https://"), "{said}");
    assert!(!said.contains("relative URL"), "{said}");

    // Saving an address nothing answers at: saved, and said to be unreachable.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let address = app.wait_for(".base-url").await;
    address.clear().await.unwrap();
    address.send_keys(&nowhere).await.unwrap();
    app.wait_for_text(".status.error-text", "could not connect")
        .await;
    app.click(".save-settings").await;
    app.wait_for_text(".toast", "Settings saved, but the server cannot be used")
        .await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_first_run_screen_offers_the_other_api_when_the_address_speaks_it() {
    let server = Model::start().await;
    server.fallback("GET /v1/models", only_test_model());
    let home = Home::new();
    let app = server.launch_first_run(&home).await;
    app.open_custom_server().await;
    app.choose_in(".custom-server select", "ollama").await;
    let address = app.wait_for(".custom-url").await;
    address
        .send_keys(format!("{}/v1", server.url()))
        .await
        .unwrap();
    app.click(".connect").await;
    // Said beside the address, not in a toast that leaves: what failed and the way out.
    let failure = text_of(
        &app.wait_for_text(".custom-server .status.error-text", "404")
            .await,
    )
    .await;
    assert!(failure.contains("OpenAI-compatible"), "{failure}");
    assert_eq!(app.count(".model-choice").await, 0);
    app.screenshot("first-run-dialect-hint").await;
    app.click(".custom-server .switch-dialect").await;
    app.wait_for_text(".model-choice", "test-model").await;
    assert_eq!(
        app.js("return document.querySelector('.custom-server select').value;")
            .await,
        json!("openai")
    );
    assert_eq!(app.count(".custom-server .status.error-text").await, 0);
    app.click(".model-choice").await;
    app.wait_for(".composer-input").await;
    app.quit().await;
}

/// An OpenAI-compatible server's model list with one model, the harness's.
fn only_test_model() -> Reply {
    Reply::json(
        200,
        r#"{"object":"list","data":[{"id":"test-model","object":"model"}]}"#,
    )
}
