//! The ledger in one SQLite file, in WAL mode: a kill -9 loses nothing, and several executors
//! on one host can share it (SQLite serialises their writes; each waits its turn).
//!
//! One thread owns the connection and commits whatever requests are waiting in one
//! transaction (group commit): a request is answered only after its transaction committed, so
//! each claim and finish is as durable as if it had its own, at a fraction of the cost.

use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use tokio::sync::oneshot;

use super::{new_owner, now_ms, owner_is_dead, Claim, Finish, Ledger, Purpose};
use crate::execute::backoff::Backoff;
use futures_util::future::BoxFuture;

pub struct SqliteLedger {
    requests: Option<mpsc::Sender<Request>>,
    writer: Option<JoinHandle<()>>,
}

/// One call on the ledger, answered after the transaction holding it committed.
struct Request {
    op: Op,
    answer: oneshot::Sender<Result<Answer>>,
}

enum Op {
    Claim { key: String, purpose: Purpose, manifest: String },
    Finish { key: String, how: Finish },
    Renew { key: String },
    Charge { key: String },
    Peek { key: String },
}

enum Answer {
    Claim(Claim),
    Peek(Option<(String, i64)>),
    Done,
}

/// At most this many requests share a transaction.
const MAX_BATCH: usize = 1024;

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
        Ok(Self::serve(Book { conn, owner: new_owner(), lease_ms, behavior: TransactionBehavior::Immediate }))
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
        Ok(Some(Self::serve(Book { conn, owner: String::new(), lease_ms: 0, behavior: TransactionBehavior::Deferred })))
    }

    /// Starts the thread that owns the connection.
    fn serve(mut book: Book) -> SqliteLedger {
        let (requests, waiting) = mpsc::channel::<Request>();
        let writer = std::thread::Builder::new()
            .name("dlqf-ledger".into())
            .spawn(move || {
                while let Ok(first) = waiting.recv() {
                    let mut batch = vec![first];
                    batch.extend(waiting.try_iter().take(MAX_BATCH - 1));
                    let (ops, answers): (Vec<Op>, Vec<_>) = batch.into_iter().map(|r| (r.op, r.answer)).unzip();
                    for (result, answer) in book.apply(&ops).into_iter().zip(answers) {
                        let _ = answer.send(result);
                    }
                }
            })
            .expect("start the ledger thread");
        SqliteLedger { requests: Some(requests), writer: Some(writer) }
    }

    async fn call(&self, op: Op) -> Result<Answer> {
        let (answer, answered) = oneshot::channel();
        self.requests.as_ref().expect("open until dropped").send(Request { op, answer }).map_err(|_| anyhow!("the ledger thread has stopped"))?;
        answered.await.map_err(|_| anyhow!("the ledger thread has stopped"))?
    }
}

