//! The ledger in PostgreSQL, so executors on several hosts share one ledger. Every claim is a
//! single atomic upsert; a claim stays another executor's until its lease lapses.

use anyhow::{Context, Result};
use tokio_postgres::{Client, NoTls};

use super::{new_owner, now_ms, owner_is_dead, Claim, Finish, Ledger, Purpose};
use crate::execute::target::BoxFuture;

pub struct PostgresLedger {
    client: Client,
    owner: String,
    lease_ms: i64,
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
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.with_context(|| format!("ledger {shown}: cannot connect"))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                eprintln!("dlqf: ledger connection: {e}");
            }
        });
        if create {
            client.batch_execute(SCHEMA).await.with_context(|| format!("ledger {shown}: cannot create its table"))?;
        }
        Ok(PostgresLedger { client, owner: new_owner(), lease_ms })
    }

    async fn claim_async(&self, key: &str, purpose: Purpose, manifest: &str) -> Result<Claim> {
        let state = if purpose == Purpose::Replay { "claimed" } else { "quarantining" };
        let now = now_ms();
        let mut abandoned = String::new();
        loop {
            let rows = self
                .client
                .query(CLAIM, &[&key, &state, &self.owner, &(now + self.lease_ms), &manifest, &now, &abandoned])
                .await?;
            if let Some(row) = rows.first() {
                return Ok(Claim::Granted { failures: row.get(0) });
            }
            let row = self.client.query_opt("SELECT state, owner FROM dlqf_ledger WHERE key = $1", &[&key]).await?;
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
        };
        self.client.execute(sql, &[&key, &self.owner, &now_ms()]).await?;
        Ok(())
    }

    async fn peek_async(&self, key: &str) -> Result<Option<(String, i64)>> {
        match self.client.query_opt("SELECT state, failures FROM dlqf_ledger WHERE key = $1", &[&key]).await {
            Ok(row) => Ok(row.map(|r| (r.get(0), r.get(1)))),
            // No table yet: nothing was ever recorded.
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
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
