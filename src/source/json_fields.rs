//! A validating JSON object scanner that keeps only named top-level fields. It checks the whole
//! line's syntax like a full parser, but never builds values it does not need.

use std::borrow::Cow;

use super::layout::Cell;

/// Parses lines as JSON objects: fields named in `names` are stored in `cells` (same index),
/// everything else is validated and skipped. Lines must be valid UTF-8 already.
///
/// Picks named fields from many lines. Lines of one dump repeat their key order, so the key
/// seen at each position last time is tried first: one comparison instead of a search.
pub struct FieldPicker<'n> {
    names: &'n [String],
    order: Vec<(String, Option<usize>)>,
}

impl<'n> FieldPicker<'n> {
    pub fn new(names: &'n [String]) -> FieldPicker<'n> {
        FieldPicker { names, order: Vec::new() }
    }

    pub fn pick<'a>(&mut self, line: &'a str, cells: &mut [Cell<'a>]) -> Result<(), String> {
        let mut p = Parser { s: line.as_bytes(), text: line, pos: 0 };
        p.ws();
        let kind = match p.peek() {
            Some(b'{') => None,
            Some(b'[') => Some("an array"),
            Some(b'"') => Some("a string"),
            Some(b'-' | b'0'..=b'9') => Some("a number"),
            Some(b't' | b'f') => Some("a boolean"),
            Some(b'n') => Some("null"),
            _ => return Err(p.error("expected a JSON object")),
        };
        if let Some(kind) = kind {
            // Only valid JSON is named by its type: `not json` is a syntax error, not null.
            p.skip_value(0)?;
            p.ws();
            if p.pos != p.s.len() {
                return Err(p.error("trailing characters"));
            }
            return Err(format!("expected a JSON object, got {kind}"));
        }
        let (names, order) = (self.names, &mut self.order);
        let mut position = 0;
        p.object(|p, key| {
            let slot = match order.get(position) {
                Some((seen, slot)) if *seen == key => *slot,
                _ => {
                    let slot = names.iter().position(|n| *n == key);
                    order.truncate(position);
                    order.push((key.to_string(), slot));
                    slot
                }
            };
            position += 1;
            match slot {
                Some(i) => {
                    cells[i] = p.value()?;
                    Ok(())
                }
                None => p.skip_value(0),
            }
        })?;
        p.ws();
        if p.pos != p.s.len() {
            return Err(p.error("trailing characters"));
        }
        Ok(())
    }
}

const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Moves `pos` to the next byte that ends or escapes a string (`"`, `\\`) or may not appear
    /// in one (a control character), eight bytes at a time.
    fn scan_string_body(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        while self.pos + 8 <= self.s.len() {
            let v = u64::from_le_bytes(self.s[self.pos..self.pos + 8].try_into().expect("8 bytes"));
            let quote = v ^ (ONES * u64::from(b'"'));
            let slash = v ^ (ONES * u64::from(b'\\'));
            // A byte is flagged when it is zero (after the xor) or below 0x20; the lowest flag
            // is exact, which is all we use.
            let hits = (quote.wrapping_sub(ONES) & !quote | slash.wrapping_sub(ONES) & !slash | v.wrapping_sub(ONES * 0x20) & !v) & HIGH;
            if hits != 0 {
                self.pos += (hits.trailing_zeros() / 8) as usize;
                return;
            }
            self.pos += 8;
        }
        while let Some(&b) = self.s.get(self.pos) {
            if b == b'"' || b == b'\\' || b < 0x20 {
                return;
            }
            self.pos += 1;
        }
    }

    fn error(&self, what: &str) -> String {
        format!("invalid JSON: {what} at column {}", self.pos + 1)
    }

    /// A string starting at the opening quote; borrowed unless it has escapes.
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.pos += 1;
        let start = self.pos;
        loop {
            self.scan_string_body();
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    let out = Cow::Borrowed(&self.text[start..self.pos]);
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => return self.escaped_string(start),
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    fn escaped_string(&mut self, start: usize) -> Result<Cow<'a, str>, String> {
        let mut out = String::from(&self.text[start..self.pos]);
        loop {
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.error("EOF while parsing a string"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let c = self.unicode_escape()?;
                            out.push(c);
                        }
                        _ => return Err(self.error("invalid escape")),
                    }
                }
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => {
                    let run_start = self.pos;
                    while let Some(&c) = self.s.get(self.pos) {
                        if c == b'"' || c == b'\\' || c < 0x20 {
                            break;
                        }
                        self.pos += 1;
                    }
                    out.push_str(&self.text[run_start..self.pos]);
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.s.get(self.pos..self.pos + 4).ok_or_else(|| self.error("EOF while parsing a string"))?;
        let mut v = 0u32;
        for &d in digits {
            let n = (d as char).to_digit(16).ok_or_else(|| self.error("invalid \\u escape"))?;
            v = v * 16 + n;
        }
        self.pos += 4;
        Ok(v)
    }

