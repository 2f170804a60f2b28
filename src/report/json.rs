//! JSON reports: the stable machine contract (`dlqf.rank/1`, …), pretty-printed, one trailing
//! newline. Field order is fixed by the report structs.

use anyhow::Result;
use serde::Serialize;

pub fn render<T: Serialize>(report: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(report)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A report pretty-printed down to `depth` levels of nesting, each value deeper than that on
/// one line: a long list of small objects (an execute report's delivered entries) stays one
/// line an object.
pub fn render_to_depth<T: Serialize>(report: &T, depth: usize) -> Result<Vec<u8>> {
    fn write(value: &serde_json::Value, level: usize, depth: usize, out: &mut Vec<u8>) -> Result<()> {
        let indent = |out: &mut Vec<u8>, n: usize| out.extend(std::iter::repeat_n(b' ', 2 * n));
        let (items, open, close): (Vec<(Option<&String>, &serde_json::Value)>, u8, u8) = match value {
            serde_json::Value::Object(map) if level < depth && !map.is_empty() => (map.iter().map(|(k, v)| (Some(k), v)).collect(), b'{', b'}'),
            serde_json::Value::Array(list) if level < depth && !list.is_empty() => (list.iter().map(|v| (None, v)).collect(), b'[', b']'),
            other => {
                serde_json::to_writer(&mut *out, other)?;
                return Ok(());
            }
        };
        out.push(open);
        for (i, (key, item)) in items.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
            indent(out, level + 1);
            if let Some(key) = key {
                serde_json::to_writer(&mut *out, key)?;
                out.extend_from_slice(b": ");
            }
            write(item, level + 1, depth, out)?;
        }
        out.push(b'\n');
        indent(out, level);
        out.push(close);
        Ok(())
    }
    let mut out = Vec::new();
    write(&serde_json::to_value(report)?, 0, depth, &mut out)?;
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn to_depth_is_pretty_json_with_deep_values_on_one_line() {
        let value = serde_json::json!({"a": 1, "b": {"c": [{"d": 2, "e": [3]}, {"d": 4}], "f": {}}, "g": []});
        let full = super::render_to_depth(&value, usize::MAX).unwrap();
        assert_eq!(full, super::render(&value).unwrap(), "unlimited depth is serde_json's pretty form");
        let cut = String::from_utf8(super::render_to_depth(&value, 3).unwrap()).unwrap();
        assert_eq!(cut, "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": [\n      {\"d\":2,\"e\":[3]},\n      {\"d\":4}\n    ],\n    \"f\": {}\n  },\n  \"g\": []\n}\n");
        let parsed: serde_json::Value = serde_json::from_str(&cut).unwrap();
        assert_eq!(parsed, value);
    }
}
