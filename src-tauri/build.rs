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
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(commands))
        .capabilities_path_pattern("src-tauri/capabilities/**/*");
    if let Err(err) = tauri_build::try_build(attributes) {
        panic!("tauri build: {err:#}");
    }
}
