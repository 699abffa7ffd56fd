//! Generates the Tauri context; the app's commands go through the permission system
//! (listed here, granted in capabilities/), so the webview can call only those.

fn main() {
    // Every command defined for the webview gets its permission; the capability in
    // capabilities/ grants them (a test holds the two together).
    let commands = cairn_protocol::desktop::commands::ALL;
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
/// makes (it needs wasm-bindgen and the wasm target). So that `cargo check`, clippy and the
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
