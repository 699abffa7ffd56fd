// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // The context is generated here, in the one crate that `cargo test` and `cargo
    // bench` compile once: tauri-codegen caches each compressed asset in a file it
    // checks for before writing, so two compilations running the macro at once (the
    // library and its test harness) could embed a half-written wasm, and the window
    // stayed blank.
    cairn_desktop::run(tauri::generate_context!());
}