impl Drop for SqliteLedger {
    /// Every request sent has its answer once the writer has drained them: wait for it.
    fn drop(&mut self) {
        self.requests.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The connection and who this executor is: the ledger's rules, one request at a time.
struct Book {
    conn: Connection,
    owner: String,
    lease_ms: i64,
    behavior: TransactionBehavior,
}

impl Book {
    /// Applies `ops` in order in one transaction; each gets its own answer, and all of them an
    /// error if the transaction cannot start or commit. A failed statement changes nothing.
    fn apply(&mut self, ops: &[Op]) -> Vec<Result<Answer>> {
        let every = |e: &rusqlite::Error| (0..ops.len()).map(|_| Err(anyhow!("ledger: {e}"))).collect();
        let tx = match self.conn.transaction_with_behavior(self.behavior) {
            Ok(tx) => tx,
            Err(e) => return every(&e),
        };
        let (owner, lease_ms) = (self.owner.as_str(), self.lease_ms);
        let answers = ops.iter().map(|op| Self::one(&tx, owner, lease_ms, op).map_err(anyhow::Error::from)).collect();
        match tx.commit() {
            Ok(()) => answers,
            Err(e) => every(&e),
        }
    }

    fn one(tx: &Connection, owner: &str, lease_ms: i64, op: &Op) -> rusqlite::Result<Answer> {
        let now = now_ms();
        match op {
            Op::Claim { key, purpose, manifest } => Self::claim(tx, owner, lease_ms, key, *purpose, manifest).map(Answer::Claim),
            Op::Peek { key } => tx.prepare_cached("SELECT state, failures FROM ledger WHERE key = ?1")?.query_row([key], |r| Ok((r.get(0)?, r.get(1)?))).optional().map(Answer::Peek),
            Op::Finish { key, how } => {
                let sql = match how {
                    Finish::Done => "UPDATE ledger SET state = 'done', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
                    Finish::Quarantined => "UPDATE ledger SET state = 'quarantined', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
                    Finish::Failed => "UPDATE ledger SET state = 'failed', failures = failures + 1, owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
                    Finish::Released => "UPDATE ledger SET state = 'failed', owner = NULL, lease_until = NULL, updated_at = ?3 WHERE key = ?1 AND owner = ?2",
                };
                tx.prepare_cached(sql)?.execute(params![key, owner, now]).map(|_| Answer::Done)
            }
            Op::Renew { key } => tx
                .prepare_cached("UPDATE ledger SET lease_until = ?3, updated_at = ?4 WHERE key = ?1 AND owner = ?2")?
                .execute(params![key, owner, now + lease_ms, now])
                .map(|_| Answer::Done),
            Op::Charge { key } => tx
                .prepare_cached("UPDATE ledger SET failures = failures + 1, updated_at = ?2 WHERE key = ?1 AND state = 'failed'")?
                .execute(params![key, now])
                .map(|_| Answer::Done),
        }
    }

    /// Claims `key` for replay or quarantine (atomic: the caller's transaction holds the lock).
    fn claim(tx: &Connection, owner: &str, lease_ms: i64, key: &str, purpose: Purpose, manifest: &str) -> rusqlite::Result<Claim> {
        let now = now_ms();
        let row: Option<(String, i64, Option<String>, Option<i64>)> = tx
            .prepare_cached("SELECT state, failures, owner, lease_until FROM ledger WHERE key = ?1")?
            .query_row([key], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        let claimed_state = if purpose == Purpose::Replay { "claimed" } else { "quarantining" };
        Ok(match row {
            None => {
                tx.prepare_cached("INSERT INTO ledger (key, state, failures, owner, lease_until, manifest, updated_at) VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6)")?
                    .execute(params![key, claimed_state, owner, now + lease_ms, manifest, now])?;
                Claim::Granted { failures: 0 }
            }
            Some((state, failures, holder, lease)) => match state.as_str() {
                "done" => Claim::Done,
                "quarantined" => Claim::Quarantined,
                "claimed" | "quarantining" if holder.as_deref().is_some_and(|o| o != owner && !owner_is_dead(o)) && lease.unwrap_or(0) > now => Claim::Busy,
                _ => {
                    tx.prepare_cached("UPDATE ledger SET state = ?2, owner = ?3, lease_until = ?4, manifest = ?5, updated_at = ?6 WHERE key = ?1")?
                        .execute(params![key, claimed_state, owner, now + lease_ms, manifest, now])?;
                    Claim::Granted { failures }
                }
            },
        })
    }
}

impl Ledger for SqliteLedger {
    fn claim<'a>(&'a self, key: &'a str, purpose: Purpose, manifest: &'a str) -> BoxFuture<'a, Result<Claim>> {
        Box::pin(async move {
            match self.call(Op::Claim { key: key.into(), purpose, manifest: manifest.into() }).await? {
                Answer::Claim(claim) => Ok(claim),
                _ => unreachable!("a claim is answered with a claim"),
            }
        })
    }

    fn finish<'a>(&'a self, key: &'a str, how: Finish) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.call(Op::Finish { key: key.into(), how }).await.map(drop) })
    }

    fn peek<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<(String, i64)>>> {
        Box::pin(async move {
            match self.call(Op::Peek { key: key.into() }).await? {
                Answer::Peek(state) => Ok(state),
                _ => unreachable!("a peek is answered with a state"),
            }
        })
    }

