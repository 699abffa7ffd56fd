//! HTML to the readable text a model needs: the words of the page, its headings and
//! list items on lines of their own, links with their addresses, no scripts, styles
//! or markup.

/// Elements whose content is never text for a reader.
const HIDDEN: [&str; 8] = [
    "script", "style", "noscript", "template", "svg", "head", "iframe", "canvas",
];
/// Elements that start a new line.
const BLOCKS: [&str; 24] = [
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "aside",
    "pre",
    "blockquote",
    "table",
    "ul",
    "ol",
    "hr",
];

pub fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 3);
    let mut rest = html;
    let mut link: Option<String> = None;
    while let Some(open) = rest.find('<') {
        push_text(&mut out, &rest[..open]);
        rest = &rest[open..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(close) = rest.find('>') else {
            push_text(&mut out, rest);
            rest = "";
            break;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if !closing && HIDDEN.contains(&name.as_str()) {
            let end = format!("</{name}");
            rest = find_ignoring_case(rest, &end)
                .and_then(|at| rest[at..].find('>').map(|gt| &rest[at + gt + 1..]))
                .unwrap_or("");
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            new_line(&mut out);
            if name == "li" && !closing {
                out.push_str("- ");
            }
        }
        if name == "a" {
            if closing {
                if let Some(href) = link.take() {
                    out.push_str(&format!(" ({href})"));
                }
            } else {
                link = attribute(tag, "href").filter(|href| href.starts_with("http"));
            }
        }
    }
    push_text(&mut out, rest);
    tidy(&out)
}

fn find_ignoring_case(haystack: &str, needle: &str) -> Option<usize> {
    haystack.to_ascii_lowercase().find(needle)
}

fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let at = lower.find(&format!("{name}="))? + name.len() + 1;
    let value = &tag[at..];
    let value = match value.chars().next()? {
        quote @ ('"' | '\'') => value[1..].split(quote).next()?,
        _ => value.split(char::is_whitespace).next()?,
    };
    Some(decode_entities(value))
}

/// Appends text with its runs of whitespace collapsed; a space is kept at either
/// edge only where the source had one (`<b>x</b>,` stays `x,`).
fn push_text(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    let decoded = decode_entities(text);
    let mut words = decoded.split_whitespace().peekable();
    if words.peek().is_some()
        && decoded.starts_with(char::is_whitespace)
        && !out.is_empty()
        && !out.ends_with(['\n', ' '])
    {
        out.push(' ');
    }
    let mut first = true;
    for word in words {
        if !first {
            out.push(' ');
        }
        first = false;
        out.push_str(word);
    }
    if decoded.ends_with(char::is_whitespace) && !out.is_empty() && !out.ends_with(['\n', ' ']) {
        out.push(' ');
    }
}

fn new_line(out: &mut String) {
    while out.ends_with(' ') {
        out.pop();
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest[1..].find(';').map(|i| i + 1).filter(|&i| i <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            "mdash" => Some('—'),
            "ndash" => Some('–'),
            "hellip" => Some('…'),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// At most one blank line in a row, no trailing spaces.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::to_text;

    #[test]
    fn pages_become_readable_text() {
        let html = r#"<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style></head>
<body><!-- nav --><h1>Cairn &amp; friends</h1><p>Local <b>models</b>,
   local   data.</p><script>alert("x < y")</script>
<ul><li>One</li><li>Two &lt;3&gt;</li></ul><p>See <a href="https://example.com/docs">the docs</a> &#8212; or <a href="/rel">this</a>.</p></body></html>"#;
        assert_eq!(
            to_text(html),
            "Cairn & friends\nLocal models, local data.\n- One\n- Two <3>\nSee the docs (https://example.com/docs) — or this."
        );
    }

    #[test]
    fn broken_markup_does_not_lose_text() {
        assert_eq!(to_text("a < b and c"), "a < b and c");
        assert_eq!(to_text("<p>unclosed <b>bold"), "unclosed bold");
        assert_eq!(to_text("x &bogus; y &#xZZ; z"), "x &bogus; y &#xZZ; z");
    }
}
