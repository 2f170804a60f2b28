//! The durable ledger of replay work: which keys are done, claimed (by whom, until when),
//! failed how often, or quarantined. SQLite in WAL mode, so a kill -9 loses nothing.

use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

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

pub struct Ledger {
    conn: Mutex<Connection>,
    owner: String,
    lease_ms: i64,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// An owner is `host:pid:start.n`; on this host, a claim whose process is gone is abandoned.
fn owner_is_dead(owner: &str) -> bool {
    let mut parts = owner.split(':');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else { return false };
    host == hostname() && !Path::new(&format!("/proc/{pid}")).exists()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}

impl Ledger {
    pub fn open_sqlite(path: &Path, lease_ms: i64) -> Result<Ledger> {
        let conn = Connection::open(path).with_context(|| format!("ledger {}: cannot open", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS ledger (
                key TEXT PRIMARY KEY,
                state TEXT NOT NULL CHECK (state IN ('claimed', 'failed', 'done', 'quarantining', 'quarantined')),
                failures INTEGER NOT NULL DEFAULT 0,
                owner TEXT,
                lease_until INTEGER,
                manifest TEXT,
                updated_at INTEGER NOT NULL
            )",
        )
        .with_context(|| format!("ledger {}: cannot create its table", path.display()))?;
        static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let owner = format!("{}:{}:{}.{n}", hostname(), std::process::id(), now_ms());
        Ok(Ledger { conn: Mutex::new(conn), owner, lease_ms })
    }

    /// Opens an existing ledger read-only (for dry runs); None when there is none yet.
    pub fn open_sqlite_readonly(path: &Path) -> Result<Option<Ledger>> {
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("ledger {}: cannot open", path.display()))?;
        Ok(Some(Ledger { conn: Mutex::new(conn), owner: String::new(), lease_ms: 0 }))
    }

    /// Claims `key` for replay or quarantine, atomically.
    pub fn claim(&self, key: &str, purpose: Purpose, manifest: &str) -> Result<Claim> {
        let mut conn = self.conn.lock().expect("ledger lock");
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now = now_ms();
        let row: Option<(String, i64, Option<String>, Option<i64>)> = tx
            .query_row("SELECT state, failures, owner, lease_until FROM ledger WHERE key = ?1", [key], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        let claimed_state = if purpose == Purpose::Replay { "claimed" } else { "quarantining" };
        let answer = match row {
            None => {
                tx.execute(
                    "INSERT INTO ledger (key, state, failures, owner, lease_until, manifest, updated_at) VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6)",
                    params![key, claimed_state, self.owner, now + self.lease_ms, manifest, now],
                )?;
                Claim::Granted { failures: 0 }
            }
            Some((state, failures, owner, lease)) => match state.as_str() {
                "done" => Claim::Done,
                "quarantined" => Claim::Quarantined,
                "claimed" | "quarantining"
                    if owner.as_deref().is_some_and(|o| o != self.owner && !owner_is_dead(o)) && lease.unwrap_or(0) > now =>
                {
                    Claim::Busy
                }
                _ => {
                    tx.execute(
                        "UPDATE ledger SET state = ?2, owner = ?3, lease_until = ?4, manifest = ?5, updated_at = ?6 WHERE key = ?1",
                        params![key, claimed_state, self.owner, now + self.lease_ms, manifest, now],
                    )?;
                    Claim::Granted { failures }
                }
            },
        };
        tx.commit()?;
        Ok(answer)
    }

    /// Reads a key's state without claiming it (for dry runs).
    pub fn peek(&self, key: &str) -> Result<Option<(String, i64)>> {
        let conn = self.conn.lock().expect("ledger lock");
        Ok(conn.query_row("SELECT state, failures FROM ledger WHERE key = ?1", [key], |r| Ok((r.get(0)?, r.get(1)?))).optional()?)
    }

    pub fn mark_done(&self, key: &str) -> Result<()> {
        self.finish(key, "UPDATE ledger SET state = 'done', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2")
    }

    pub fn mark_quarantined(&self, key: &str) -> Result<()> {
        self.finish(key, "UPDATE ledger SET state = 'quarantined', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2")
    }

    /// Counts a failed replay against the key and releases it.
    pub fn record_failure(&self, key: &str) -> Result<()> {
        self.finish(key, "UPDATE ledger SET state = 'failed', failures = failures + 1, owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2")
    }

    fn finish(&self, key: &str, sql: &str) -> Result<()> {
        let conn = self.conn.lock().expect("ledger lock");
        conn.execute(sql, params![key, self.owner, now_ms()])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_claimed_once_then_done_for_everyone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let a = Ledger::open_sqlite(&path, 60_000).unwrap();
        let b = Ledger::open_sqlite(&path, 60_000).unwrap();
        assert_eq!(a.claim("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 0 });
        // Same process, another ledger handle: a live owner, so busy.
        assert_eq!(b.claim("k", Purpose::Replay, "m").unwrap(), Claim::Busy);
        a.record_failure("k").unwrap();
        assert_eq!(b.claim("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 1 });
        b.mark_done("k").unwrap();
        assert_eq!(a.claim("k", Purpose::Replay, "m").unwrap(), Claim::Done);
        assert_eq!(a.claim("q", Purpose::Quarantine, "m").unwrap(), Claim::Granted { failures: 0 });
        a.mark_quarantined("q").unwrap();
        assert_eq!(b.claim("q", Purpose::Quarantine, "m").unwrap(), Claim::Quarantined);
    }

    #[test]
    fn claims_of_a_dead_process_or_past_their_lease_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let a = Ledger::open_sqlite(&path, 60_000).unwrap();
        a.claim("k", Purpose::Replay, "m").unwrap();
        a.conn.lock().unwrap().execute("UPDATE ledger SET owner = ?1", [format!("{}:999999999:1", hostname())]).unwrap();
        assert_eq!(a.claim("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 0 });
        let short = Ledger::open_sqlite(&path, 1).unwrap();
        short.claim("j", Purpose::Replay, "m").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(a.claim("j", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 0 });
    }
}
