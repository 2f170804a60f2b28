//! Each rule with messages that must share a template and messages that must not.

use super::template;

fn same(a: &str, b: &str) {
    assert_eq!(template(a), template(b), "\n{a}\n{b}");
}

#[test]
fn uuids_and_hex_ids_are_masked() {
    assert_eq!(
        template("order 3f2b8c1e-9d4a-4f6b-8e2a-1c5d7e9f0a1b not found"),
        "order <*> not found"
    );
    same("trace 0x7ffd5e8c not found", "trace 0x1a not found");
    same("blob deadbeefcafebabe missing", "blob 0123456789abcdef missing");
}

#[test]
fn ips_numbers_and_timestamps_are_masked() {
    assert_eq!(
        template("connection refused: 10.0.3.17:5432 after 3 attempts"),
        "connection refused: <*> after <*> attempts"
    );
    assert_eq!(template("Connection refused: [fe80::1]:8080"), "Connection refused: <*>");
    same("deadline exceeded at 2026-01-15T10:30:00Z", "deadline exceeded at 2026-11-02 08:01:59");
    same("timeout after 30s", "timeout after 1.5s");
}

#[test]
fn quoted_values_emails_urls_and_assignments_are_masked() {
    assert_eq!(template("Invalid value 'abc def' for field \"qty\""), "Invalid value <*> for field <*>");
    assert_eq!(template("can't reach 'db'"), "can't reach <*>");
    assert_eq!(template("no user bob@example.com"), "no user <*>");
    assert_eq!(template("GET https://api.example.com/orders failed"), "GET <*> failed");
    assert_eq!(template("bad request user_id=usr_abc, sku=XL"), "bad request user_id=<*>, sku=<*>");
}

#[test]
fn only_the_first_line_counts_and_whitespace_is_folded() {
    assert_eq!(template("  ValueError:   bad\titems\nTraceback (most recent call last):"), "ValueError: bad items");
}

#[test]
fn one_cause_one_template_over_real_looking_messages() {
    let messages = [
        "Items must be a list, got 'str' for order ord_123 (user usr_456)",
        "Items must be a list, got 'int' for order ord_998 (user usr_1)",
    ];
    same(messages[0], messages[1]);
}

/// Each rule: messages that must group, and messages that must not.
#[test]
fn calendar_words_are_values_next_to_a_dates_numbers() {
    same("connection from 10.0.0.1 at Fri Jun 17 07:07:00 2005", "connection from 10.0.0.2 at Mon Jul  4 10:00:00 2005");
    same("status changed at Sat Sep 3 08:16:53 PDT 2005", "status changed at Thu Aug 11 23:01:02 PST 2005");
    assert_eq!(template("May not reach the host on Monday"), "May not reach the host on Monday");
}

#[test]
fn empty_brackets_are_an_empty_value() {
    same("connection from 1.2.3.4 () at noon", "connection from 1.2.3.5 (host-5.example.net) at noon");
    assert_ne!(template("init() ok"), template("init() failed"));
}

#[test]
fn the_word_after_user_is_a_user_name() {
    same("session closed for user cyrus", "session closed for user root");
    same("Invalid user admin from 10.0.0.9", "Invalid user oracle from 10.0.0.7");
    assert_eq!(template("user not found"), "user not found");
    same("invalid user user [preauth]", "invalid user webmaster [preauth]");
    assert_ne!(template("session closed for user root"), template("session opened for user root"));
    same("Failed password for root from 10.0.0.1 port 22 ssh2", "Failed password for admin from 10.0.0.2 port 4 ssh2");
    assert_eq!(template("waiting for data"), "waiting for data");
}

