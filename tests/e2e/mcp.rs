//! MCP servers in the window: allowing, trusting, listing, an image a tool returns, and
//! a server that fails or is found only by the login shell.

use serde_json::json;

use crate::model::Model;
use crate::{
    CHAT,
    harness::{App, Home, text_of},
    pixels,
};

/// The misbehaving MCP server of `cairn-testkit`, built if this run has not.
pub(crate) fn mcp_fixture() -> std::path::PathBuf {
    cairn_testkit::mcp::stdio_fixture()
}

/// The fixture MCP server configured for `home`, and allowed to start, as a user
/// would have it after ticking "Start it" in Settings.
async fn allow_the_mcp_fixture(home: &Home) {
    std::fs::write(
        home.mcp_config(),
        json!({"mcpServers": {"fixture": {"command": mcp_fixture()}}}).to_string(),
    )
    .unwrap();
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime.allow_mcp_server("fixture", true).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_mcp_servers_read_only_marks_count_only_once_the_user_trusts_it() {
    let model = Model::start().await;
    for n in 0..2 {
        model.calls(
            &format!("e{n}"),
            "mcp__fixture__echo",
            json!({"text": format!("echo {n}")}),
        );
        model.says(&[&format!("Echoed {n}.")]);
    }
    let home = Home::new();
    allow_the_mcp_fixture(&home).await;

    let app = model.launch(&home).await;
    // Untrusted, the server's "read-only" is only its claim: the call asks.
    app.send("Echo once").await;
    app.wait_for_text(".approval", "mcp__fixture__echo").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Echoed 0.")
        .await;

    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(".mcp-server[data-server='fixture'] .mcp-status", "running")
        .await;
    app.click(".mcp-server[data-server='fixture'] .mcp-trusted")
        .await;
    app.wait_for_js(
        "return document.querySelector(\".mcp-server[data-server='fixture'] .mcp-trusted\").checked;",
    )
    .await;
    app.screenshot("settings-mcp-trusted").await;
    app.click(".back-to-chat").await;
    app.click(".new-chat").await;
    app.send("Echo again").await;
    app.wait_for_text(".message.assistant .md", "Echoed 1.")
        .await;
    assert_eq!(
        app.count(".approval").await,
        0,
        "trusted: it ran without asking"
    );
    // The window also asks about the model (GET /v1/models): only chat bodies count.
    let requests = model.requests_to(CHAT);
    let last = requests.last().unwrap().json();
    assert!(last.to_string().contains("echo 1"), "the tool ran: {last}");
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn a_slash_lists_the_commands_as_you_type_and_mcp_shows_the_servers() {
    let model = Model::start().await;
    let home = Home::new();
    allow_the_mcp_fixture(&home).await;
    let app = model.launch(&home).await;
    let input = app.wait_for(".composer-input").await;

    input.send_keys("/").await.unwrap();
    app.wait_for(".slash-list").await;
    assert_eq!(
        app.count(".slash-item").await,
        10,
        "a bare slash offers every command"
    );
    input.send_keys("mo").await.unwrap();
    app.wait_for_js("return document.querySelectorAll('.slash-item').length === 2")
        .await;
    let read = pixels::readable_text(&app, ".slash-list", "slash-list").await;
    pixels::assert_reads(
        &read,
        &["/mode", "show or set what tool calls may do", "/model"],
        "the command list",
    );
    // Down to /model, and Tab completes it for its argument.
    input.send_keys(thirtyfour::Key::Down).await.unwrap();
    app.wait_for(".slash-item.selected:nth-child(2)").await;
    input.send_keys(thirtyfour::Key::Tab).await.unwrap();
    app.wait_for_js("return document.querySelector('.composer-input').value === '/model '")
        .await;
    assert_eq!(app.count(".slash-list").await, 0, "chosen: the list goes");

    // Esc puts the list away without touching the text.
    input.clear().await.unwrap();
    input.send_keys("/").await.unwrap();
    app.wait_for(".slash-list").await;
    input.send_keys(thirtyfour::Key::Escape).await.unwrap();
    app.wait_for_js("return !document.querySelector('.slash-list')")
        .await;
    assert_eq!(
        app.js("return document.querySelector('.composer-input').value")
            .await,
        "/"
    );

    // Enter on a command that takes nothing more runs it: /mcp lists the servers.
    input.send_keys("mc").await.unwrap();
    app.wait_for_text(".slash-item.selected", "/mcp").await;
    input.send_keys(thirtyfour::Key::Enter).await.unwrap();
    let listing = app.wait_for_text(".notice-line", "fixture — running").await;
    let listing = text_of(&listing).await;
    assert!(
        listing.contains("  tools: ") && listing.contains("echo") && listing.contains("shout"),
        "{listing}"
    );
    app.screenshot("slash-mcp").await;
    assert!(
        model.requests_to(CHAT).is_empty(),
        "commands never reach the model"
    );
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_image_an_mcp_tool_returns_is_drawn_in_its_card_and_shown_to_the_model() {
    let model = Model::start().await;
    model.calls("c1", "mcp__fixture__chart", json!({}));
    model.says(&["Orange over blue."]);
    let home = Home::new();
    allow_the_mcp_fixture(&home).await;
    let app = model.launch(&home).await;
    app.send("Chart the sales").await;
    app.wait_for_text(".approval", "chart").await;
    app.click(".approval-buttons .primary").await;
    app.wait_for_text(".message.assistant .md", "Orange over blue.")
        .await;

    // Drawn, not only in the page: the chart's two colours are on the screen.
    let shot = pixels::region(&app, ".card[data-card='c1'] .card-image", "card-image").await;
    assert_chart_colours(&shot);
    let card = text_of(&app.wait_for(".card[data-card='c1'] .card-result").await).await;
    assert!(card.contains("[image 1: image/png, 1 KB]"), "{card}");

    // The model saw it: after the result, a user message with the image.
    let second = model.requests_to(CHAT)[1].json();
    let messages = second["messages"].as_array().unwrap();
    let shown = messages.last().unwrap();
    assert_eq!(shown["role"], "user", "{second}");
    assert_eq!(
        shown["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{}", cairn_testkit::mcp::CHART_PNG)
    );
    app.quit().await;

    // A stored call draws its image again.
    let app = model.launch(&home).await;
    app.open_chat("Chart the sales").await;
    let shot = pixels::region(
        &app,
        ".card[data-card='c1'] .card-image",
        "card-image-stored",
    )
    .await;
    assert_chart_colours(&shot);
    app.quit().await;
}

/// The fixture's chart on the screen: its orange half and its blue half.
fn assert_chart_colours(shot: &std::path::Path) {
    let white = [0xff, 0xff, 0xff];
    let orange = pixels::inked(shot, white, [0xd9, 0x48, 0x0f]);
    let blue = pixels::inked(shot, white, [0x1c, 0x7e, 0xd6]);
    assert!(
        orange > 1000 && blue > 1000,
        "{}: orange pixels {orange}, blue pixels {blue}",
        shot.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_allowed_mcp_server_that_fails_to_start_is_reported() {
    let model = Model::start().await;
    let home = Home::new();
    std::fs::write(
        home.mcp_config(),
        r#"{"mcpServers": {"broken-tools": {"command": "/nonexistent/mcp-server"}}}"#,
    )
    .unwrap();
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime
        .allow_mcp_server("broken-tools", true)
        .await
        .unwrap();
    drop(runtime);

    let app = model.launch(&home).await;
    // Said once the window is up, though the failure came before it listened.
    app.wait_for_text(".toast", "broken-tools").await;
    app.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Xvfb, a session bus and tauri-driver: run scripts/test"]
async fn an_mcp_server_only_the_login_shell_can_find_starts_from_a_desktop_launch() {
    use std::os::unix::fs::PermissionsExt;
    let model = Model::start().await;
    let home = Home::new();
    // A folder only the user's login shell puts on PATH (nvm, uv, ~/.local/bin): the
    // app, started the way a desktop entry starts it, does not have it.
    let own_bin = home.dir.path().join("own-bin");
    std::fs::create_dir_all(&own_bin).unwrap();
    let script = |path: &std::path::Path, body: String| {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        &own_bin.join("fake-npx"),
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", mcp_fixture().display()),
    );
    // The login shell: its profile adds that folder (called as `-i -l -c SCRIPT`).
    let login_shell = home.dir.path().join("login-shell");
    script(
        &login_shell,
        format!(
            "#!/bin/sh\nPATH='{}':\"$PATH\"; export PATH\nshift 3\nexec /bin/sh -c \"$1\"\n",
            own_bin.display()
        ),
    );
    std::fs::write(
        home.mcp_config(),
        json!({"mcpServers": {"npx-style": {"command": "fake-npx"}}}).to_string(),
    )
    .unwrap();
    let own_path = std::env::var("PATH").unwrap();
    assert!(
        !own_path.contains("own-bin"),
        "the app's PATH lacks the folder"
    );
    let store = cairn_store::Store::open(home.db()).await.unwrap();
    let runtime = cairn_runtime::Runtime::new(store, cairn_core::Limits::default());
    runtime.allow_mcp_server("npx-style", true).await.unwrap();
    drop(runtime);

    let shell = login_shell.display().to_string();
    let app = App::launch_with(&home, &model.url(), &[("SHELL", &shell)]).await;
    app.click(".chat-head [aria-label='Settings']").await;
    app.wait_for_text(
        ".mcp-server[data-server='npx-style'] .mcp-status",
        "running",
    )
    .await;
    app.quit().await;
}
