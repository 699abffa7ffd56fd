//! Server-sent events, reduced to what chat streams use: the `data:` payloads.

use memchr::memchr;

/// Splits a byte stream into `data:` payloads.
///
/// Each `data:` line is treated as a complete payload instead of joining consecutive
/// data lines until a blank line as the SSE spec says: chat servers put one JSON
/// object on each line, and some omit the blank separators, which the spec's
/// reading would turn into invalid JSON.
#[derive(Debug, Default)]
pub struct SseDecoder {
    pending: Vec<u8>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `on_data` with each complete payload, in order.
    pub fn push<E>(
        &mut self,
        bytes: &[u8],
        mut on_data: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.pending.is_empty() {
            let consumed = Self::lines(bytes, &mut on_data)?;
            self.pending.extend_from_slice(&bytes[consumed..]);
        } else {
            self.pending.extend_from_slice(bytes);
            let pending = std::mem::take(&mut self.pending);
            let consumed = Self::lines(&pending, &mut on_data)?;
            self.pending = pending;
            self.pending.drain(..consumed);
        }
        Ok(())
    }

    /// Delivers a last line that had no newline.
    pub fn finish<E>(&mut self, mut on_data: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        let rest = std::mem::take(&mut self.pending);
        Self::line(&rest, &mut on_data)
    }

    /// Whether bytes of an unfinished line are buffered.
    pub fn has_partial_line(&self) -> bool {
        self.pending.iter().any(|b| !b.is_ascii_whitespace())
    }

    fn lines<E>(bytes: &[u8], on_data: &mut impl FnMut(&str) -> Result<(), E>) -> Result<usize, E> {
        let mut start = 0;
        while let Some(end) = memchr(b'\n', &bytes[start..]) {
            Self::line(&bytes[start..start + end], on_data)?;
            start += end + 1;
        }
        Ok(start)
    }

    fn line<E>(line: &[u8], on_data: &mut impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(payload) = line.strip_prefix(b"data:") else {
            // Blank separators, `: comments`, `event:`, `id:` and `retry:` carry
            // nothing a chat stream needs.
            return Ok(());
        };
        let payload = payload.strip_prefix(b" ").unwrap_or(payload);
        match std::str::from_utf8(payload) {
            Ok(text) => on_data(text),
            // Not UTF-8 cannot be JSON; hand the decoder something it will reject
            // with a readable error rather than dropping the line silently.
            Err(_) => on_data("\u{FFFD}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SseDecoder;

    fn payloads(chunks: &[&[u8]]) -> Vec<String> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder
                .push::<()>(chunk, |data| {
                    out.push(data.to_owned());
                    Ok(())
                })
                .unwrap();
        }
        decoder
            .finish::<()>(|data| {
                out.push(data.to_owned());
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn splits_payloads_across_arbitrary_chunk_boundaries() {
        let whole =
            b": comment\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\nevent: x\ndata: [DONE]\n\n";
        let expected = ["{\"a\":1}", "{\"b\":2}", "[DONE]"];
        assert_eq!(payloads(&[whole]), expected);
        for cut in 1..whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(payloads(&[a, b]), expected, "cut at {cut}");
        }
    }

    #[test]
    fn keeps_a_last_line_without_newline_and_lines_without_separators() {
        assert_eq!(payloads(&[b"data: 1\ndata: 2"]), ["1", "2"]);
    }
}
