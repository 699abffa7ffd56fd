//! Answers: streaming, stopping, what one took, regenerate, edit and retry, copying,
//! links, and an answer the server cut.

use std::time::Duration;

use cairn_testkit::{Reply, sse};
use serde_json::json;

use crate::model::Model;
use crate::{
    CHAT, first_chat_request, gated,
    harness::{self, Home, text_of},
    held_answer, llama_cpp_models, numbered, pixels,
};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_answer_tells_what_it_took_on_hover_and_the_chat_menu_its_totals() {
    let model = Model::start().await;
    // 10 prompt tokens and 2 completion tokens (one per piece), as every fake stream.
    model.says(&["Hello", " there."]);
    let home = Home::new();
    let app = model.launch(&home).await;

    // A price, set in Settings, for the model the chat uses.
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for(".prices-section .price-model")
        .await
        .send_keys("test-model")
        .await
        .unwrap();
    app.wait_for(".price-prompt")
        .await
        .send_keys("1000")
        .await
        .unwrap();
    app.wait_for(".price-completion")
        .await
        .send_keys("abc")
        .await
        .unwrap();
    app.click(".add-price").await;
    app.wait_for_text(".toast", "The completion price must be a number")
        .await;
    assert_eq!(app.count(".price").await, 0, "a bad price is not kept");
    // The toast sits over the bottom of the page, where the field may have scrolled.
    app.click(".toast [aria-label='Dismiss']").await;
    app.wait_for_js("return !document.querySelector('.toast')")
        .await;
    let completion = app.wait_for(".price-completion").await;
    completion.scroll_into_view().await.unwrap();
    completion.clear().await.unwrap();
    completion.send_keys("2000").await.unwrap();
    app.click(".add-price").await;
    app.wait_for_text(
        ".price[data-model='test-model']",
        "1000 in, 2000 out per million tokens",
    )
    .await;
    app.screenshot("usage-prices").await;
    app.click(".back-to-chat").await;

    app.send("Say hello").await;
    app.wait_for_text(".message.assistant .md", "Hello there.")
        .await;
    // (10 × 1000 + 2 × 2000) per million.
    let expected = ["12 tokens (10 in, 2 out)", "1 model call", "cost 0.0140"];
    let line = app.wait_for(".message.assistant .answer-usage").await;
    let visibility = "return getComputedStyle(document.querySelector('.answer-usage')).visibility";
    app.hover(".chat-title").await;
    assert_eq!(
        app.js(visibility).await,
        "hidden",
        "out of the way until looked for"
    );
    app.hover(".message.assistant .md").await;
    assert_eq!(app.js(visibility).await, "visible");
    // On the row of the answer's actions, not a line of its own that stays blank
    // under every answer while hidden.
    let same_row = app
        .js(
            "const box = css => document.querySelector(css).getBoundingClientRect(); \
             const line = box('.message.assistant .answer-usage'); \
             const copy = box('.message.assistant .copy-answer'); \
             return Math.abs(line.top + line.bottom - copy.top - copy.bottom) / 2 < copy.height / 2;",
        )
        .await;
    assert_eq!(same_row, json!(true), "the usage line shares the Copy row");
    for part in expected {
        app.wait_for_text(".message.assistant .answer-usage", part)
            .await;
    }
    let read =
        pixels::readable_text(&app, ".message.assistant .answer-usage", "usage-answer").await;
    pixels::assert_reads(&read, &expected, "the answer's usage");
    let live = text_of(&line).await;

    app.click(".head-menu button").await;
    let totals = app.wait_for_text(".usage-totals", "1 model call").await;
    let totals = text_of(&totals).await;
    for part in ["12 tokens (10 in, 2 out)", "0 tool calls", "cost 0.0140"] {
        assert!(totals.contains(part), "{part:?} in {totals:?}");
    }
    let read = pixels::readable_text(&app, ".usage-totals", "usage-totals").await;
    pixels::assert_reads(
        &read,
        &["This chat", "1 model call", "cost 0.0140"],
        "the chat's totals",
    );
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_js("return !document.querySelector('.head-menu .menu')")
        .await;
    app.quit().await;

    // After a restart the answer tells the same.
    let app = model.launch(&home).await;
    app.open_chat("Say hello").await;
    app.wait_for(".message.assistant .answer-usage").await;
    app.hover(".message.assistant .md").await;
    app.wait_for_text(".message.assistant .answer-usage", &live)
        .await;
    app.screenshot("usage-restarted").await;
    app.quit().await;
}

