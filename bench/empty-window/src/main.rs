//! An empty window: what any Tauri + Leptos app costs before it does anything.

fn main() {
    tauri::Builder::default()
        .run(tauri::generate_context!())
        .expect("the empty window runs");
}
