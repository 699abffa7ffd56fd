//! Links in answers open in the user's browser (or mail client), never in the app's
//! own webview. Only web and mail addresses are opened: a model can write any link,
//! and `file:` or a custom scheme would run whatever handler the system has for it.

use std::process::Command;

use cairn_protocol::desktop::{CommandError, CommandErrorKind};

/// The schemes a link may have to be opened.
const OPENABLE: [&str; 3] = ["http", "https", "mailto"];

/// Checks `url` and hands it to the system's opener (`xdg-open`, `open`).
pub fn open(url: &str) -> Result<(), CommandError> {
    open_with(opener(), url)
}

fn open_with(mut opener: Command, url: &str) -> Result<(), CommandError> {
    let url = openable(url)?;
    let child = opener.arg(url).spawn().map_err(|err| CommandError {
        message: format!(
            "the link could not be opened: {} failed ({err})",
            opener.get_program().to_string_lossy()
        ),
        kind: CommandErrorKind::System,
    })?;
    // The opener hands the link over and exits: reap it off the caller's thread.
    std::thread::spawn(move || {
        let mut child = child;
        if let Ok(status) = child.wait()
            && !status.success()
        {
            tracing::warn!(%status, "the system's opener refused a link");
        }
    });
    Ok(())
}

/// `url` trimmed, if it is an address Cairn opens.
pub fn openable(url: &str) -> Result<&str, CommandError> {
    let url = url.trim();
    let refuse = |why: &str| CommandError {
        message: format!("{why}: {url}"),
        kind: CommandErrorKind::Invalid,
    };
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err(refuse(
            "only web and mail links are opened, not relative ones",
        ));
    };
    if !OPENABLE
        .iter()
        .any(|allowed| scheme.eq_ignore_ascii_case(allowed))
    {
        return Err(refuse("only web and mail links are opened"));
    }
    if rest.trim_start_matches('/').is_empty() || url.chars().any(char::is_control) {
        return Err(refuse("this link has no address"));
    }
    Ok(url)
}

#[cfg(target_os = "macos")]
fn opener() -> Command {
    Command::new("open")
}

#[cfg(not(target_os = "macos"))]
fn opener() -> Command {
    Command::new("xdg-open")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use cairn_protocol::desktop::CommandErrorKind;

    use super::{open_with, openable};

    #[test]
    fn a_missing_opener_is_the_systems_failure_named() {
        let err =
            open_with(Command::new("/nonexistent/xdg-open"), "https://example.com").unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::System);
        assert!(
            err.message.contains("/nonexistent/xdg-open"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_refused_link_never_reaches_the_opener() {
        let err =
            open_with(Command::new("/nonexistent/xdg-open"), "file:///etc/passwd").unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::Invalid);
    }

    #[test]
    fn web_and_mail_links_are_opened_and_nothing_else() {
        for url in [
            "https://example.com/a?b=c",
            "HTTP://example.com",
            " mailto:someone@example.com ",
        ] {
            assert!(openable(url).is_ok(), "{url}");
        }
        assert_eq!(openable(" https://x.org ").unwrap(), "https://x.org");
        for url in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "vscode://open",
            "docs/readme.md",
            "#section",
            "https://",
            "https://x.org/\nrm",
            "",
        ] {
            let err = openable(url).unwrap_err();
            assert!(err.message.contains("link"), "{url}: {}", err.message);
        }
    }
}