/// `line` with each "12 ms" read as "N ms": how long a call took is not the test's.
pub(crate) fn without_durations(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            let is_count = !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit());
            if is_count && words.get(i + 1) == Some(&"ms") {
                "N"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn stop_mid_stream_keeps_the_partial_text() {
    let model = Model::start().await;
    // The answer holds after two words for as long as the test needs: it is stopped
    // there, never let go.
    model.push(CHAT, held_answer(&numbered("word", 30), 2, "never"));
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Write a long text").await;
    app.wait_for_text(".message.assistant .md", "word2").await;
    app.wait_for(".stop").await;
    // Esc in the composer is the Stop button's shortcut.
    app.press(thirtyfour::Key::Escape).await;
    app.wait_for_text(".notice.muted", "Stopped.").await;
    let shown = text_of(&app.wait_for(".message.assistant .md").await).await;
    assert_eq!(shown.trim(), "word1 word2", "the stream was stopped");
    app.screenshot("stopped").await;

    // What was kept is what the store has: open the thread afresh.
    app.click(".new-chat").await;
    app.open_chat("Write a long text").await;
    let stored = text_of(&app.wait_for_text(".message.assistant .md", "word1").await).await;
    assert_eq!(stored.trim(), shown.trim());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn reopening_a_running_chat_shows_what_streamed_and_goes_on_live() {
    let model = Model::start().await;
    let pieces = numbered("part", 24);
    // Two parts stream while the chat is open, two more while it is closed; the rest
    // waits until it is open again.
    let text: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let parts = sse::answer_parts(&[], &text);
    model.push(
        CHAT,
        gated(
            parts,
            &[(None, 3), (Some("closed"), 2), (Some("reopened"), 21)],
        ),
    );
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Stream for a while").await;
    app.wait_for_text(".message.assistant .md", "part2").await;
    app.click(".new-chat").await;
    app.wait_for(".welcome").await;
    model.open_gate("closed");

    app.open_chat("Stream for a while").await;
    // What streamed while the chat was closed is there at once, in order...
    let shown = text_of(&app.wait_for_text(".message.assistant .md", "part4").await).await;
    assert_eq!(shown.trim(), "part1 part2 part3 part4");
    // ...and the rest arrives live, exactly once.
    model.open_gate("reopened");
    // Read once finished: the answer being written is drawn by appending, and the
    // finished one whole, in a new element; one held across that moment reads empty.
    let done = text_of(
        &app.wait_for_text(".message.assistant .turn.finished .md", "part24")
            .await,
    )
    .await;
    assert_eq!(done.trim(), pieces.concat().trim());
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn the_last_answer_regenerates_and_the_last_question_is_edited_in_place() {
    let model = Model::start().await;
    for answer in ["Five.", "Four.", "Six."] {
        model.says(&[answer]);
    }
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("What is 2 + 2?").await;
    app.wait_for_text(".message.assistant .md", "Five.").await;

    app.click(".answer-actions .regenerate").await;
    app.wait_for_text(".message.assistant .md", "Four.").await;
    assert_eq!(
        app.count(".message.assistant").await,
        1,
        "in the old one's place"
    );
    assert_eq!(
        app.count(".message.user").await,
        1,
        "the question is not asked twice"
    );

    app.hover(".message.user .bubble").await;
    app.click(".edit-question").await;
    let edit = app.wait_for(".edit-input").await;
    edit.clear().await.unwrap();
    edit.send_keys("What is 3 + 3?").await.unwrap();
    edit.send_keys(thirtyfour::Key::Enter).await.unwrap();
    app.wait_for_text(".message.assistant .md", "Six.").await;
    app.wait_for_text(".message.user .bubble", "What is 3 + 3?")
        .await;
    assert_eq!(app.count(".edit-input").await, 0);
    assert_eq!(app.count(".message.user").await, 1);
    let asked: Vec<String> = model
        .requests_to(CHAT)
        .iter()
        .map(|r| {
            let messages = r.json()["messages"].as_array().unwrap().clone();
            cairn_testkit::wire::users_words(messages.last().unwrap()).to_owned()
        })
        .collect();
    assert_eq!(
        asked,
        ["What is 2 + 2?", "What is 2 + 2?", "What is 3 + 3?"]
    );
    let live = app.thread_lines().await;
    app.screenshot("edited-question").await;
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("What is 2 + 2?").await;
    app.wait_for_text(".message.assistant .md", "Six.").await;
    assert_eq!(app.thread_lines().await, live, "stored as shown");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn retry_answers_the_failed_question_again_in_its_place() {
    let model = Model::start().await;
    model.push(
        CHAT,
        Reply::json(400, r#"{"error":{"message":"the model is warming up"}}"#),
    );
    model.says(&["It is 4."]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("What is 2 + 2?").await;
    app.wait_for_text(".notice.error", "warming up").await;
    // Pressed the moment it shows, as an impatient user would.
    app.wait_for(".notice.error .retry").await;
    app.js("document.querySelector('.notice.error .retry').click();")
        .await;
    app.wait_for_text(".message.assistant .md", "It is 4.")
        .await;
    assert_eq!(app.count(".notice.error").await, 0, "the failure gave way");
    assert_eq!(app.count(".message.user").await, 1, "asked once");

    // So it is stored: the reopened chat has the question once and the new answer.
    app.quit().await;
    let app = model.launch(&home).await;
    app.click(".thread-open").await;
    app.wait_for_text(".message.assistant .md", "It is 4.")
        .await;
    assert_eq!(app.count(".message.user").await, 1);
    assert_eq!(app.count(".notice.error").await, 0);
    app.quit().await;
}

/// What the app put on the clipboard, as another program pastes it, or why nothing
/// could be pasted (no owner yet, or one that did not answer).
fn clipboard() -> Result<String, String> {
    let out = std::process::Command::new("xclip")
        .args(["-o", "-selection", "clipboard"])
        .output()
        .expect("xclip runs (apt install xclip)");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    String::from_utf8(out.stdout).map_err(|_| "not text".to_owned())
}

/// Waits until the clipboard holds `expected` (the copy goes through the app's
/// command, so it lands a moment after the click; while the selection changes hands a
/// paste can find no owner, which is no answer yet either).
async fn assert_clipboard(expected: &str, what: &str) {
    let start = std::time::Instant::now();
    loop {
        let now = clipboard();
        if now.as_deref() == Ok(expected) {
            return;
        }
        assert!(
            start.elapsed() < harness::PATIENCE,
            "{what}: the clipboard holds {now:?}, not {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn code_is_coloured_and_code_answers_and_questions_copy_to_the_clipboard() {
    let answer = "Here it is:\n\n```rust\n// greet\nfn main() {\n    println!(\"hello, world\");\n}\n```\n\nRun it with `cargo run`.";
    let code = "// greet\nfn main() {\n    println!(\"hello, world\");\n}";
    let model = Model::start().await;
    model.says(&[answer]);
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Show me hello world in Rust").await;
    app.wait_for_text(".message.assistant .md", "Run it with")
        .await;
    app.wait_for_text(".code-block .code-lang", "rust").await;

    // Coloured on the screen, not only marked: the keyword's and the string's colours
    // are among the painted pixels, and the code reads.
    let shot = pixels::region(&app, ".code-block", "code-block").await;
    let paper = [0xef, 0xef, 0xec];
    let keyword = pixels::inked(&shot, paper, [0x8e, 0x3f, 0xb3]);
    let string = pixels::inked(&shot, paper, [0x2a, 0x73, 0x1c]);
    assert!(
        keyword > 10 && string > 30,
        "{}: keyword pixels {keyword}, string pixels {string}",
        shot.display()
    );
    let read = pixels::readable_text(&app, ".code-block", "code-block-read").await;
    pixels::assert_reads(
        &read,
        &["fn main", "println", "hello, world", "Copy"],
        "the code block",
    );
    let live_block = app
        .js("return document.querySelector('.code-block').outerHTML")
        .await;

    // Before any click: a focused button inside the answer shows them too.
    let visibility = "return getComputedStyle(document.querySelector('.copy-answer')).visibility";
    app.hover(".chat-title").await;
    assert_eq!(
        app.js(visibility).await,
        "hidden",
        "out of the way until looked for"
    );

    // "Copied" shows for a moment only: a watcher in the page sees it however slowly
    // the test's polls come round on a busy machine.
    app.js(
        "const button = document.querySelector('.code-block .code-copy'); \
         window.sawCopied = false; \
         new MutationObserver(() => { \
           if (button.textContent === 'Copied') { window.sawCopied = true; } \
         }).observe(button, {childList: true, characterData: true, subtree: true});",
    )
    .await;
    app.click(".code-block .code-copy").await;
    app.wait_for_js("return window.sawCopied === true;").await;
    assert_clipboard(code, "the code block").await;
    // The label comes back, so the next copy can be seen too.
    app.wait_for_text(".code-block .code-copy", "Copy").await;

    app.hover(".message.assistant .md").await;
    app.wait_for_js(&format!("{visibility} === 'visible';"))
        .await;
    app.click(".copy-answer").await;
    assert_clipboard(answer, "the answer").await;

    app.hover(".message.user .bubble").await;
    app.click(".copy-question").await;
    assert_clipboard("Show me hello world in Rust", "the question").await;
    app.screenshot("copied-question").await;
    app.quit().await;

    // A stored answer draws its code the same.
    let app = model.launch(&home).await;
    app.open_chat("Show me hello world in Rust").await;
    app.wait_for(".code-block .hl-k").await;
    assert_eq!(
        app.js("return document.querySelector('.code-block').outerHTML")
            .await,
        live_block
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_link_in_an_answer_opens_in_the_browser_and_only_web_links_do() {
    let model = Model::start().await;
    model.push(
        CHAT,
        Reply::sse(sse::text(&[
            "Read [the guide](https://example.com/guide?page=2) ",
            "but not [this](file:///etc/passwd).",
        ])),
    );
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Where are the docs?").await;
    app.wait_for_text(".md a.link", "the guide")
        .await
        .click()
        .await
        .unwrap();
    let start = std::time::Instant::now();
    while home.opened_links().is_empty() && start.elapsed() < harness::PATIENCE {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(home.opened_links(), ["https://example.com/guide?page=2"]);
    assert_eq!(
        app.count(".composer-input").await,
        1,
        "the app's page stays"
    );

    app.wait_for_text(".md a.link", "this").await;
    app.js("Array.from(document.querySelectorAll('.md a.link')).find(a => a.textContent === 'this').click();")
        .await;
    app.wait_for_text(".toast", "only web and mail links are opened")
        .await;
    assert_eq!(home.opened_links().len(), 1, "the file link was not opened");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_streaming_answer_reads_as_it_is_written() {
    let model = Model::start().await;
    // opening, reasoning | text 1 | text 2, close: the test opens each gate in turn.
    let parts = sse::answer_parts(
        &["Let me think about links."],
        &["Read [the guide](https://exa", "mple.com/guide) today."],
    );
    model.push(
        CHAT,
        gated(
            parts,
            &[(None, 2), (Some("reasoned"), 1), (Some("half-link"), 2)],
        ),
    );
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("Where is the guide?").await;
    // The model reasons: its reasoning is open to read as it comes.
    app.wait_for_text(".reasoning-text", "think about links")
        .await;
    assert_eq!(
        app.js("return document.querySelector('.reasoning').open;")
            .await,
        json!(true),
        "open while it streams"
    );
    model.open_gate("reasoned");
    // Half a link streamed: its words, no raw brackets, and no "Thinking…" beside the text.
    let shown = text_of(
        &app.wait_for_text(".message.assistant .md", "the guide")
            .await,
    )
    .await;
    assert!(!shown.contains("]("), "no raw link syntax: {shown:?}");
    assert_eq!(
        app.count(".message.assistant .chip").await,
        0,
        "the text shows it is writing"
    );
    assert_eq!(
        app.js("return document.querySelector('.reasoning').open;")
            .await,
        json!(false),
        "folded once the answer starts"
    );
    app.screenshot("streaming-half-link").await;
    model.open_gate("half-link");
    app.wait_for_text(".message.assistant .md", "today.").await;
    app.wait_for_text(".md a.link", "the guide").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_answer_the_server_cut_at_its_length_says_so_and_keeps_its_text() {
    let model = Model::start().await;
    model.fallback("GET /v1/models", llama_cpp_models(4096));
    // A server that says its window is sent the prompt ahead: a dot answers that.
    model.respond(CHAT, |request: &cairn_testkit::Recorded| {
        Reply::sse(if cairn_testkit::wire::is_warm_up(&request.json()) {
            sse::text(&["."])
        } else {
            sse::text_ending(&["The code word is", " the code word is", " the"], "length")
        })
    });
    let home = Home::new();
    let app = model.launch(&home).await;
    app.send("What is the code word?").await;
    let notice = ".message.assistant .notice.cut";
    app.wait_for_text(notice, "The model stopped at its length limit")
        .await;
    app.wait_for_text(
        ".message.assistant .md",
        "The code word is the code word is the",
    )
    .await;
    assert_eq!(
        app.count(".message.assistant .notice.error").await,
        0,
        "not a failure"
    );
    assert!(
        first_chat_request(&model)["max_tokens"]
            .as_u64()
            .is_some_and(|max| max <= 1024),
        "the answer's room"
    );
    app.screenshot("cut-at-length").await;
    let live = app.thread_lines().await;
    app.quit().await;

    let app = model.launch(&home).await;
    app.open_chat("What is the code word?").await;
    app.wait_for_text(notice, "The model stopped at its length limit")
        .await;
    assert_eq!(app.thread_lines().await, live);
    assert_eq!(app.count(".message.assistant .notice.error").await, 0);
    app.quit().await;
}
