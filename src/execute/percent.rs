//! A URL's user, password, virtual host and query values are percent-encoded: the ledger's
//! and the targets' URLs decode them with this one function.

/// `%XX` escapes decoded; a `%` not followed by two hex digits is kept as it is.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn escapes_are_decoded_and_a_lone_percent_kept() {
        assert_eq!(percent_decode("p%40ss%2Fw%3Ard"), "p@ss/w:rd");
        assert_eq!(percent_decode("%2F"), "/");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("caf%C3%A9"), "café");
    }
}