#[test]
fn http_request_lines_keep_their_method() {
    same(r#"10.11.10.1 "POST /v2/servers HTTP/1.1" status: 404"#, r#"10.11.10.7 "POST /v2/images/9 HTTP/1.0" status: 404"#);
    // (The status is a cause: `http_status_codes_are_causes`.)
    assert_ne!(template(r#"x "POST /v2/servers HTTP/1.1" status: 200"#), template(r#"x "POST /v2/servers HTTP/1.1" status: 404"#));
    assert_ne!(template(r#"x "GET /v2/servers HTTP/1.1" status: 200"#), template(r#"x "DELETE /v2/servers HTTP/1.1" status: 200"#));
}

#[test]
fn units_after_a_number_are_part_of_the_value() {
    same("1190 bytes (1.16 KB) sent", "52 bytes (0.05 MB) sent");
    same("waited 30 s for lock", "waited 1.5 ms for lock");
    assert_ne!(template("gave up after 3 attempts"), template("gave up after 3 tries"));
}

#[test]
fn paths_and_hosts_are_values_and_code_names_are_not() {
    same("Error loading /bgl/apps/x.rts: invalid image", "Error loading ./runtime_malloc: invalid image");
    same("LOGIN chdir(/p/gb2/t800) failed", "LOGIN chdir(/home/a) failed");
    same("open through proxy proxy.example.com:5070", "open through proxy gw.other.net:80");
    same("open through proxy proxy.example.com:5070", "open through proxy 10.0.0.1:80");
    assert_eq!(template("read/write error in org.apache.hadoop.Foo"), "read/write error in org.apache.hadoop.Foo");
    assert_eq!(template("json.decoder failed"), "json.decoder failed");
    same("reverse mapping for host-1.example.tw failed", "reverse mapping for a.b.com failed");
    same("chrome.exe - open through proxy", "firefox.exe - open through proxy");
    same("cannot read settings.py", "cannot read app.log");
    assert_eq!(template("module os.path missing"), "module os.path missing");
}

#[test]
fn values_inside_a_token_are_masked_and_its_wording_kept() {
    same("onExtend:1514038530000 14 0 4", "onExtend:1 2 3 4");
    assert_ne!(template("onExtend:1514038530000 14"), template("onStandStepChanged:1514038530000 14"));
    same("mapResourceRequest:<memory:1024, vCores:1>", "mapResourceRequest:<memory:2048, vCores:4>");
    same("steps1514044800223|3786|0|0", "steps1514044800999|1|2|3");
    assert_ne!(template("caused by dcbf.........0"), template("caused by icbi.........0"));
}

#[test]
fn an_upper_case_name_with_its_number_is_one_instance() {
    same("synchronized to LOCAL(0), stratum 10", "synchronized to 10.100.20.250, stratum 3");
    assert_eq!(template("LOGIN chdir(2) failed"), "LOGIN chdir(<*>) failed");
}

#[test]
fn interface_names_are_wording_and_numbered_nodes_are_values() {
    assert_eq!(template("Link Up on en0"), "Link Up on en0");
    assert_ne!(template("connection via interface ee0"), template("connection via interface alt0"));
    same("served by node node-96", "served by node node-7");
    same("resolve an14 failed", "resolve cn302 failed");
}

#[test]
fn a_value_restated_in_brackets_is_one_value() {
    same("close, 1190 bytes (1.16 KB) sent, 0 bytes received, lifetime <1 sec", "close, 0 bytes sent, 7 bytes (7 B) received, lifetime 00:01");
    assert_ne!(template("pid 42 (init) exited"), template("pid 42 (cron) exited"));
}

#[test]
fn one_address_is_one_value_in_any_notation() {
    same("10.11.10.1,10.11.10.2 GET", "10.11.10.1 GET");
    same("wpad:80 error", "proxy.example.com:5070 error");
    same("bx.optimix.asia:80 open", "10.0.0.1:80 open");
    assert_ne!(template("onExtend:1514038530000 14"), template("onStart:1514038530000 14"));
    assert_eq!(template("org.apache.hadoop failed"), "org.apache.hadoop failed");
    same("Connection refused: [fe80::1]:8080", "Connection refused: 10.0.3.17:5432");
    same("Ido chip FF:F2:9F:16:E2:23:00:0D changed", "Ido chip 00:0A:9F:16:E2:23:00:0D changed");
}

#[test]
fn explain_names_each_masked_value_and_its_rule() {
    let explained = super::explain("user bob at Fri Jun 17 07:07:00 2005 read /tmp/x");
    assert_eq!(explained.template, template("user bob at Fri Jun 17 07:07:00 2005 read /tmp/x"));
    let masks: Vec<(&str, &str)> = explained.masks.iter().map(|m| (m.rule, m.value.as_str())).collect();
    for expected in [("user", "bob"), ("date", "Fri"), ("date", "Jun"), ("number", "17"), ("number", "07:07:00"), ("path", "/tmp/x")] {
        assert!(masks.contains(&expected), "{expected:?} not in {masks:?}");
    }
}

#[test]
fn long_messages_are_capped() {
    let long = "word ".repeat(1000);
    assert_eq!(template(&long).split(' ').count(), 100);
}

#[test]
fn sql_literals_in_a_value_list_are_values_and_a_list_of_values_is_one() {
    same("Duplicate entry in VALUES (1, NULL, 'x')", "Duplicate entry in VALUES (2, 'y', NULL)");
    same("Incorrect datetime value (21/10/2026 08:14) for column", "Incorrect datetime value (1792454748065) for column");
    same("bad row (1, 2, 3), skipped", "bad row (7), skipped");
    assert_eq!(template("Column 'x' cannot be null"), "Column <*> cannot be null");
    assert_eq!(template("null value in column"), "null value in column");
    assert_ne!(template("bad row (1, 2) in insert"), template("bad row (1, 2) in update"));
    assert_ne!(template("pid 42 (init) exited"), template("pid 42 (1, 2) exited"));
}

#[test]
fn ids_of_random_letters_are_values() {
    same("charge ch_QkzXbTrWmPaLsDeRtYuIoPnM failed", "charge ch_ZxCvBnMaSdFgHjKlQwErTyUi failed");
    same("token dGhpcyBpcyBhIHRlc3Q rejected", "token QmFzZTY0IGlzIGZ1bg rejected");
    assert_eq!(template("NullPointerException in OrderService.getHTTPResponseCode"), "NullPointerException in OrderService.getHTTPResponseCode");
    assert_eq!(template("XMLHttpRequest failed"), "XMLHttpRequest failed");
}

#[test]
fn names_of_short_words_and_literals_in_sentences_are_wording() {
    assert_eq!(template("No handler found for GetUserByIdQuery"), "No handler found for GetUserByIdQuery");
    assert_eq!(template("IsNotNullOrEmpty failed"), "IsNotNullOrEmpty failed");
    assert_ne!(template("Field amount was null, expected a number"), template("Field amount was true, expected a number"));
}

#[test]
fn words_are_cut_as_split_whitespace_cuts_them() {
    for text in ["a b", "  a\tb\r\nc  ", "a\x0bb c", "a\u{a0}b c", "a\u{2003}b", "x\x0c\x0dy", "", "   "] {
        let expected: Vec<&str> = text.split_whitespace().take(2).collect();
        assert_eq!(super::words(text, 2), expected, "{text:?}");
    }
}

#[test]
fn the_first_line_is_found_as_lines_finds_it() {
    for text in ["a", "\n\n  b c \r\nd", "\r\n", "", " \n\t\n", "x\ny", "\u{a0}\nz"] {
        let expected = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        assert_eq!(super::first_line(text), expected, "{text:?}");
    }
}

/// An HTTP status is a cause: a client's error and an outage are two buckets, whatever else
/// varies; a number that is not said to be a status stays a value.
#[test]
fn http_status_codes_are_causes() {
    let responded = |code: &str| template(&format!("the endpoint responded with status code {code} after 1200 ms"));
    assert_eq!(responded("400"), "the endpoint responded with status code 400 after <*>");
    assert_ne!(responded("400"), responded("503"));
    same("HTTP 502 from upstream 10.0.0.7", "HTTP 502 from upstream 10.0.0.9");
    assert_ne!(template("HTTP 502 from upstream"), template("HTTP 504 from upstream"));
    assert_ne!(template("upstream said 503 Service Unavailable"), template("upstream said 500 Internal Server Error"));
    assert_eq!(template("request failed: statusCode=429, id=77"), "request failed: statusCode=429, id=<*>");
    assert_eq!(template("HTTP Status: 404 for order 12345"), "HTTP Status: 404 for order <*>");
    // A process's exit status is a value unless the message speaks of HTTP.
    same("worker exited with status 137", "worker exited with status 143");
    same("returned 200 rows", "returned 503 rows");
    same("error code 503", "error code 404");
}

/// Jackson's location quotes the payload (`[Source: (byte[])"{…}"; line: 1, column: 57]`):
/// one value, however many commas or quotes the excerpt holds, cut short or redacted.
#[test]
fn a_jackson_source_excerpt_is_one_value() {
    let at = |source: &str| template(&format!("Unexpected character ('}}' (code 125)): was expecting double-quote to start field name at [Source: {source}]"));
    let want = "Unexpected character (<*> (code <*>)): was expecting double-quote to start field name at [Source: <*>; line: <*>, column: <*>]";
    assert_eq!(at(r#"(byte[])"{"order_id":"ord-1","total":5,}"; line: 1, column: 41"#), want);
    assert_eq!(at(r#"(byte[])"{"a":[1,2,3],"b":"x, y",}"; line: 1, column: 33"#), want);
    assert_eq!(at(r#"(String)"{"a":1,}"[truncated 1024 bytes]; line: 3, column: 2"#), want);
    assert_eq!(at("REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 12"), want);
    // Cut before the location ends (a long excerpt, capped): the rest is the value.
    same(r#"bad JSON at [Source: (byte[])"{"a":1,"b":2"#, r#"bad JSON at [Source: (byte[])"{"zz":[9,8,7]"#);
}

/// A quoted excerpt with escapes (Go's `%q`, Python's `b'…'` repr) is one value.
#[test]
fn escaped_and_prefixed_quoted_excerpts_are_one_value() {
    same(r#"invalid character "a \"b, c\" d" in string"#, r#"invalid character "x" in string"#);
    same(r"cannot decode b'\x00\x01abc, def' as utf-8", r"cannot decode b'\xff' as utf-8");
    assert_eq!(template(r"cannot decode b'\x00\x01abc, \'def' as ascii"), "cannot decode <*> as ascii");
}

/// A random id after a short prefix is a value even with a vowel in four of its letters.
#[test]
fn prefixed_ids_of_random_letters_are_values() {
    same("payment ch_nwIBMGPnEiGkEfGJBhierxHY declined", "payment ch_QkzXbTrWmPaLsDeRtYuIoPnM declined");
    assert_eq!(template("payment ch_nwIBMGPnEiGkEfGJBhierxHY declined"), "payment <*> declined");
    assert_eq!(template("No handler for cmd_GetUserByIdQuery"), "No handler for cmd_GetUserByIdQuery");
}

/// A redacted dump's value token (a kind, then 16 digits and letters by turns, digits first)
/// is one value with what stands around it, as a number is; a token of letters first is not.
#[test]
fn redaction_tokens_template_as_the_numbers_they_replace() {
    for (before, after) in [("", ""), ("", "."), ("", ","), ("", ":"), ("(", ")"), ("[", ""), ("", "]"), ("[", "]:")] {
        for token in ["ip_3z8i5b0n3p7k0a6d", "card_3z8i5b0n3p7k0a6d_1111", "3z8i5b0n3p7k0a6d"] {
            let (number, token) = (format!("for {before}4111{after} now"), format!("for {before}{token}{after} now"));
            assert_eq!(template(&token), template(&number), "{token}");
        }
    }
    assert_eq!(template("for ip_3z8i5b0n3p7k0a6d. now"), "for <*>. now");
    assert_eq!(template("for jwt_z3i8b5n0p3k7a0d6. now"), "for <*> now");
    assert_eq!(template("for ip_3z8i5b0n3p7k0a6. now"), "for <*> now");
}
