//! Generates the Tauri context; the app's commands go through the permission system
//! (listed here, granted in capabilities/), so the webview can call only those.

fn main() {
    let commands = &[
        "ui_ready",
        "send_message",
        "attach",
        "stop_turn",
        "answer_approval",
        "pending_approvals",
        "running_turns",
        "list_threads",
        "search_threads",
        "load_thread",
        "rename_thread",
        "delete_thread",
        "export_thread",
        "set_mode",
        "pick_workspace",
        "check_workspace",
        "set_workspace",
        "get_settings",
        "save_settings",
        "set_zoom",
        "open_link",
        "retry_turn",
        "detect_providers",
        "list_models",
        "pull_model",
        "set_api_key",
        "delete_api_key",
        "has_api_key",
        "list_rules",
        "add_rule",
        "remove_rule",
        "list_tools",
        "run_plan",
    ];
    // The built UI is embedded: a new build of it must rebuild the app.
    println!("cargo:rerun-if-changed=ui/dist");
    ensure_ui_dist();
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(commands))
        .capabilities_path_pattern("src-tauri/capabilities/**/*");
    if let Err(err) = tauri_build::try_build(attributes) {
        panic!("tauri build: {err:#}");
    }
}

/// `generate_context!` refuses to compile without `ui/dist`, which only `scripts/build-ui`
/// makes (it needs trunk and the wasm target). So that `cargo check`, clippy and the
/// host tests work on a fresh clone, a missing build becomes a page that says what to run.
fn ensure_ui_dist() {
    let dist = std::path::Path::new("ui/dist");
    if dist.join("index.html").exists() {
        return;
    }
    let page = "<!doctype html><meta charset=\"utf-8\"><title>Cairn</title>\
        <p style=\"font-family:sans-serif;margin:2em\">Cairn's interface has not been built. \
        Run <code>scripts/build-ui</code>, then build the app again \
        (<code>scripts/run-desktop</code> does both).</p>";
    std::fs::create_dir_all(dist)
        .and_then(|()| std::fs::write(dist.join("index.html"), page))
        .unwrap_or_else(|err| panic!("writing a placeholder ui/dist: {err}"));
}
