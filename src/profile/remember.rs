//! Per-row normalisers' answers remembered by a digest of what they read: a dump repeats its
//! messages and traces far more often than not, and normalising one costs microseconds.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;

/// Answers remembered per thread before the memory starts over, and the longest message
/// remembered by its text (a longer one is normalised each time).
const REMEMBERED: usize = 1 << 16;
const LONGEST: usize = 16 << 10;

/// A secret drawn per process for the digests keys are made of (xxh3's keyed form, 192
/// bytes, made once where a seed would be made into one for every long text): no dump can aim
/// two texts at one digest.
static SECRET: std::sync::LazyLock<[u8; 192]> = std::sync::LazyLock::new(|| {
    use std::hash::{BuildHasher, Hasher};
    let mut state = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let mut secret = [0u8; 192];
    for word in secret.chunks_exact_mut(8) {
        // splitmix64: each word of the secret from the last.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    secret
});

/// The 128-bit digest under this process's secret that answers are remembered by.
pub fn digest(bytes: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128_with_secret(bytes, &*SECRET)
}

/// Answers by key, each distinct answer stored once: a lookup reads a small key, and an
/// answer used row after row stays in the cores' caches where thousands of copies would not.
pub struct Answers<K> {
    known: HashMap<K, u32, foldhash::fast::FixedState>,
    answers: Vec<String>,
    numbered: HashMap<String, u32, foldhash::fast::FixedState>,
}

impl<K: Hash + Eq> Default for Answers<K> {
    fn default() -> Answers<K> {
        Answers { known: HashMap::default(), answers: Vec::new(), numbered: HashMap::default() }
    }
}

impl<K: Hash + Eq> Answers<K> {
    pub fn get(&self, key: &K) -> Option<&str> {
        self.known.get(key).map(|&number| self.answers[number as usize].as_str())
    }

    /// Remembers `answer` for `key`; a full memory starts over first.
    pub fn remember(&mut self, key: K, answer: String) {
        if self.known.len() >= REMEMBERED {
            self.known.clear();
            self.answers.clear();
            self.numbered.clear();
        }
        let answers = &mut self.answers;
        let number = *self.numbered.entry(answer).or_insert_with_key(|answer| {
            answers.push(answer.clone());
            answers.len() as u32 - 1
        });
        self.known.insert(key, number);
    }
}

/// Which function of the text an answer is, so two normalisers never share answers.
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
pub enum Of {
    Template,
    RootCause,
    /// A template refined by one learned templates file (`Learned::serial`).
    Learned(u64),
}

thread_local! {
    static BY_TEXT: RefCell<Answers<(Of, u128)>> = RefCell::new(Answers::default());
}

/// `with` given `compute()`, the answer of `of` for `text`, or that answer remembered from an
/// earlier row whose text was the same (by its `digest`).
pub fn with_remembered<T>(of: Of, text: &str, compute: impl FnOnce() -> String, with: impl FnOnce(&str) -> T) -> T {
    if text.len() > LONGEST {
        return with(&compute());
    }
    let key = (of, digest(text.as_bytes()));
    BY_TEXT.with(|memory| {
        let mut memory = memory.borrow_mut();
        if let Some(answer) = memory.get(&key) {
            return with(answer);
        }
        let answer = compute();
        let out = with(&answer);
        memory.remember(key, answer);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_the_computed_one_first_and_remembered_after() {
        let mut computed = 0;
        for _ in 0..3 {
            let got = with_remembered(Of::Template, "user 42 not found", || {
                computed += 1;
                "user <*> not found".to_string()
            }, str::to_string);
            assert_eq!(got, "user <*> not found");
        }
        assert_eq!(computed, 1);
        // Another function of the same text is not answered from the first's memory.
        let other = with_remembered(Of::RootCause, "user 42 not found", || "other".to_string(), str::to_string);
        assert_eq!(other, "other");
    }

    #[test]
    fn a_full_memory_starts_over_and_keeps_answering_right() {
        let mut answers: Answers<u32> = Answers::default();
        for i in 0..(REMEMBERED as u32 + 10) {
            answers.remember(i, format!("a{}", i % 3));
        }
        let last = REMEMBERED as u32 + 9;
        assert_eq!(answers.get(&last), Some(format!("a{}", last % 3).as_str()));
        assert_eq!(answers.get(&0), None);
        assert!(answers.answers.len() <= 3);
    }
}