    fn renew<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.call(Op::Renew { key: key.into() }).await.map(drop) })
    }

    fn charge<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.call(Op::Charge { key: key.into() }).await.map(drop) })
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

    fn run<T>(call: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(call)
    }

    #[test]
    fn requests_in_flight_together_share_commits_and_each_gets_its_own_answer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let ledger = SqliteLedger::open(&path, 60_000).unwrap();
        let keys: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
        let claims = run(futures_util::future::join_all(keys.iter().map(|k| ledger.claim(k, Purpose::Replay, "m"))));
        assert!(claims.iter().all(|c| *c.as_ref().unwrap() == Claim::Granted { failures: 0 }));
        // Answered means committed: another connection sees every claim.
        let seen: i64 = Connection::open(&path).unwrap().query_row("SELECT count(*) FROM ledger WHERE state = 'claimed'", [], |r| r.get(0)).unwrap();
        assert_eq!(seen, 2000);
        let hows = [Finish::Done, Finish::Failed, Finish::Quarantined, Finish::Released];
        let finished = run(futures_util::future::join_all(keys.iter().enumerate().map(|(i, k)| ledger.finish(k, hows[i % 4]))));
        assert!(finished.iter().all(|f| f.is_ok()));
        let again = run(futures_util::future::join_all(keys.iter().map(|k| ledger.claim(k, Purpose::Replay, "m"))));
        for (i, claim) in again.into_iter().enumerate() {
            let expected = match hows[i % 4] {
                Finish::Done => Claim::Done,
                Finish::Failed => Claim::Granted { failures: 1 },
                Finish::Quarantined => Claim::Quarantined,
                Finish::Released => Claim::Granted { failures: 0 },
            };
            assert_eq!(claim.unwrap(), expected, "key k{i}");
        }
    }

    #[test]
    fn a_key_is_claimed_once_then_done_for_everyone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let a = SqliteLedger::open(&path, 60_000).unwrap();
        let b = SqliteLedger::open(&path, 60_000).unwrap();
        assert_eq!(run(a.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Granted { failures: 0 });
        // Same process, another ledger handle: a live owner, so busy.
        assert_eq!(run(b.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Busy);
        run(a.finish("k", Finish::Failed)).unwrap();
        assert_eq!(run(b.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Granted { failures: 1 });
        run(b.finish("k", Finish::Done)).unwrap();
        assert_eq!(run(a.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Done);
        assert_eq!(run(a.claim("q", Purpose::Quarantine, "m")).unwrap(), Claim::Granted { failures: 0 });
        run(a.finish("q", Finish::Quarantined)).unwrap();
        assert_eq!(run(b.claim("q", Purpose::Quarantine, "m")).unwrap(), Claim::Quarantined);
    }

    #[test]
    fn a_released_key_is_charged_only_when_told_and_only_while_released() {
        let dir = tempfile::tempdir().unwrap();
        let a = SqliteLedger::open(&dir.path().join("ledger.db"), 60_000).unwrap();
        run(a.claim("k", Purpose::Replay, "m")).unwrap();
        run(a.finish("k", Finish::Released)).unwrap();
        assert_eq!(run(a.peek("k")).unwrap(), Some(("failed".into(), 0)), "released: claimable, nothing charged");
        run(a.charge("k")).unwrap();
        assert_eq!(run(a.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Granted { failures: 1 });
        run(a.charge("k")).unwrap(); // claimed again: a charge must not land
        run(a.finish("k", Finish::Done)).unwrap();
        run(a.charge("k")).unwrap();
        assert_eq!(run(a.peek("k")).unwrap(), Some(("done".into(), 1)));
    }

    #[test]
    fn a_renewed_claim_outlives_its_first_lease() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let (slow, other) = (SqliteLedger::open(&path, 50).unwrap(), SqliteLedger::open(&path, 50).unwrap());
        run(slow.claim("k", Purpose::Replay, "m")).unwrap();
        for _ in 0..4 {
            std::thread::sleep(std::time::Duration::from_millis(25));
            run(slow.renew("k")).unwrap();
        }
        assert_eq!(run(other.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Busy, "100 ms on a 50 ms lease, renewed");
    }

    #[test]
    fn claims_of_a_dead_process_or_past_their_lease_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let a = SqliteLedger::open(&path, 60_000).unwrap();
        run(a.claim("k", Purpose::Replay, "m")).unwrap();
        Connection::open(&path).unwrap().execute("UPDATE ledger SET owner = ?1", [format!("{}:999999999:1", super::super::hostname())]).unwrap();
        assert_eq!(run(a.claim("k", Purpose::Replay, "m")).unwrap(), Claim::Granted { failures: 0 });
        let short = SqliteLedger::open(&path, 1).unwrap();
        run(short.claim("j", Purpose::Replay, "m")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(run(a.claim("j", Purpose::Replay, "m")).unwrap(), Claim::Granted { failures: 0 });
    }
}
