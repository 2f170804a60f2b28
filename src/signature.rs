//! A bucket's signature as reports and manifests carry it: field names and values in the
//! profile's order. A leaf, so the manifest and execute need nothing of the analysis.

/// A normalised signature: field names and values, in the profile's field order. Serialises as
/// a JSON object whose keys keep that order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Signature(pub Vec<(String, String)>);

impl Signature {
    pub fn new(fields: &[String], values: &[String]) -> Signature {
        Signature(fields.iter().cloned().zip(values.iter().cloned()).collect())
    }

    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(_, v)| v.as_str())
    }

    pub fn get(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|(f, _)| f == field).map(|(_, v)| v.as_str())
    }
}

impl serde::Serialize for Signature {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Signature {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let pairs = map
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => Ok((k, s)),
                other => Err(serde::de::Error::custom(format!("signature field `{k}` must be a string, got {other}"))),
            })
            .collect::<Result<_, _>>()?;
        Ok(Signature(pairs))
    }
}
