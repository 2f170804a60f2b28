//! The durable ledger of replay work: which keys are done, claimed (by whom, until when),
//! failed how often, or quarantined. A small async trait; SQLite and PostgreSQL implement it.

mod postgres;
mod sqlite;
mod tls;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;

pub use postgres::{redact, PostgresLedger};
pub use sqlite::SqliteLedger;

use futures_util::future::BoxFuture;

/// The answer to a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The caller owns the key now; `failures` replays of it have failed before.
    Granted { failures: i64 },
    /// Already replayed successfully: nothing to do.
    Done,
    /// Already in the quarantine.
    Quarantined,
    /// Another live executor holds the key until its lease ends.
    Busy,
}

/// What a claim is for: replaying the message, or quarantining it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Replay,
    Quarantine,
}

/// How a claimed key ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    Done,
    Quarantined,
    /// A message failure: counted against the key, which is released.
    Failed,
    /// Released without a charge: the target failed, the run stopped, or whose failure it was
    /// is decided at the end of the run (`Ledger::charge`).
    Released,
}

pub trait Ledger: Send + Sync {
    /// Claims `key` atomically, for this executor only.
    fn claim<'a>(&'a self, key: &'a str, purpose: Purpose, manifest: &'a str) -> BoxFuture<'a, Result<Claim>>;
    /// Ends this executor's claim on `key`.
    fn finish<'a>(&'a self, key: &'a str, how: Finish) -> BoxFuture<'a, Result<()>>;
    /// Extends this executor's claim on `key` by a lease, while its delivery runs.
    fn renew<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Counts one failure against a released key (unless someone has finished it since).
    fn charge<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>>;
    /// A key's state and failure count, without claiming it (for dry runs).
    fn peek<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<(String, i64)>>>;
}

/// Opens the ledger a `--ledger` names: `postgres://…` or a SQLite file path. Must run inside
/// the tokio runtime that will use it.
pub async fn open(spec: &str, lease_ms: i64) -> Result<Box<dyn Ledger>> {
    if is_postgres(spec) {
        Ok(Box::new(PostgresLedger::connect(spec, lease_ms, true).await?))
    } else {
        Ok(Box::new(SqliteLedger::open(Path::new(spec), lease_ms)?))
    }
}

/// Opens an existing ledger without changing anything (for dry runs); None when there is none.
pub async fn open_readonly(spec: &str) -> Result<Option<Box<dyn Ledger>>> {
    if is_postgres(spec) {
        Ok(Some(Box::new(PostgresLedger::connect(spec, 0, false).await?)))
    } else {
        Ok(SqliteLedger::open_readonly(Path::new(spec))?.map(|l| Box::new(l) as Box<dyn Ledger>))
    }
}

fn is_postgres(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A unique executor name, `host:pid:start.n`.
pub(crate) fn new_owner() -> String {
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}:{}:{}.{n}", hostname(), std::process::id(), now_ms())
}

/// On this host, a claim whose process is gone is abandoned and can be taken over at once.
pub(crate) fn owner_is_dead(owner: &str) -> bool {
    let mut parts = owner.split(':');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else { return false };
    host == hostname() && !Path::new(&format!("/proc/{pid}")).exists()
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}
