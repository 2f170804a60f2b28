//! A URL's user, password, virtual host and query values are percent-encoded: the ledger's
//! and the targets' URLs decode them with this one function.

/// `%XX` escapes decoded; a `%` not followed by two hex digits is kept as it is, and bytes
/// that are not UTF-8 are replaced.
pub fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
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