    fn unicode_escape(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if self.s.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return Err(self.error("lone leading surrogate in a \\u escape"));
            }
            self.pos += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.error("invalid trailing surrogate in a \\u escape"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00..0xE000).contains(&first) {
            return Err(self.error("lone trailing surrogate in a \\u escape"));
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), String> {
        if self.s.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else if self.s.len() - self.pos < word.len() && word.starts_with(&self.s[self.pos..]) {
            Err(self.error("EOF while parsing a value"))
        } else {
            Err(self.error("expected a value"))
        }
    }

    /// A number per RFC 8259; returns its text.
    fn number(&mut self) -> Result<&'a str, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            None => return Err(self.error("EOF while parsing a value")),
            _ => return Err(self.error("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.digits();
        }
        Ok(&self.text[start..self.pos])
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Cell<'a>, String> {
        Ok(match self.peek() {
            Some(b'"') => Cell::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => {
                let text = self.number()?;
                match text.parse::<i64>() {
                    Ok(v) => Cell::Int(v),
                    Err(_) => Cell::Float(text.parse().map_err(|_| self.error("invalid number"))?),
                }
            }
            Some(b't') => {
                self.literal(b"true")?;
                Cell::Bool(true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                Cell::Bool(false)
            }
            Some(b'n') => {
                self.literal(b"null")?;
                Cell::Null
            }
            Some(b'{') => {
                self.skip_value(0)?;
                Cell::Nested("object")
            }
            Some(b'[') => {
                self.skip_value(0)?;
                Cell::Nested("array")
            }
            None => return Err(self.error("EOF while parsing a value")),
            _ => return Err(self.error("expected a value")),
        })
    }

    /// Walks an object from its `{`: `member` is called with each key when the parser stands
    /// at that key's value, and must consume the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), String>) -> Result<(), String> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.ws();
            match self.peek() {
                Some(b'"') => {}
                None => return Err(self.error("EOF while parsing an object")),
                _ => return Err(self.error("expected a field name")),
            }
            let key = self.string()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            self.ws();
            member(self, key)?;
            if self.comma_or_close(b'}')? {
                return Ok(());
            }
        }
    }

    /// After a member or element: false past a comma, true past the closing bracket.
    fn comma_or_close(&mut self, close: u8) -> Result<bool, String> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(true)
            }
            None if close == b'}' => Err(self.error("EOF while parsing an object")),
            None => Err(self.error("EOF while parsing a list")),
            _ if close == b'}' => Err(self.error("expected `,` or `}`")),
            _ => Err(self.error("expected `,` or `]`")),
        }
    }

    /// Validates and skips one value (objects and arrays recursively).
    fn skip_value(&mut self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        match self.peek() {
            Some(b'"') => {
                self.skip_string()?;
            }
            Some(b'{') => self.object(|p, _| p.skip_value(depth + 1))?,
            Some(b'[') => {
                self.pos += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    self.skip_value(depth + 1)?;
                    if self.comma_or_close(b']')? {
                        return Ok(());
                    }
                }
            }
            _ => {
                self.value()?;
            }
        }
        Ok(())
    }

    /// Like `string`, without building anything.
    fn skip_string(&mut self) -> Result<(), String> {
        self.pos += 1;
        loop {
            self.scan_string_body();
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 1,
                        Some(b'u') => {
                            self.pos += 1;
                            self.unicode_escape()?;
                        }
                        None => return Err(self.error("EOF while parsing a string")),
                        _ => return Err(self.error("invalid escape")),
                    }
                }
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// What serde_json makes of the same line: valid or not, and the same named values.
    fn reference(line: &str, names: &[String]) -> Option<Vec<Cell<'static>>> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let obj = v.as_object()?;
        Some(
            names
                .iter()
                .map(|n| match obj.get(n) {
                    None => Cell::Missing,
                    Some(serde_json::Value::Null) => Cell::Null,
                    Some(serde_json::Value::String(s)) => Cell::Str(Cow::Owned(s.clone())),
                    Some(serde_json::Value::Bool(b)) => Cell::Bool(*b),
                    Some(serde_json::Value::Number(x)) => x.as_i64().map(Cell::Int).unwrap_or(Cell::Float(x.as_f64().unwrap())),
                    Some(serde_json::Value::Object(_)) => Cell::Nested("object"),
                    Some(serde_json::Value::Array(_)) => Cell::Nested("array"),
                })
                .collect(),
        )
    }

    fn pick_fields<'a>(line: &'a str, names: &[String], cells: &mut [Cell<'a>]) -> Result<(), String> {
        FieldPicker::new(names).pick(line, cells)
    }

    /// Checks one line with a picker that has seen the lines before it (so the key-order
    /// cache is exercised too).
    fn check_with(picker: &mut FieldPicker, line: &str) {
        let names = names(&["a", "b", "c"]);
        let mut cells = vec![Cell::Missing; 3];
        let ours = picker.pick(line, &mut cells).ok().map(|_| cells.clone());
        let theirs = reference(line, &names);
        assert_eq!(ours, theirs, "line: {line:?}");
    }

    fn check(line: &str) {
        let names = names(&["a", "b", "c"]);
        let mut cells = vec![Cell::Missing; 3];
        let ours = pick_fields(line, &names, &mut cells).ok().map(|_| cells.clone());
        let theirs = reference(line, &names);
        // serde_json keeps the last of duplicate keys, as we do.
        assert_eq!(ours, theirs, "line: {line:?}");
    }

    #[test]
    fn agrees_with_serde_json_on_handwritten_lines() {
        for line in [
            r#"{"a":"x","b":1,"c":null}"#,
            r#" { "a" : "x\"y\\z\u00e9\ud83d\ude00" , "z": {"deep": [1, 2.5e3, {"k": []}]}, "b": -0.5 } "#,
            r#"{"a":true,"b":false,"c":[]}"#,
            r#"{}"#,
            r#"{"a":"x","a":"y"}"#,
            r#"{"b":12345678901234567890}"#,
            r#"{"a":"tab	inside"}"#,
            r#"{"a":"x",}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":tru}"#,
            r#"{"a":"x"} {}"#,
            r#"{"a" "x"}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":{"b":1,}}"#,
            r#"{a:1}"#,
            r#"[1,2]"#,
            r#""str""#,
            r#"{"a":"unterminated"#,
            r#"{"a":1"#,
            r#"{"a":[1,2"#,
            r#"{"z":nul}"#,
            r#"{"a":1e5,"b":1E-2,"c":-7}"#,
        ] {
            check(line);
        }
    }

    #[test]
    fn agrees_with_serde_json_on_every_truncation_and_many_mutations() {
        let base = r#"{"a":"caf\u00e9 \"q\"","z":{"n":[1,-2.5e-3,true,false,null,{"m":"x"}]},"b":42,"c":"a longer value, well past eight bytes"}"#;
        for cut in 0..=base.len() {
            if base.is_char_boundary(cut) {
                check(&base[..cut]);
            }
        }
        let bytes = base.as_bytes();
        let alphabet = b"{}[]\",:\\ 0-1eE.tfnu\tabcz";
        let names = names(&["a", "b", "c"]);
        let mut shared = FieldPicker::new(&names);
        for i in 0..bytes.len() {
            for &r in alphabet {
                let mut m = bytes.to_vec();
                m[i] = r;
                if let Ok(s) = std::str::from_utf8(&m) {
                    check(s);
                    check_with(&mut shared, s);
                    check_with(&mut shared, base);
                }
            }
        }
    }

    #[test]
    fn errors_name_a_column() {
        let names = names(&["a"]);
        let mut cells = vec![Cell::Missing; 1];
        assert_eq!(pick_fields(r#"{"a":"x""#, &names, &mut cells).unwrap_err(), "invalid JSON: EOF while parsing an object at column 9");
        assert_eq!(pick_fields(r#"{"a":"x"} x"#, &names, &mut cells).unwrap_err(), "invalid JSON: trailing characters at column 11");
        assert_eq!(pick_fields("[1]", &names, &mut cells).unwrap_err(), "expected a JSON object, got an array");
        assert_eq!(pick_fields("null", &names, &mut cells).unwrap_err(), "expected a JSON object, got null");
        assert_eq!(pick_fields(" 12.5 ", &names, &mut cells).unwrap_err(), "expected a JSON object, got a number");
        assert!(pick_fields("not json", &names, &mut cells).unwrap_err().starts_with("invalid JSON: "));
        assert!(pick_fields("nullx", &names, &mut cells).unwrap_err().starts_with("invalid JSON: "));
        assert!(pick_fields("[1, 2", &names, &mut cells).unwrap_err().starts_with("invalid JSON: "));
    }
}
