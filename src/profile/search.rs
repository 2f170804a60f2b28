//! Byte searches the per-row normalisers (templates, stack shapes) run on short texts, where a
//! `str` pattern search costs more to set up than the text takes to read.

/// Where `needle` (a few bytes) first starts in `bytes`: a memchr for its first byte.
pub fn find(bytes: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr::memchr(needle[0], &bytes[from..]).map(|i| from + i) {
        if bytes[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The parts of `text` between `\n`s, as `text.split('\n')` gives them.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        match memchr::memchr(b'\n', text.as_bytes()) {
            Some(at) => {
                rest = Some(&text[at + 1..]);
                Some(&text[..at])
            }
            None => {
                rest = None;
                Some(text)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn searches_agree_with_str_patterns() {
        for text in ["", "a", "\n", "a\nb", "a\n\nb\n", "\r\nx\r\n", "a:/b://c", "a..b..", "x: y", ":"] {
            assert_eq!(super::lines(text).collect::<Vec<_>>(), text.split('\n').collect::<Vec<_>>(), "{text:?}");
            for needle in ["://", "...", ": "] {
                assert_eq!(super::find(text.as_bytes(), needle.as_bytes()), text.find(needle), "{text:?} {needle:?}");
            }
        }
    }
}
