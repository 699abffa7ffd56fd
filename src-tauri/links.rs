//! Links in answers open in the user's browser (or mail client), never in the app's
//! own webview. Only web and mail addresses are opened: a model can write any link,
//! and `file:` or a custom scheme would run whatever handler the system has for it.

use std::process::Command;
use std::time::Duration;

use cairn_protocol::desktop::{CommandError, CommandErrorKind};

/// The schemes a link may have to be opened.
const OPENABLE: [&str; 3] = ["http", "https", "mailto"];

/// How long the opener gets to say it failed. Most hand the link over and exit at
/// once; one still running after this has started a browser, which is success.
const OPENER_VERDICT: Duration = Duration::from_secs(5);

/// Checks `url` and hands it to the system's opener (`xdg-open`, `open`, Explorer's
/// URL handler); a refusal
/// by the opener (no browser set up, say) comes back as an error to show.
pub async fn open(url: &str) -> Result<(), CommandError> {
    open_with(opener(), url, OPENER_VERDICT).await
}

async fn open_with(opener: Command, url: &str, verdict: Duration) -> Result<(), CommandError> {
    let url = openable(url)?;
    let program = opener.get_program().to_string_lossy().into_owned();
    let mut opener = tokio::process::Command::from(opener);
    let mut child = opener
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|err| CommandError {
            message: format!("the link could not be opened: {program} failed ({err})"),
            kind: CommandErrorKind::System,
        })?;
    match tokio::time::timeout(verdict, child.wait()).await {
        Ok(Ok(status)) if !status.success() => Err(CommandError {
            message: format!(
                "the system could not open the link ({program} {}); is a web browser set \
                 up? The address: {url}",
                describe_exit(status)
            ),
            kind: CommandErrorKind::System,
        }),
        Ok(_) => Ok(()),
        // Still running: it is the browser, or waits for one. Reap it later.
        Err(_) => {
            tokio::spawn(async move { child.wait().await });
            Ok(())
        }
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "was stopped by a signal".to_owned(),
    }
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

/// The handler Explorer itself opens addresses with: unlike `explorer URL`, which
/// exits with 1 whatever happened, it exits with 0 once the link is handed over.
#[cfg(windows)]
fn opener() -> Command {
    let mut opener = Command::new("rundll32");
    opener.arg("url.dll,FileProtocolHandler");
    opener
}

#[cfg(not(any(target_os = "macos", windows)))]
fn opener() -> Command {
    Command::new("xdg-open")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use cairn_protocol::desktop::CommandErrorKind;

    use std::time::Duration;

    use super::{open_with, openable};

    const SOON: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_missing_opener_is_the_systems_failure_named() {
        let err = open_with(
            Command::new("/nonexistent/xdg-open"),
            "https://example.com",
            SOON,
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::System);
        assert!(
            err.message.contains("/nonexistent/xdg-open"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_refused_link_never_reaches_the_opener() {
        let err = open_with(
            Command::new("/nonexistent/xdg-open"),
            "file:///etc/passwd",
            SOON,
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::Invalid);
    }

    // The opener stands in as a Unix program (`false`, `sh`).
    #[cfg(unix)]
    #[tokio::test]
    async fn an_opener_that_fails_is_told_to_the_user() {
        let err = open_with(Command::new("false"), "https://example.com", SOON)
            .await
            .unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::System);
        assert!(
            err.message.contains("could not open the link")
                && err.message.contains("exited with status 1")
                && err.message.contains("https://example.com"),
            "{}",
            err.message
        );
        open_with(Command::new("true"), "https://example.com", SOON)
            .await
            .unwrap();
    }

    // The opener stands in as a Unix program (`false`, `sh`).
    #[cfg(unix)]
    #[tokio::test]
    async fn an_opener_still_running_has_started_a_browser() {
        // The link becomes $1 of a script that stays, as a browser would.
        let mut browser = Command::new("sh");
        browser.args(["-c", "sleep 30", "browser"]);
        let started = std::time::Instant::now();
        open_with(browser, "https://example.com", Duration::from_millis(200))
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
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
