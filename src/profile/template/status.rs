//! HTTP status codes are causes, not values: a 400 (the request's fault) and a 503 (the
//! server's outage) are two buckets. A code is known by the words around it; a bare
//! `status 137` is a process's exit status unless the message speaks of HTTP.

/// The code a word holds (`503`, `503,`, `(503)`), if it is one: three digits, 100 to 599.
pub(super) fn code(word: &str) -> Option<u16> {
    let core = word.trim_start_matches('(').trim_end_matches([')', ',', '.', ';', ':']);
    let code: u16 = core.parse().ok().filter(|_| core.len() == 3 && core.bytes().all(|b| b.is_ascii_digit()))?;
    (100..=599).contains(&code).then_some(code)
}

/// Whether a message speaks of HTTP (`HTTP/1.1`, `https://…`, `HttpRequestException`).
pub(super) fn mentions_http(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"http"))
}

/// A name that says the value after it is an HTTP status (`statusCode`, `http_status`), or
/// `status` in a message that speaks of HTTP.
pub(super) fn is_status_key(key: &str, http: bool) -> bool {
    let key: String = key.chars().filter(|c| c.is_ascii_alphabetic()).collect::<String>().to_ascii_lowercase();
    matches!(key.as_str(), "statuscode" | "httpstatus" | "httpstatuscode" | "responsestatus" | "responsecode" | "httpcode") || (http && key == "status")
}

/// Which of `words` are status codes: after `HTTP` (or `HTTP/1.1`), `status code`, `response
/// code`, or `status` in a message that speaks of HTTP (`http`); before the first word of the
/// code's own reason phrase (`503 Service Unavailable`, `404 Not Found`); or assigned to a
/// status (`statusCode=429`).
pub(super) fn status_words(words: &[&str], http: bool) -> Vec<bool> {
    let plain = |i: usize| words[i].trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '/').to_ascii_lowercase();
    (0..words.len())
        .map(|i| {
            // `statusCode=429`, kept so by the `key=value` rule.
            if let Some((key, value)) = words[i].split_once('=') {
                return is_status_key(key, http) && code(value).is_some();
            }
            let Some(code) = code(words[i]) else { return false };
            let before = i.checked_sub(1).map(plain).unwrap_or_default();
            let named = is_status_key(&before, http) || before == "http" || before.starts_with("http/");
            let coded = before == "code" && i >= 2 && matches!(plain(i - 2).as_str(), "status" | "response" | "http");
            let reason = words.get(i + 1).is_some_and(|next| reason_starts(code, next));
            named || coded || reason
        })
        .collect()
}

/// Whether `word` is the first word of `code`'s reason phrase (RFC 9110, section 15).
fn reason_starts(code: u16, word: &str) -> bool {
    let first = match code {
        100 => "Continue",
        101 => "Switching",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative",
        204 => "No",
        205 => "Reset",
        206 => "Partial",
        300 => "Multiple",
        301 => "Moved",
        302 => "Found",
        303 => "See",
        304 => "Not",
        307 | 308 => return word == "Temporary" || word == "Permanent",
        400 => "Bad",
        401 => "Unauthorized",
        402 => "Payment",
        403 => "Forbidden",
        404 | 405 | 406 => return matches!(word, "Not" | "Method"),
        407 => "Proxy",
        408 => "Request",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length",
        412 => "Precondition",
        413 => return matches!(word, "Content" | "Payload" | "Request"),
        414 => "URI",
        415 => "Unsupported",
        416 => "Range",
        417 => "Expectation",
        421 => "Misdirected",
        422 => "Unprocessable",
        423 => "Locked",
        424 => "Failed",
        425 => "Too",
        426 => "Upgrade",
        428 => "Precondition",
        429 => "Too",
        431 => "Request",
        451 => "Unavailable",
        500 => "Internal",
        501 => "Not",
        502 => "Bad",
        503 => "Service",
        504 => "Gateway",
        505 => "HTTP",
        _ => return false,
    };
    word.trim_end_matches([',', '.', ';', ':']) == first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(text: &str) -> Vec<bool> {
        status_words(&text.split_whitespace().collect::<Vec<_>>(), mentions_http(text))
    }

    #[test]
    fn a_code_is_known_by_its_words() {
        assert_eq!(statuses("the endpoint responded with status code 400"), [false, false, false, false, false, false, true]);
        assert_eq!(statuses("HTTP 502 from upstream"), [false, true, false, false]);
        assert_eq!(statuses("HTTP/1.1 503 Service Unavailable"), [false, true, false, false]);
        assert_eq!(statuses("upstream said 404 Not Found"), [false, false, true, false, false]);
        assert_eq!(statuses("HTTP Status: (429) retry later"), [false, false, true, false, false]);
        assert_eq!(statuses("statusCode=429, status=x id=503"), [true, false, false]);
        // A process's exit status, in a message that does not speak of HTTP, is a value.
        assert_eq!(statuses("child exited with status 137"), [false, false, false, false, false]);
        assert_eq!(statuses("status=137 after kill"), [false, false, false]);
        assert_eq!(statuses("http call ended with status=502"), [false, false, false, false, true]);
        // Numbers that are not codes, or not said to be one, stay values.
        assert_eq!(statuses("returned 200 rows"), [false, false, false]);
        assert_eq!(statuses("status 999 and HTTP 5030"), [false, false, false, false, false]);
        assert_eq!(statuses("error code 503"), [false, false, false]);
    }
}
