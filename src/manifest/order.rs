//! The order a key's messages go back in (`execute --ordered`, reported by `show`): per origin
//! topic and key, the entries in the order of the positions sealed in their origins, each one
//! waiting for the one before it.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::Entry;

/// An entry's place in the manifest: 0 for the first entry.
pub type Place = u64;

/// What orders a key's messages: their offsets where every one has one in the same partition,
/// else their records' times, else the manifest's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    Offset,
    Time,
    Manifest,
}

/// The chains of a manifest's keys with more than one message.
#[derive(Debug, Default)]
pub struct Chains {
    /// For each chained entry after the first of its key: the entry before it.
    before: HashMap<Place, Place>,
    /// Keys (origin topic and key) with more than one message, by what orders them.
    pub keys: BTreeMap<Basis, u64>,
    /// The longest chain: how many messages, and the place of its first.
    pub longest: Option<(u64, Place)>,
}

/// One keyed entry as ordering sees it.
struct Member {
    /// The digest of its origin topic and key.
    group: u128,
    place: Place,
    partition: Option<i64>,
    offset: Option<i64>,
    time: Option<i64>,
}

impl Chains {
    /// Reads the order facts of every entry (not their records' fields: what plan sealed).
    pub fn of(entries: impl Iterator<Item = Result<Entry>>) -> Result<Chains> {
        let mut members = Vec::new();
        for (place, entry) in entries.enumerate() {
            if let Some(member) = Member::of(place as Place, &entry?) {
                members.push(member);
            }
        }
        members.sort_unstable_by_key(|m| (m.group, m.place));
        let mut chains = Chains::default();
        for group in members.chunk_by_mut(|a, b| a.group == b.group).filter(|g| g.len() > 1) {
            let basis = basis(group);
            match basis {
                Basis::Offset => group.sort_by_key(|m| (m.offset, m.place)),
                Basis::Time => group.sort_by_key(|m| (m.time, m.place)),
                Basis::Manifest => {}
            }
            for pair in group.windows(2) {
                chains.before.insert(pair[1].place, pair[0].place);
            }
            *chains.keys.entry(basis).or_default() += 1;
            let length = group.len() as u64;
            // The longest; of equal ones, the one whose first message comes first.
            let first = group.iter().map(|m| m.place).min().expect("a group has members");
            if chains.longest.is_none_or(|(n, at)| (length, std::cmp::Reverse(first)) > (n, std::cmp::Reverse(at))) {
                chains.longest = Some((length, first));
            }
        }
        Ok(chains)
    }

    /// The entry before this one in its key's order, if any.
    pub fn before(&self, place: Place) -> Option<Place> {
        self.before.get(&place).copied()
    }

    /// The entries with one after them.
    pub fn predecessors(&self) -> impl Iterator<Item = Place> + '_ {
        self.before.values().copied()
    }
}

/// What orders a group: offsets when all have one in one partition, else times when all have
/// one, else the manifest.
fn basis(group: &[Member]) -> Basis {
    let partition = group[0].partition;
    if group.iter().all(|m| m.offset.is_some() && m.partition == partition) {
        Basis::Offset
    } else if group.iter().all(|m| m.time.is_some()) {
        Basis::Time
    } else {
        Basis::Manifest
    }
}

impl Member {
    /// An entry with an origin key (a null or absent key is not ordered).
    fn of(place: Place, entry: &Entry) -> Option<Member> {
        let origin = entry.origin.as_ref()?;
        let key = origin.get("key").filter(|k| !k.is_null())?;
        let mut named = Vec::new();
        if let Some(Value::String(topic)) = origin.get("topic") {
            named.extend_from_slice(topic.as_bytes());
        }
        // The topic ends where the key begins: a key's JSON text never starts with 0xff.
        named.push(0xff);
        named.extend_from_slice(&serde_json::to_vec(key).expect("values serialise"));
        let number = |name: &str| origin.get(name).and_then(Value::as_i64);
        let time = origin.get("time").and_then(Value::as_str).and_then(crate::timestamp::parse_rfc3339);
        Some(Member { group: xxhash_rust::xxh3::xxh3_128(&named), place, partition: number("partition"), offset: number("offset"), time })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Decision;
    use crate::signature::Signature;

    fn entry(key: Option<&str>, topic: &str, position: Value) -> Entry {
        let mut origin = serde_json::json!({"topic": topic, "key": key, "headers": []});
        for (name, value) in position.as_object().unwrap() {
            origin[name] = value.clone();
        }
        Entry { key: "k".into(), decision: Decision::Replay, signature: Signature(Vec::new()), id: "i".into(), attempts: 0, max_attempts: 3, record: Value::Null, origin: Some(origin) }
    }

    fn chains(entries: Vec<Entry>) -> Chains {
        Chains::of(entries.into_iter().map(Ok)).unwrap()
    }

    #[test]
    fn a_keys_entries_follow_their_offsets_else_times_else_the_manifest() {
        let at = |offset: i64| serde_json::json!({"partition": 0, "offset": offset, "time": "2026-10-01T00:00:00Z"});
        // Failure order 2, 0, 1 of one key; another key alone; a key in another topic.
        let c = chains(vec![entry(Some("a"), "t", at(12)), entry(Some("a"), "t", at(10)), entry(Some("b"), "t", at(1)), entry(Some("a"), "t", at(11)), entry(Some("a"), "u", at(5))]);
        assert_eq!((c.before(1), c.before(3), c.before(0)), (None, Some(1), Some(3)));
        assert_eq!((c.before(2), c.before(4)), (None, None), "a key alone, and the same key on another topic, wait for nothing");
        assert_eq!(c.keys, BTreeMap::from([(Basis::Offset, 1)]));
        assert_eq!(c.longest, Some((3, 0)));

        // Two partitions: offsets do not compare, times do (ties in manifest order).
        let t = |partition: i64, time: &str| serde_json::json!({"partition": partition, "offset": 1, "time": time});
        let c = chains(vec![entry(Some("a"), "t", t(0, "2026-10-01T00:00:02Z")), entry(Some("a"), "t", t(1, "2026-10-01T00:00:01Z")), entry(Some("a"), "t", t(1, "2026-10-01T00:00:01Z"))]);
        assert_eq!((c.before(1), c.before(2), c.before(0)), (None, Some(1), Some(2)));
        assert_eq!(c.keys, BTreeMap::from([(Basis::Time, 1)]));

        // Nothing to order by: the manifest's order. No key: not ordered.
        let c = chains(vec![entry(Some("a"), "t", serde_json::json!({})), entry(None, "t", serde_json::json!({})), entry(Some("a"), "t", serde_json::json!({}))]);
        assert_eq!((c.before(0), c.before(1), c.before(2)), (None, None, Some(0)));
        assert_eq!(c.keys, BTreeMap::from([(Basis::Manifest, 1)]));
    }
}
