//! The ledger in PostgreSQL, so executors on several hosts share one ledger. Every claim is a
//! single atomic upsert; a claim stays another executor's until its lease lapses. A dropped
//! connection (a restart, a failover) is re-made with backoff for a bounded time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::sync::{Mutex, RwLock};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, NoTls, Socket};

use super::tls::{LedgerUrl, Mode};
use super::{new_owner, now_ms, owner_is_dead, Claim, Finish, Ledger, Purpose};
use crate::execute::backoff::Backoff;
use crate::messages;
use futures_util::future::BoxFuture;

/// How long a lost connection is tried again before the run fails.
const RECONNECT_FOR: Duration = Duration::from_secs(30);

pub struct PostgresLedger {
    connect: Connector,
    client: RwLock<Arc<Client>>,
    /// Held while reconnecting, so one task re-makes the connection for all.
    reconnecting: Mutex<()>,
    owner: String,
    lease_ms: i64,
}

/// How to (re)connect: the parsed URL and its TLS.
struct Connector {
    config: Config,
    tls: LedgerUrl,
    shown: String,
}

impl Connector {
    async fn connect(&self) -> Result<Client> {
        Ok(if self.tls.mode == Mode::Disable { open(&self.config, NoTls).await? } else { open(&self.config, self.tls.connector()?).await? })
    }
}

/// Connects and drives the connection on its own task.
async fn open<T>(config: &Config, tls: T) -> Result<Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
{
    let (client, connection) = config.connect(tls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            messages::message(format!("ledger connection: {e}"));
        }
    });
    Ok(client)
}

/// Executors starting together would race on CREATE TABLE IF NOT EXISTS (it is not safe
/// under concurrency in PostgreSQL), so creation holds a transaction-scoped advisory lock.
const SCHEMA: &str = "BEGIN;
SELECT pg_advisory_xact_lock(72350013);
CREATE TABLE IF NOT EXISTS dlqf_ledger (
    key TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('claimed', 'failed', 'done', 'quarantining', 'quarantined')),
    failures BIGINT NOT NULL DEFAULT 0,
    owner TEXT,
    lease_until BIGINT,
    manifest TEXT,
    updated_at BIGINT NOT NULL
);
COMMIT;";

/// Takes the key when it is new, released after a failure, ours, or its claim lapsed.
const CLAIM: &str = "INSERT INTO dlqf_ledger AS l (key, state, failures, owner, lease_until, manifest, updated_at)
    VALUES ($1, $2, 0, $3, $4, $5, $6)
    ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, owner = EXCLUDED.owner,
        lease_until = EXCLUDED.lease_until, manifest = EXCLUDED.manifest, updated_at = EXCLUDED.updated_at
    WHERE l.state = 'failed'
       OR (l.state IN ('claimed', 'quarantining') AND (l.owner = $3 OR l.lease_until < $6 OR l.owner = $7))
    RETURNING l.failures";

impl PostgresLedger {
    /// Connects (the URL's password is never printed) and, with `create`, creates the table.
    pub async fn connect(url: &str, lease_ms: i64, create: bool) -> Result<PostgresLedger> {
        let shown = redact(url);
        let tls = LedgerUrl::parse(url).with_context(|| format!("ledger {shown}"))?;
        let mut config: Config = tls.url.parse().with_context(|| format!("ledger {shown}: not a PostgreSQL URL"))?;
        config.ssl_mode(tls.ssl_mode());
        let connect = Connector { config, tls, shown };
        let client = connect.connect().await.with_context(|| format!("ledger {}: cannot connect", connect.shown))?;
        if create {
            client.batch_execute(SCHEMA).await.with_context(|| format!("ledger {}: cannot create its table", connect.shown))?;
        }
        Ok(PostgresLedger { connect, client: RwLock::new(Arc::new(client)), reconnecting: Mutex::new(()), owner: new_owner(), lease_ms })
    }

    /// Runs `op` on the current connection; when the connection is lost, makes a new one
    /// (backing off, for up to `RECONNECT_FOR`) and runs it again. Every statement here is
    /// one autocommitted statement that is safe to repeat.
    async fn with_client<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: Fn(Arc<Client>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        loop {
            let client = self.client.read().await.clone();
            match op(client.clone()).await {
                Err(e) if e.is_closed() || client.is_closed() || is_io(&e) => self.reconnect(&client, e).await?,
                other => return other.map_err(Into::into),
            }
        }
    }

    async fn reconnect(&self, lost: &Arc<Client>, why: tokio_postgres::Error) -> Result<()> {
        let _one = self.reconnecting.lock().await;
        if !Arc::ptr_eq(&*self.client.read().await, lost) {
            return Ok(()); // another task has already reconnected
        }
        messages::warning(format!("ledger {}: connection lost ({why}); reconnecting", self.connect.shown));
        let started = Instant::now();
        let mut retry = 0;
        loop {
            retry += 1;
            tokio::time::sleep(Backoff { base: Duration::from_millis(200), cap: Duration::from_secs(5) }.delay(retry)).await;
            match self.connect.connect().await {
                Ok(client) => {
                    *self.client.write().await = Arc::new(client);
                    messages::message(format!("ledger {}: reconnected", self.connect.shown));
                    return Ok(());
                }
                Err(e) if started.elapsed() < RECONNECT_FOR => messages::warning(format!("ledger {}: still unreachable ({e:#})", self.connect.shown)),
                Err(e) => bail!("ledger {}: connection lost and not back after {} s: {e:#}", self.connect.shown, RECONNECT_FOR.as_secs()),
            }
        }
    }

