//! Markdown to HTML for answers. Whatever the model writes, the result is safe to
//! put in the page: raw HTML is shown as text, links never navigate the app (a click
//! opens them in the browser), images
//! are replaced by their description (the app loads nothing remote).

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

/// The Markdown an answer may use: CommonMark with GitHub's tables, strikethrough and
/// task lists.
pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM
}

pub fn to_html(markdown: &str) -> String {
    let options = options();
    let mut events = Vec::new();
    // A code block's text, gathered to be coloured and drawn as one piece.
    let mut code: Option<(String, String)> = None;
    for event in Parser::new_ext(markdown, options) {
        match (event, &mut code) {
            (Event::Start(Tag::CodeBlock(kind)), _) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info.trim().to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((language, String::new()));
            }
            (Event::Text(text), Some((_, body))) => body.push_str(&text),
            (Event::End(TagEnd::CodeBlock), Some(_)) => {
                let (language, body) = code.take().unwrap_or_default();
                events.push(Event::Html(CowStr::from(code_block(&language, &body))));
            }
            // Shown, never interpreted.
            (Event::Html(html) | Event::InlineHtml(html), _) => events.push(Event::Text(html)),
            (
                Event::Start(Tag::Link {
                    dest_url, title, ..
                }),
                _,
            ) => events.push(Event::Html(CowStr::from(link_open(&dest_url, &title)))),
            (Event::End(TagEnd::Link), _) => events.push(Event::Html(CowStr::from("</a>"))),
            // The description (the text events inside) is what is shown.
            (Event::Start(Tag::Image { .. }), _) => {
                events.push(Event::Html(CowStr::from("<span class=\"image-alt\">")));
            }
            (Event::End(TagEnd::Image), _) => events.push(Event::Html(CowStr::from("</span>"))),
            (other, _) => events.push(other),
        }
    }
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    html
}

/// A code block: its language and a copy button over the coloured code (the window
/// handles the button's click for every block at once, see `thread_view`). A block
/// still being written has no closing fence yet and is drawn the same.
fn code_block(language: &str, body: &str) -> String {
    let shape = CodeShape::of(language);
    let mut html = String::with_capacity(body.len() * 2 + 200);
    html.push_str("<div class=\"code-block\">");
    html.push_str(&shape.head);
    html.push_str("<pre><code");
    if let Some(class) = &shape.class {
        html.push_str(" class=\"");
        html.push_str(class);
        html.push('"');
    }
    html.push('>');
    html.push_str(&crate::highlight::to_html(language, body));
    html.push_str("</code></pre></div>\n");
    html
}

/// What a code block is around its code: the bar over it and the class of its `code`
/// element. A block still being written is built from the same parts
/// (ui/src/appending.rs), so it reads as the finished one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeShape {
    /// The bar: the language and the Copy button (`<div class="code-head">…</div>`).
    pub head: String,
    /// `language-NAME`, escaped; none for a block without a language.
    pub class: Option<String>,
}

impl CodeShape {
    pub fn of(language: &str) -> Self {
        let name = language.split([',', ' ', '{']).next().unwrap_or_default();
        let mut head = String::from("<div class=\"code-head\"><span class=\"code-lang\">");
        crate::highlight::escape_into(name, &mut head);
        head.push_str("</span><button class=\"code-copy\" type=\"button\" title=\"Copy the code\">Copy</button></div>");
        let class = (!name.is_empty()).then(|| {
            let mut class = String::from("language-");
            crate::highlight::escape_into(name, &mut class);
            class
        });
        Self { head, class }
    }
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
    crate::highlight::escape_into(text, &mut out);
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
            html.contains(
                "<span class=\"code-lang\">rust</span><button class=\"code-copy\" type=\"button\" title=\"Copy the code\">Copy</button></div><pre><code class=\"language-rust\"><span class=\"hl-k\">fn</span> <span class=\"hl-f\">main</span>() {}\n</code></pre></div>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<table>") && html.contains("<td>2</td>"),
            "{html}"
        );
    }

    #[test]
    fn code_is_escaped_and_a_block_still_being_written_is_drawn() {
        let html = to_html("Run:\n\n```html\n<script>alert(1)</script>");
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("class=\"code-copy\""), "{html}");
        // An indented block has no language and still its copy button.
        let html = to_html("Text\n\n    plain code\n");
        assert!(
            html.contains("<span class=\"code-lang\"></span><button class=\"code-copy\""),
            "{html}"
        );
        assert!(
            html.contains("<pre><code>plain code\n</code></pre>"),
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
