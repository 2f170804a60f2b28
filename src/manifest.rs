//! The replay manifest (`dlqf.manifest/1`): a header line, then one entry per message, sealed
//! by the SHA-256 of the entry lines. It is the only thing `execute` trusts.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::signature::Signature;

pub const FORMAT: &str = "dlqf.manifest/1";

/// Failed attempts that make a message poison when the policy does not say.
pub const DEFAULT_MAX_ATTEMPTS: i64 = 3;

/// What the gate decided for one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Replay,
    PoisonAttempts,
    PoisonUncleared,
}

impl Decision {
    pub const ALL: [Decision; 3] = [Decision::Replay, Decision::PoisonAttempts, Decision::PoisonUncleared];

    pub fn name(self) -> &'static str {
        match self {
            Decision::Replay => "replay",
            Decision::PoisonAttempts => "poison_attempts",
            Decision::PoisonUncleared => "poison_uncleared",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionCounts {
    pub replay: u64,
    pub poison_attempts: u64,
    pub poison_uncleared: u64,
}

impl DecisionCounts {
    pub fn add(&mut self, d: Decision) {
        *self.get_mut(d) += 1;
    }

    pub fn get(&self, d: Decision) -> u64 {
        match d {
            Decision::Replay => self.replay,
            Decision::PoisonAttempts => self.poison_attempts,
            Decision::PoisonUncleared => self.poison_uncleared,
        }
    }

    fn get_mut(&mut self, d: Decision) -> &mut u64 {
        match d {
            Decision::Replay => &mut self.replay,
            Decision::PoisonAttempts => &mut self.poison_attempts,
            Decision::PoisonUncleared => &mut self.poison_uncleared,
        }
    }

    pub fn total(&self) -> u64 {
        self.replay + self.poison_attempts + self.poison_uncleared
    }
}

/// One input as it was when the manifest was planned, so a reviewer can tell it is current.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputStamp {
    pub path: String,
    pub size: Option<u64>,
    pub modified: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub manifest: String,
    pub created_at: String,
    pub tool_version: String,
    pub profile: String,
    pub inputs: Vec<InputStamp>,
    pub policy: Value,
    /// The repairs applied at plan time (`--fix`), if any.
    #[serde(default)]
    pub fixes: Value,
    /// The category rules and routing a `routing` policy decided with (else null).
    #[serde(default)]
    pub classification: Value,
    pub counts: DecisionCounts,
    pub rejected: u64,
    pub entries: u64,
    pub entries_sha256: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub decision: Decision,
    pub signature: Signature,
    pub id: String,
    pub attempts: i64,
    pub record: Value,
}

/// Hashes entry lines as they are written; the digest seals them.
#[derive(Default)]
pub struct Sealer {
    hasher: Sha256,
    pub entries: u64,
    pub counts: DecisionCounts,
}

impl Sealer {
    /// Adds one entry line, in manifest order, to the seal.
    pub fn seal(&mut self, line: &[u8], decision: Decision) {
        self.hasher.update(line);
        self.entries += 1;
        self.counts.add(decision);
    }

    pub fn digest(self) -> String {
        hex(&self.hasher.finalize())
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A manifest opened for reading: the header, checked against its entries.
pub struct Manifest {
    pub header: Header,
    path: std::path::PathBuf,
}

impl Manifest {
    /// Reads the header and verifies every entry line against `entries_sha256` and the entry
    /// count, without keeping the entries in memory.
    pub fn open_verified(path: &Path) -> Result<Manifest> {
        let name = path.display();
        let mut reader = BufReader::new(File::open(path).with_context(|| format!("{name}: cannot open"))?);
        let mut first = String::new();
        reader.read_line(&mut first).with_context(|| format!("{name}: cannot read"))?;
        let header: Header = serde_json::from_str(first.trim_end())
            .with_context(|| format!("{name}:1: not a dlqf manifest header"))?;
        if header.manifest != FORMAT {
            bail!("{name}: manifest format `{}` is not {FORMAT}", header.manifest);
        }
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut lines = 0u64;
        let mut last = b'\n';
        loop {
            let n = reader.read(&mut buf).with_context(|| format!("{name}: cannot read"))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
            last = buf[n - 1];
        }
        let digest = hex(&hasher.finalize());
        if digest != header.entries_sha256 || lines != header.entries || last != b'\n' {
            bail!(
                "{name}: entries do not match the header (sha256 {digest}, {lines} lines; header says {}, {} entries): the manifest was altered or truncated; nothing was sent",
                header.entries_sha256,
                header.entries
            );
        }
        Ok(Manifest { header, path: path.to_path_buf() })
    }

    /// The entries in order. Call only after `open_verified`.
    pub fn entries(&self) -> Result<impl Iterator<Item = Result<Entry>> + '_> {
        let mut reader = BufReader::new(File::open(&self.path)?);
        let mut skip = String::new();
        reader.read_line(&mut skip)?;
        Ok(reader.lines().enumerate().map(move |(i, line)| {
            let line = line.with_context(|| format!("{}: cannot read", self.path.display()))?;
            serde_json::from_str(&line).with_context(|| format!("{}:{}: not a manifest entry", self.path.display(), i + 2))
        }))
    }
}