    async fn claim_async(&self, key: &str, purpose: Purpose, manifest: &str) -> Result<Claim> {
        let state = if purpose == Purpose::Replay { "claimed" } else { "quarantining" };
        let now = now_ms();
        let until = now + self.lease_ms;
        let mut abandoned = String::new();
        loop {
            let rows = self
                .with_client(|c| {
                    let abandoned = abandoned.clone();
                    async move { c.query(CLAIM, &[&key, &state, &self.owner, &until, &manifest, &now, &abandoned]).await }
                })
                .await?;
            if let Some(row) = rows.first() {
                return Ok(Claim::Granted { failures: row.get(0) });
            }
            let row = self.with_client(|c| async move { c.query_opt("SELECT state, owner FROM dlqf_ledger WHERE key = $1", &[&key]).await }).await?;
            let Some(row) = row else { continue };
            let (state, owner): (String, Option<String>) = (row.get(0), row.get(1));
            return Ok(match state.as_str() {
                "done" => Claim::Done,
                "quarantined" => Claim::Quarantined,
                "claimed" | "quarantining" => match owner {
                    // A dead process on this host: take its claim over, once, by name.
                    Some(o) if abandoned.is_empty() && owner_is_dead(&o) => {
                        abandoned = o;
                        continue;
                    }
                    _ => Claim::Busy,
                },
                _ => Claim::Busy,
            });
        }
    }

    async fn finish_async(&self, key: &str, how: Finish) -> Result<()> {
        let sql = match how {
            Finish::Done => "UPDATE dlqf_ledger SET state = 'done', owner = NULL, lease_until = NULL, updated_at = $3 WHERE key = $1 AND owner = $2",
            Finish::Quarantined => "UPDATE dlqf_ledger SET state = 'quarantined', owner = NULL, lease_until = NULL, updated_at = $3 WHERE key = $1 AND owner = $2",
            Finish::Failed => "UPDATE dlqf_ledger SET state = 'failed', failures = failures + 1, owner = NULL, lease_until = NULL, updated_at = $3 WHERE key = $1 AND owner = $2",
            Finish::Released => "UPDATE dlqf_ledger SET state = 'failed', owner = NULL, lease_until = NULL, updated_at = $3 WHERE key = $1 AND owner = $2",
        };
        let now = now_ms();
        self.with_client(|c| async move { c.execute(sql, &[&key, &self.owner, &now]).await }).await?;
        Ok(())
    }

    async fn renew_async(&self, key: &str) -> Result<()> {
        let now = now_ms();
        let until = now + self.lease_ms;
        let sql = "UPDATE dlqf_ledger SET lease_until = $3, updated_at = $4 WHERE key = $1 AND owner = $2";
        self.with_client(|c| async move { c.execute(sql, &[&key, &self.owner, &until, &now]).await }).await?;
        Ok(())
    }

    async fn charge_async(&self, key: &str) -> Result<()> {
        let now = now_ms();
        let sql = "UPDATE dlqf_ledger SET failures = failures + 1, updated_at = $2 WHERE key = $1 AND state = 'failed'";
        self.with_client(|c| async move { c.execute(sql, &[&key, &now]).await }).await?;
        Ok(())
    }

    async fn peek_async(&self, key: &str) -> Result<Option<(String, i64)>> {
        let sql = "SELECT state, failures FROM dlqf_ledger WHERE key = $1";
        match self.with_client(|c| async move { c.query_opt(sql, &[&key]).await }).await {
            Ok(row) => Ok(row.map(|r| (r.get(0), r.get(1)))),
            // No table yet: nothing was ever recorded.
            Err(e) if e.downcast_ref::<tokio_postgres::Error>().and_then(|e| e.code()) == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// An error from the socket itself (reset, broken pipe): the connection is gone.
fn is_io(e: &tokio_postgres::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

impl Ledger for PostgresLedger {
    fn claim<'a>(&'a self, key: &'a str, purpose: Purpose, manifest: &'a str) -> BoxFuture<'a, Result<Claim>> {
        Box::pin(self.claim_async(key, purpose, manifest))
    }

    fn finish<'a>(&'a self, key: &'a str, how: Finish) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.finish_async(key, how))
    }

    fn peek<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<(String, i64)>>> {
        Box::pin(self.peek_async(key))
    }

    fn renew<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.renew_async(key))
    }

    fn charge<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.charge_async(key))
    }
}

/// A connection string with any password hidden.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}://{user}:***@{}", &url[..s], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact("postgres://dlqf:s3cret@db:5432/x"), "postgres://dlqf:***@db:5432/x");
        assert_eq!(redact("postgres://db/x"), "postgres://db/x");
    }
}
