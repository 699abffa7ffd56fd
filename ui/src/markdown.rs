//! Markdown to HTML for answers. Whatever the model writes, the result is safe to
//! put in the page: raw HTML is shown as text, links never navigate the app (a click
//! opens them in the browser), images
//! are replaced by their description (the app loads nothing remote).

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

pub fn to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        // Shown, never interpreted.
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::Link {
            dest_url, title, ..
        }) => Event::Html(CowStr::from(link_open(&dest_url, &title))),
        Event::End(TagEnd::Link) => Event::Html(CowStr::from("</a>")),
        // The description (the text events inside) is what is shown.
        Event::Start(Tag::Image { .. }) => Event::Html(CowStr::from("<span class=\"image-alt\">")),
        Event::End(TagEnd::Image) => Event::Html(CowStr::from("</span>")),
        other => other,
    });
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// The text of an answer still being written, as it reads so far: a link whose
/// address is still arriving (`[the guide](https://exa`) shows as its words, not as
/// raw brackets, until it is complete. Untouched inside code.
pub fn settle_streaming(markdown: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    // Links do not cross paragraphs; an open code fence or code span holds brackets
    // as they are.
    let paragraph = markdown.rfind("\n\n").map_or(0, |at| at + 2);
    let tail = &markdown[paragraph..];
    if markdown.matches("```").count() % 2 == 1 || tail.matches('`').count() % 2 == 1 {
        return Cow::Borrowed(markdown);
    }
    // A bracket before the last code span is inside it or done with.
    let after_code = tail.rfind('`').map_or(0, |at| at + 1);
    let Some(open) = tail[after_code..].rfind('[').map(|at| after_code + at) else {
        return Cow::Borrowed(markdown);
    };
    let rest = &tail[open + 1..];
    let label = match rest.split_once(']') {
        // `[label` or `[label]`: the link may be about to start.
        None => rest,
        Some((label, "")) => label,
        // `[label](partial`, its address not yet closed.
        Some((label, after)) if after.starts_with('(') && !after.contains(')') => label,
        Some(_) => return Cow::Borrowed(markdown),
    };
    if label.contains('[') {
        return Cow::Borrowed(markdown);
    }
    Cow::Owned(format!("{}{label}", &markdown[..paragraph + open]))
}

/// A link that never navigates the app: no `href`, its address in the tooltip and in
/// `data-href`, which a click hands to the system's browser (the app decides which
/// addresses it opens).
fn link_open(url: &str, title: &str) -> String {
    let shown = if title.is_empty() { url } else { title };
    format!(
        "<a class=\"link\" title=\"{}\" data-href=\"{}\">",
        escape_attribute(shown),
        escape_attribute(url)
    )
}

fn escape_attribute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{settle_streaming, to_html};

    #[test]
    fn a_link_still_arriving_reads_as_its_words() {
        let cases = [
            ("Read [the guide](https://exa", "Read the guide"),
            ("Read [the guide]", "Read the guide"),
            ("Read [the gu", "Read the gu"),
            (
                "Read [the guide](https://example.com) now",
                "Read [the guide](https://example.com) now",
            ),
            ("Done [x] and [y](z)", "Done [x] and [y](z)"),
            ("Code `a[0` here", "Code `a[0` here"),
            ("```\nlet a = [1,", "```\nlet a = [1,"),
            ("One.\n\nTwo [pa", "One.\n\nTwo pa"),
            ("No links here.", "No links here."),
        ];
        for (streamed, shown) in cases {
            assert_eq!(settle_streaming(streamed), shown, "{streamed:?}");
        }
    }

    #[test]
    fn code_lists_and_tables_render() {
        let html = to_html(
            "# Title\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(
            html.contains("<code class=\"language-rust\">fn main() {}"),
            "{html}"
        );
        assert!(
            html.contains("<table>") && html.contains("<td>2</td>"),
            "{html}"
        );
    }

    #[test]
    fn raw_html_is_text() {
        let html = to_html(
            "hi <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n<div onclick=x>block</div>",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn links_do_not_navigate_and_images_do_not_load() {
        let html = to_html(
            "[docs](https://example.com/\"x) and [x](javascript:alert(1)) ![a cat](http://cats/cat.png)",
        );
        assert!(!html.contains(" href="), "{html}");
        assert!(
            html.contains(
                "title=\"https://example.com/&quot;x\" data-href=\"https://example.com/&quot;x\""
            ),
            "{html}"
        );
        // Handed to the app on a click, which opens web and mail links only.
        assert!(html.contains("data-href=\"javascript:alert(1)\""), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("<span class=\"image-alt\">a cat</span>"),
            "{html}"
        );
    }
}
