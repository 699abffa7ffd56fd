//! The system clipboard, written from the main thread through GTK (the webview's own
//! `navigator.clipboard` depends on the WebKit build and its permission prompts;
//! GTK's clipboard is the one every Linux desktop reads).

use cairn_protocol::desktop::CommandError;

/// Puts `text` on the clipboard. Must run on the main thread.
#[cfg(target_os = "linux")]
pub fn copy(text: &str) -> Result<(), CommandError> {
    let clipboard = gtk::Clipboard::get(&gtk::gdk::SELECTION_CLIPBOARD);
    // Served by the app while it runs (it lives on in the tray); a clipboard manager,
    // where one runs, keeps a copy of its own.
    clipboard.set_text(text);
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn copy(_text: &str) -> Result<(), CommandError> {
    Err(CommandError {
        message: "copying is not available on this system yet".into(),
        kind: cairn_protocol::desktop::CommandErrorKind::System,
    })
}
