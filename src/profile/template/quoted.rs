//! Quoted values, found by a scan rather than a pattern: a closing quote is one a value can end
//! on, so quotes inside a value (`'O''Brien'`, `"{"a":1"`, Go's `"a \"b\""`) stay inside it,
//! quoted parts joined by `.` or `@` (`'svc'@'%'`, `` `db`.`tbl` ``) are one value, as MySQL
//! writes names, Python's `b'…'` is one value with its prefix, and Ruby's `` `name' `` one
//! value as its later `'name'` is.

use std::borrow::Cow;

/// A quoted value in `text`: where it starts and ends (its quotes included), or None.
struct Quoted {
    start: usize,
    end: usize,
}

/// Characters a quote opens after (or the start of the text): so `can't` stays a word.
fn opens_after(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | '[' | '{' | ':' | '=' | ',' | '<')
}

/// Punctuation a closing quote may be followed by before a space, the end or another quote.
fn closing_punctuation(c: char) -> bool {
    matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | ')' | ']' | '}' | '>' | '@')
}

/// The end of the quoted value opened by `quote` at `open`, if it closes on this text: the
/// first quote (not doubled, as SQL escapes one, nor after a backslash, as Go's `%q` and
/// Python's repr escape one) followed by a space, the end, or closing punctuation and then a
/// space, the end or another quote, with every bracket opened inside closed (`'{'id': 1}'`).
/// A value that closes on no quote so closes where its brackets need not balance (`"{"a":1"`),
/// then where a backslash is not taken as an escape (a Windows path's `'C:\tmp\'`).
fn close(text: &str, open: usize, quote: char) -> Option<usize> {
    close_where(text, open, quote, true, true)
        .or_else(|| close_where(text, open, quote, true, false))
        .or_else(|| close_where(text, open, quote, false, false))
}

fn close_where(text: &str, open: usize, quote: char, escapes: bool, balanced: bool) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = open + 1;
    let mut depth = 0usize;
    while at < bytes.len() {
        let c = bytes[at];
        if c == b'\n' {
            return None;
        }
        if escapes && c == b'\\' {
            at += 2;
            continue;
        }
        match c {
            b'{' | b'[' | b'(' if balanced => depth += 1,
            b'}' | b']' | b')' if balanced => depth = depth.saturating_sub(1),
            _ => {}
        }
        // A quote inside an open bracket that ends a word closes a value of its own
        // (`'(' but got ')'`): the brackets are not this value's.
        if balanced && depth > 0 && c == quote as u8 && bytes.get(at + 1).is_none_or(u8::is_ascii_whitespace) {
            return None;
        }
        if c == quote as u8 && depth == 0 {
            if quote != '`' && bytes.get(at + 1) == Some(&(quote as u8)) {
                at += 2; // `''` inside a value: an escaped quote
                continue;
            }
            let after = &text[at + 1..];
            let rest = after.trim_start_matches(closing_punctuation);
            // Another quoted value may follow only across a list's comma or a name's `.`/`@`
            // (`'a','b'`, `'svc'@'%'`): a `:` before a quote is JSON's, inside the value.
            let next_quoted = rest.starts_with(['\'', '"', '`']) && matches!(&after[..after.len() - rest.len()], "," | "." | "@");
            if rest.is_empty() || rest.starts_with(char::is_whitespace) || next_quoted {
                return Some(at + 1);
            }
        }
        at += 1;
    }
    None
}

/// The quoted values of `text`, in order, each joined with the quoted parts that follow it
/// after a `.` or `@`.
fn find(text: &str) -> Vec<Quoted> {
    let mut found = Vec::new();
    let mut previous = None;
    for (at, c) in text.char_indices() {
        if !matches!(c, '\'' | '"' | '`') || found.last().is_some_and(|q: &Quoted| at < q.end) {
            previous = Some(c);
            continue;
        }
        let joined = found.last().is_some_and(|q: &Quoted| q.end + 1 == at && matches!(&text[q.end..at], "." | "@"));
        let prefix = string_prefix(&text[..at]);
        if previous.is_none_or(opens_after) || joined || prefix > 0 {
            // A backquote that no backquote closes closes on an apostrophe: `name', as Ruby
            // before 3.4 and older GNU tools quote.
            let end = close(text, at, c).or_else(|| if c == '`' { close(text, at, '\'').filter(|&end| !opens_inside(&text[at + 1..end - 1])) } else { None });
            if let Some(end) = end {
                match found.last_mut().filter(|_| joined) {
                    Some(last) => last.end = end,
                    None => found.push(Quoted { start: at - prefix, end }),
                }
            }
        }
        previous = Some(c);
    }
    found
}

/// Whether `inside` holds a quote where a value could open (after a space or an opener): a
/// backquote's apostrophe past it would swallow that value.
fn opens_inside(inside: &str) -> bool {
    let mut previous = ' ';
    for c in inside.chars() {
        if matches!(c, '\'' | '`') && opens_after(previous) {
            return true;
        }
        previous = c;
    }
    false
}

