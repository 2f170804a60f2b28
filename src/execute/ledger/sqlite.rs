//! The ledger in one SQLite file, in WAL mode: a kill -9 loses nothing, and several executors
//! on one host can share it (SQLite serialises their writes; each waits its turn).

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::{new_owner, now_ms, owner_is_dead, Claim, Finish, Ledger, Purpose};
use crate::execute::backoff::Backoff;
use futures_util::future::BoxFuture;

pub struct SqliteLedger {
    conn: Mutex<Connection>,
    owner: String,
    lease_ms: i64,
}

impl SqliteLedger {
    /// Opens (or creates) the ledger. Executors starting together on a new file contend for
    /// the switch to WAL and the table's creation, which SQLite answers with "locked" without
    /// waiting: those steps are retried with backoff for up to `BUSY_WAIT`.
    pub fn open(path: &Path, lease_ms: i64) -> Result<SqliteLedger> {
        let name = path.display();
        let started = std::time::Instant::now();
        let mut retry = 0;
        let conn = loop {
            match Self::prepare(path) {
                Ok(conn) => break conn,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_WAIT => {
                    retry += 1;
                    std::thread::sleep(Backoff::default().delay(retry));
                }
                Err(e) => return Err(e).with_context(|| format!("ledger {name}: cannot open")),
            }
        };
        Ok(SqliteLedger { conn: Mutex::new(conn), owner: new_owner(), lease_ms })
    }

    fn prepare(path: &Path) -> rusqlite::Result<Connection> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_WAIT)?;
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
        )?;
        Ok(conn)
    }

    /// Opens an existing ledger read-only (for dry runs); None when there is none yet.
    pub fn open_readonly(path: &Path) -> Result<Option<SqliteLedger>> {
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("ledger {}: cannot open", path.display()))?;
        Ok(Some(SqliteLedger { conn: Mutex::new(conn), owner: String::new(), lease_ms: 0 }))
    }

    /// Claims `key` for replay or quarantine, atomically.
    fn claim_now(&self, key: &str, purpose: Purpose, manifest: &str) -> Result<Claim> {
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

    fn peek_now(&self, key: &str) -> Result<Option<(String, i64)>> {
        let conn = self.conn.lock().expect("ledger lock");
        Ok(conn.query_row("SELECT state, failures FROM ledger WHERE key = ?1", [key], |r| Ok((r.get(0)?, r.get(1)?))).optional()?)
    }

    fn finish_now(&self, key: &str, how: Finish) -> Result<()> {
        let sql = match how {
            Finish::Done => "UPDATE ledger SET state = 'done', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
            Finish::Quarantined => "UPDATE ledger SET state = 'quarantined', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
            Finish::Failed => "UPDATE ledger SET state = 'failed', failures = failures + 1, owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
            Finish::Released => "UPDATE ledger SET state = 'failed', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
        };
        let conn = self.conn.lock().expect("ledger lock");
        conn.execute(sql, params![key, self.owner, now_ms()])?;
        Ok(())
    }

    fn renew_now(&self, key: &str) -> Result<()> {
        let conn = self.conn.lock().expect("ledger lock");
        let now = now_ms();
        conn.execute("UPDATE ledger SET lease_until = ?3, updated_at = ?4 WHERE key = ?1 AND owner = ?2", params![key, self.owner, now + self.lease_ms, now])?;
        Ok(())
    }

    fn charge_now(&self, key: &str) -> Result<()> {
        let conn = self.conn.lock().expect("ledger lock");
        conn.execute("UPDATE ledger SET failures = failures + 1, updated_at = ?2 WHERE key = ?1 AND state = 'failed'", params![key, now_ms()])?;
        Ok(())
    }
}

impl Ledger for SqliteLedger {
    fn claim<'a>(&'a self, key: &'a str, purpose: Purpose, manifest: &'a str) -> BoxFuture<'a, Result<Claim>> {
        Box::pin(std::future::ready(self.claim_now(key, purpose, manifest)))
    }

    fn finish<'a>(&'a self, key: &'a str, how: Finish) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.finish_now(key, how)))
    }

    fn peek<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<(String, i64)>>> {
        Box::pin(std::future::ready(self.peek_now(key)))
    }

    fn renew<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.renew_now(key)))
    }

    fn charge<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.charge_now(key)))
    }
}

/// How long an executor waits for others holding the ledger file.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_claimed_once_then_done_for_everyone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let a = SqliteLedger::open(&path, 60_000).unwrap();
        let b = SqliteLedger::open(&path, 60_000).unwrap();
        assert_eq!(a.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 0 });
        // Same process, another ledger handle: a live owner, so busy.
        assert_eq!(b.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Busy);
        a.finish_now("k", Finish::Failed).unwrap();
        assert_eq!(b.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 1 });
        b.finish_now("k", Finish::Done).unwrap();
        assert_eq!(a.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Done);
        assert_eq!(a.claim_now("q", Purpose::Quarantine, "m").unwrap(), Claim::Granted { failures: 0 });
        a.finish_now("q", Finish::Quarantined).unwrap();
        assert_eq!(b.claim_now("q", Purpose::Quarantine, "m").unwrap(), Claim::Quarantined);
    }

    #[test]
    fn a_released_key_is_charged_only_when_told_and_only_while_released() {
        let dir = tempfile::tempdir().unwrap();
        let a = SqliteLedger::open(&dir.path().join("ledger.db"), 60_000).unwrap();
        a.claim_now("k", Purpose::Replay, "m").unwrap();
        a.finish_now("k", Finish::Released).unwrap();
        assert_eq!(a.peek_now("k").unwrap(), Some(("failed".into(), 0)), "released: claimable, nothing charged");
        a.charge_now("k").unwrap();
        assert_eq!(a.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 1 });
        a.charge_now("k").unwrap(); // claimed again: a charge must not land
        a.finish_now("k", Finish::Done).unwrap();
        a.charge_now("k").unwrap();
        assert_eq!(a.peek_now("k").unwrap(), Some(("done".into(), 1)));
    }

    #[test]
    fn a_renewed_claim_outlives_its_first_lease() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let (slow, other) = (SqliteLedger::open(&path, 50).unwrap(), SqliteLedger::open(&path, 50).unwrap());
        slow.claim_now("k", Purpose::Replay, "m").unwrap();
        for _ in 0..4 {
            std::thread::sleep(std::time::Duration::from_millis(25));
            slow.renew_now("k").unwrap();
        }
        assert_eq!(other.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Busy, "100 ms on a 50 ms lease, renewed");
    }

    #[test]
    fn claims_of_a_dead_process_or_past_their_lease_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let a = SqliteLedger::open(&path, 60_000).unwrap();
        a.claim_now("k", Purpose::Replay, "m").unwrap();
        a.conn.lock().unwrap().execute("UPDATE ledger SET owner = ?1", [format!("{}:999999999:1", super::super::hostname())]).unwrap();
        assert_eq!(a.claim_now("k", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 0 });
        let short = SqliteLedger::open(&path, 1).unwrap();
        short.claim_now("j", Purpose::Replay, "m").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(a.claim_now("j", Purpose::Replay, "m").unwrap(), Claim::Granted { failures: 0 });
    }
}
