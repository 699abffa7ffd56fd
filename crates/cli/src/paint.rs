//! Colour on a terminal, nothing elsewhere.

/// `text` in the terminal colour `code` (an SGR number) when `on`, else as it is.
pub(crate) fn painted(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}
