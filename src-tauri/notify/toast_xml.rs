//! A notification as the XML a Windows toast is made from (the toast schema's
//! `ToastGeneric` template). Kept apart from the WinRT calls so that what a toast says
//! and which argument each of its parts answers with is tested on every system.

use std::fmt::Write as _;

use super::{Message, OPEN};

/// The toast for `message`: its summary and body as two lines of text; a click on it
/// answers with [`OPEN`], and every other action is a button answering with its key.
pub fn toast(message: &Message) -> String {
    let mut xml = format!(
        r#"<toast launch="{OPEN}"><visual><binding template="ToastGeneric"><text>{}</text><text>{}</text></binding></visual>"#,
        escaped(&message.summary),
        escaped(&message.body),
    );
    let buttons: Vec<_> = message
        .actions
        .iter()
        .filter(|(key, _)| *key != OPEN)
        .collect();
    if !buttons.is_empty() {
        xml.push_str("<actions>");
        for (key, label) in buttons {
            // Infallible: writing to a String.
            let _ = write!(
                xml,
                r#"<action content="{}" arguments="{}"/>"#,
                escaped(label),
                escaped(key)
            );
        }
        xml.push_str("</actions>");
    }
    xml.push_str("</toast>");
    xml
}

/// Text as XML takes it in an element or an attribute: a thread's title is the user's
/// own words and may hold any of these.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{approval_message, finished_message};
    use super::*;
    use cairn_protocol::TurnStatus;

    #[test]
    fn an_approval_is_a_toast_that_opens_on_a_click_with_allow_and_deny_buttons() {
        let xml = toast(&approval_message("Notes", "write_file", true));
        assert_eq!(
            xml,
            concat!(
                r#"<toast launch="default"><visual><binding template="ToastGeneric">"#,
                "<text>Notes needs your approval</text>",
                "<text>Cairn wants to use write_file. Allow it once, deny it, or open the chat.</text>",
                "</binding></visual>",
                r#"<actions><action content="Allow" arguments="allow"/><action content="Deny" arguments="deny"/></actions>"#,
                "</toast>"
            )
        );
    }

    #[test]
    fn a_finished_turn_is_a_toast_without_buttons() {
        let xml = toast(&finished_message("Notes", TurnStatus::Completed));
        assert_eq!(
            xml,
            concat!(
                r#"<toast launch="default"><visual><binding template="ToastGeneric">"#,
                "<text>Notes</text><text>The reply is ready.</text>",
                "</binding></visual></toast>"
            )
        );
    }

    #[test]
    fn a_title_with_markup_in_it_stays_text() {
        let xml = toast(&finished_message(
            r#"<b>Tom & "Jerry"'s</b> plan"#,
            TurnStatus::Failed,
        ));
        assert!(
            xml.contains("<text>&lt;b&gt;Tom &amp; &quot;Jerry&quot;&apos;s&lt;/b&gt; plan</text>"),
            "{xml}"
        );
        assert_eq!(xml.matches("<text>").count(), 2, "{xml}");
    }
}
