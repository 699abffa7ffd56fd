//! Cairn's desktop shell (placeholder while the build is set up).

pub fn run() {
    let context = tauri::generate_context!();
    if let Err(err) = tauri::Builder::default().run(context) {
        eprintln!("cairn: {err}");
    }
}