/// The length of a Python string prefix (`b`, `r`, `u`, `f`, `rb`, `br`, any case) that ends
/// `before` and stands where a quote may open (`b'\x00'`), or 0.
fn string_prefix(before: &str) -> usize {
    let letters = before.len() - before.trim_end_matches(['b', 'r', 'u', 'f', 'B', 'R', 'U', 'F']).len();
    let prefix = &before[before.len() - letters..];
    let known = matches!(prefix.to_ascii_lowercase().as_str(), "b" | "r" | "u" | "f" | "rb" | "br" | "fr" | "rf");
    let opens = before[..before.len() - letters].chars().next_back().is_none_or(opens_after);
    if known && opens { letters } else { 0 }
}

/// `text` with each quoted value replaced by what `with` makes of it (the value, quotes
/// included); borrowed when there is none.
pub(super) fn replace_quoted<'a>(text: &'a str, mut with: impl FnMut(&str) -> String) -> Cow<'a, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for q in found {
        out.push_str(&text[from..q.start]);
        out.push_str(&with(&text[q.start..q.end]));
        from = q.end;
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    fn values(text: &str) -> Vec<String> {
        let mut seen = Vec::new();
        super::replace_quoted(text, |q| {
            seen.push(q.to_string());
            String::new()
        });
        seen
    }

    #[test]
    fn a_value_ends_on_a_quote_it_can_end_on() {
        assert_eq!(values("Invalid value 'abc def' for field \"qty\""), ["'abc def'", "\"qty\""]);
        assert_eq!(values("can't reach 'db'"), ["'db'"]);
        assert_eq!(values("name 'O''Brien' too long"), ["'O''Brien'"]);
        assert_eq!(values(r#"bad JSON "{"a":1" at 3"#), [r#""{"a":1""#]);
        assert_eq!(values(r#"bad "{"a":"b"}" in body"#), [r#""{"a":"b"}""#]);
        assert_eq!(values("key 'it's' here"), ["'it's'"]);
        assert_eq!(values("empty '' and ('a','b')."), ["''", "'a'", "'b'"]);
        assert_eq!(values("unclosed 'abc"), Vec::<String>::new());
    }

    #[test]
    fn escaped_quotes_stay_inside_and_a_python_prefix_joins_its_value() {
        assert_eq!(values(r#"invalid character "a \"b, c\" d" in string"#), [r#""a \"b, c\" d""#]);
        assert_eq!(values(r"bad payload b'\x00\x01abc, \'def' here"), [r"b'\x00\x01abc, \'def'"]);
        assert_eq!(values(r"raw rb'\d+' and u'x'"), [r"rb'\d+'", "u'x'"]);
        // A backslash that ends a Windows path before its quote still lets the value close.
        assert_eq!(values(r"cannot open 'C:\tmp\' now"), [r"'C:\tmp\'"]);
        // Letters that are not a prefix, or a prefix inside a word, open nothing.
        assert_eq!(values("verb'x' and ab'y'"), Vec::<String>::new());
    }

    #[test]
    fn brackets_opened_inside_close_first_and_a_backquote_may_close_on_an_apostrophe() {
        assert_eq!(values("unexpected character: '{'id': 12}' at line 1"), ["'{'id': 12}'"]);
        assert_eq!(values("unbalanced '(a' and 'b'"), ["'(a'", "'b'"]);
        assert_eq!(values("undefined method `address' for nil"), ["`address'"]);
        assert_eq!(values("undefined method 'address' for nil"), ["'address'"]);
        assert_eq!(values("no `open here"), Vec::<String>::new());
        // Quoted brackets apart are values apart.
        assert_eq!(values("expected '(' but got ')'"), ["'('", "')'"]);
        assert_eq!(values("syntax error near '(' at 'foo)'"), ["'('", "'foo)'"]);
        assert_eq!(values("regex '[a-z' missing ']' near 'q'"), ["'[a-z'", "']'", "'q'"]);
        assert_eq!(values("bad '(' and ')' and 'z'"), ["'('", "')'", "'z'"]);
        // A backquote's apostrophe never reaches past a value that opens before it.
        assert_eq!(values("command `ls -l failed: can't open 'x'"), ["'x'"]);
        assert_eq!(values("see `x`s is not 'y'"), ["'y'"]);
    }

    #[test]
    fn quoted_parts_joined_by_a_dot_or_at_are_one_value() {
        assert_eq!(values("Access denied for user 'svc'@'%' (using password: YES)"), ["'svc'@'%'"]);
        assert_eq!(values("Table 'shop'.'orders' doesn't exist"), ["'shop'.'orders'"]);
        assert_eq!(values("Unknown column `db`.`tbl`.`col` in 'field list'"), ["`db`.`tbl`.`col`", "'field list'"]);
        assert_eq!(values("'a'. 'b'"), ["'a'", "'b'"]);
    }
}
