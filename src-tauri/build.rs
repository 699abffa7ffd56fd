//! Generates the Tauri context; the app's commands go through the permission system
//! (listed here, granted in capabilities/), so the webview can call only those.

fn main() {
    // Every command defined for the webview gets its permission; the capability in
    // capabilities/ grants them (a test holds the two together).
    let commands = cairn_protocol::desktop::commands::ALL;
    // The built UI is embedded: a new build of it must rebuild the app.
    println!("cargo:rerun-if-changed=ui/dist");
    ensure_ui_dist();
    order_startup_code();
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

/// The release app's startup code laid out together. The kernel maps a program's code
/// 64 KB around each page it touches, and the functions that start and idle the app are
/// spread across all of its 7.3 MiB of code, so nearly all of it stayed resident; placed
/// first, in the order `src-tauri/startup-order.txt` lists them (written by
/// `scripts/startup-order` from a trace), half of it does (README "Benchmarks → The
/// desktop app"). The names carry crate hashes, so after a toolchain or dependency update
/// fewer of them match: lld skips those, and the layout decays to the default rather
/// than breaking the build.
fn order_startup_code() {
    println!("cargo:rerun-if-changed=src-tauri/startup-order.txt");
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let order =
        std::path::Path::new(&env("CARGO_MANIFEST_DIR")).join("src-tauri/startup-order.txt");
    let takes_it = orders_startup_code(
        &env("TARGET"),
        &env("PROFILE"),
        &env("CARGO_ENCODED_RUSTFLAGS"),
    );
    // `-Wl,` splits its argument at commas; the first trace runs without a list.
    if takes_it && order.exists() && !order.to_string_lossy().contains(',') {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the link takes the startup order: release builds for the one target whose
/// default linker is lld (Rust's own, since 1.90), unless the flags choose a linker.
/// GNU ld and the mingw linker of the Windows build do not know the option.
fn orders_startup_code(target: &str, profile: &str, encoded_rustflags: &str) -> bool {
    target == "x86_64-unknown-linux-gnu"
        && profile == "release"
        && !encoded_rustflags.contains("linker")
}
