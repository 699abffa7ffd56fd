//! Text cut short for a person or a model to read.

/// The first `max` characters of `text`, with `…` after them when more followed.
pub(crate) fn clipped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => {
            let mut clipped = String::with_capacity(end + '…'.len_utf8());
            clipped.push_str(&text[..end]);
            clipped.push('…');
            clipped
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::clipped;

    #[test]
    fn text_longer_than_the_bound_keeps_its_first_characters_and_says_it_was_cut() {
        assert_eq!(clipped("abcdef", 3), "abc…");
        assert_eq!(clipped("abc", 3), "abc");
        assert_eq!(clipped("", 3), "");
        // Characters, not bytes.
        assert_eq!(clipped("ééééé", 2), "éé…");
    }
}
