use std::path::PathBuf;

/// The directory of recorded wire traffic.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/wire")
}

/// The bytes of one recording, e.g. `openai/plain_stream_with_usage.sse`.
///
/// # Panics
/// When the file is missing: a test without its fixture cannot mean anything.
#[allow(clippy::panic)]
pub fn fixture(relative: &str) -> Vec<u8> {
    let path = fixture_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|err| panic!("fixture {}: {err}", path.display()))
}

/// A recording as the SSE bytes a server sent: `.sse` files are already that;
/// `.ndjson` files store one `data:` payload a line and are re-framed as the
/// fixtures' README says (`data: <line>\n\n` each, then `data: [DONE]\n\n`).
pub fn openai_sse(relative: &str) -> Vec<u8> {
    let bytes = fixture(relative);
    if relative.ends_with(".ndjson") {
        sse_from_payload_lines(&bytes)
    } else {
        bytes
    }
}

/// Frames payload lines as an SSE stream ending with `[DONE]`.
pub fn sse_from_payload_lines(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() * 2);
    for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\n\n");
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// A documentation example of several pretty-printed JSON objects, as the compact
/// NDJSON a server sends (one object a line).
///
/// # Panics
/// When the fixture is not a sequence of JSON objects.
#[allow(clippy::panic)]
pub fn ndjson_from_pretty(relative: &str) -> Vec<u8> {
    let bytes = fixture(relative);
    let mut out = Vec::new();
    for value in serde_json::Deserializer::from_slice(&bytes).into_iter::<serde_json::Value>() {
        let value = value.unwrap_or_else(|err| panic!("fixture {relative}: {err}"));
        out.extend_from_slice(value.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}
