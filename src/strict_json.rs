//! JSON whose object keys are unique at every depth. Sealed headers are read this way: with a
//! key written twice, one reader takes the first value and another the last, so a seal over
//! the parsed form would not hold for every reader.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Parses `bytes` as one JSON value, refusing a key repeated in any object.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Unique.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

struct Unique;

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("a number JSON cannot hold"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Unique)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut seen = HashSet::new();
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("the key \"{key}\" appears twice in one object")));
            }
            let value = map.next_value_seed(Unique)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_key_twice_at_any_depth_is_refused_and_the_rest_parses_as_serde_json_does() {
        let text = br#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": {"d": 18446744073709551615}}"#;
        assert_eq!(super::parse(text).unwrap(), serde_json::from_slice::<serde_json::Value>(text).unwrap());
        for twice in [&br#"{"a": 1, "a": 2}"#[..], br#"{"p": {"x": 1, "y": [{"k": 1, "k": 1}]}}"#] {
            let e = super::parse(twice).unwrap_err().to_string();
            assert!(e.contains("appears twice"), "{e}");
        }
        assert!(super::parse(br#"{"a": 1} x"#).is_err(), "trailing bytes");
    }
}
