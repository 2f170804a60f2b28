//! Where replayed messages go. A target is a small trait; `http(s)://`, `exec:`, `file:`,
//! `kafka://`, `sqs://`, `amqp://` and `redis://` implement it, and all pass the same
//! compliance test. Each says
//! whose failure a failed delivery is (see `Delivery`); the run decides what that costs.

mod amqp;
mod exec;
mod file;
mod http;
mod kafka;
mod kafka_batch;
mod kafka_produce;
mod redis;
mod sqs;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use futures_util::future::BoxFuture;

pub use amqp::AmqpTarget;
pub use exec::ExecTarget;
pub use file::FileTarget;
pub use http::HttpTarget;
pub use kafka::{murmur2, KafkaTarget};
pub use redis::RedisTarget;
pub use sqs::SqsTarget;

use super::backoff::Backoff;
use super::message::Message;

/// The result of delivering one message, and whose failure a failed delivery is. The run
/// decides what a failure costs (`execute::evidence`): only `Rejected` is charged at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// The target already had it (HTTP 409).
    AlreadyDone,
    /// The target refused this message (a 4xx other than 408, 409 and 429, a non-zero exit
    /// other than 75, a record the broker refuses): a message failure, counted against the key.
    Rejected(String),
    /// The application answered this message with a failure of its own (HTTP 500): the
    /// message's when the target is shown up, by other keys delivered just after it or by its
    /// probe (`Probe::Serving` or `Probe::Healthy`).
    AppFailed(String),
    /// The target could not take it now (a 502, 503 or 504 and the other 5xx, a 408 or 429, a
    /// timeout, a dropped connection, a broker's passing error, exit 75, an SQS entry SQS
    /// failed): what an outage looks like. The message's only when other keys were delivered
    /// just after it or a health URL answers 2xx (`Probe::Healthy`).
    Unavailable(String),
    /// The target was not reached (refused connection, DNS or TLS error, a command that cannot
    /// start, an unwritable file): the target's failure, never the key's.
    Down(String),
}

pub trait Target: Send + Sync {
    /// Delivers one message, retrying transient failures itself.
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery>;

    /// Asks the target whether it is up, apart from any message: the evidence that decides
    /// whose failure is a failed delivery no other delivery around it outweighs. None: this
    /// target has no such question (its failures stay the target's unless other keys were
    /// delivered around them).
    fn probe(&self) -> BoxFuture<'_, Option<Probe>> {
        Box::pin(async { None })
    }

    /// Closes what the target holds open, at the end of a run, inside its runtime.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// What a target said when asked whether it is up, and what that proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A health check made for the purpose answered 2xx: the target is up, so a 503 or a
    /// timeout it gave one message was that message's.
    Healthy(String),
    /// Something answered that is not an error of the server (a GET of a POST endpoint
    /// answering 404, 405 or 501): a server speaks HTTP there. Evidence that a 500, the
    /// application's own failure, was the message's; never that a 503 or a timeout was.
    Serving(String),
    Down(String),
}
/// Retry and timeout settings shared by network targets and sinks.
#[derive(Clone, Debug)]
pub struct Retry {
    /// Deliveries of one message within one run, the first included.
    pub attempts: u32,
    pub backoff: Backoff,
    pub timeout: Duration,
    /// Set when the run stops: no more retries, so a stopped run stops hammering the target.
    pub halt: Halt,
}

impl Retry {
    /// One try, for checking a spec's form.
    pub fn once() -> Retry {
        Retry { attempts: 1, backoff: Backoff::default(), timeout: Duration::from_secs(1), halt: Halt::default() }
    }
}

/// A flag the run raises when it stops (storm guard, signal).
#[derive(Clone, Debug, Default)]
pub struct Halt(Arc<AtomicBool>);

impl Halt {
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Checks the form of `http(s)://…`, `exec:CMD ARG…`, `file:PATH`, `kafka://HOST:PORT…`,
/// `sqs://QUEUE`, `amqp://…` or `redis://…` without opening anything.
pub fn check(spec: &str) -> Result<()> {
    let expected = "expected http(s)://…, exec:CMD ARG…, file:PATH, kafka://HOST:PORT[,…][/TOPIC], sqs://QUEUE-NAME, amqp://USER:PASSWORD@HOST:PORT/VHOST or redis://HOST:PORT/DB";
    if spec.starts_with("http://") || spec.starts_with("https://") {
        Ok(())
    } else if let Some(cmd) = spec.strip_prefix("exec:") {
        if cmd.split_whitespace().next().is_none() {
            bail!("`{spec}`: exec: needs a command");
        }
        Ok(())
    } else if spec.strip_prefix("file:").is_some_and(|p| !p.is_empty()) {
        Ok(())
    } else if let Some(rest) = spec.strip_prefix("kafka://") {
        KafkaTarget::new(rest, Retry::once()).map(|_| ())
    } else if spec.strip_prefix("sqs://").is_some_and(|q| !q.is_empty() && !q.contains('/')) {
        Ok(())
    } else if let Some(rest) = spec.strip_prefix("amqp://") {
        AmqpTarget::new(rest, Retry::once()).map(|_| ())
    } else if let Some(rest) = spec.strip_prefix("redis://") {
        RedisTarget::new(rest, Retry::once()).map(|_| ())
    } else {
        bail!("`{spec}`: {expected}")
    }
}

/// Opens the target a checked spec names.
pub fn parse(spec: &str, retry: Retry) -> Result<Box<dyn Target>> {
    parse_with_health(spec, retry, None)
}

/// `parse`, an http(s) target's health probe asking `health` instead of its own URL.
pub fn parse_with_health(spec: &str, retry: Retry, health: Option<&str>) -> Result<Box<dyn Target>> {
    check(spec)?;
    if let Some(health) = health {
        if !(spec.starts_with("http://") || spec.starts_with("https://")) {
            bail!("--health-url: only an http(s) target is probed by a URL");
        }
        return Ok(Box::new(HttpTarget::new(spec, retry)?.with_health(health)));
    }
    if let Some(cmd) = spec.strip_prefix("exec:") {
        Ok(Box::new(ExecTarget::new(cmd.split_whitespace().map(str::to_string).collect())))
    } else if let Some(path) = spec.strip_prefix("file:") {
        Ok(Box::new(FileTarget::open(PathBuf::from(path))?))
    } else if let Some(rest) = spec.strip_prefix("kafka://") {
        Ok(Box::new(KafkaTarget::new(rest, retry)?))
    } else if let Some(queue) = spec.strip_prefix("sqs://") {
        Ok(Box::new(SqsTarget::new(queue, retry)?))
    } else if let Some(rest) = spec.strip_prefix("amqp://") {
        Ok(Box::new(AmqpTarget::new(rest, retry)?))
    } else if let Some(rest) = spec.strip_prefix("redis://") {
        Ok(Box::new(RedisTarget::new(rest, retry)?))
    } else {
        Ok(Box::new(HttpTarget::new(spec, retry)?))
    }
}

impl Delivery {
    /// Worth another try within the run: a 5xx, a 408 or 429, a timeout, a connection that
    /// failed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Delivery::Unavailable(_) | Delivery::AppFailed(_) | Delivery::Down(_))
    }
}

/// A transport error of the targets spoken over HTTP (http, sqs): not reached (connect, DNS,
/// TLS) is the target's failure; a timeout or a connection dropped mid-request may be this
/// message's.
pub(super) fn transport_error(url: &str, e: &reqwest::Error) -> Delivery {
    if e.is_timeout() {
        Delivery::Unavailable(format!("{url}: timed out"))
    } else if e.is_connect() {
        let cause = std::error::Error::source(e).and_then(std::error::Error::source).map(|c| format!(" ({c})")).unwrap_or_default();
        Delivery::Down(format!("{url}: cannot connect{cause}"))
    } else {
        Delivery::Unavailable(format!("{url}: {e}"))
    }
}

/// Tries `attempt` up to `retry.attempts` times while its delivery is retryable, waiting a
/// jittered backoff between tries; a halted run tries no more.
pub async fn with_retries<F, Fut>(retry: &Retry, mut attempt: F) -> Delivery
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Delivery>,
{
    let mut delivery = attempt().await;
    for n in 1..retry.attempts.max(1) {
        if !delivery.is_retryable() {
            break;
        }
        tokio::time::sleep(retry.backoff.delay(n)).await;
        if retry.halt.is_raised() {
            break;
        }
        delivery = attempt().await;
    }
    delivery
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    fn retry(attempts: u32) -> Retry {
        Retry { attempts, backoff: Backoff { base: Duration::from_millis(1), cap: Duration::from_millis(2) }, timeout: Duration::from_secs(5), halt: Halt::default() }
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn retries_stop_at_a_final_answer_at_the_limit_or_when_the_run_halts() {
        let tries = AtomicU32::new(0);
        let always = |d: Delivery| {
            let tries = &tries;
            move || {
                tries.fetch_add(1, Ordering::SeqCst);
                std::future::ready(d.clone())
            }
        };
        assert_eq!(run(with_retries(&retry(3), always(Delivery::Unavailable("503".into())))), Delivery::Unavailable("503".into()));
        assert_eq!(tries.swap(0, Ordering::SeqCst), 3);
        assert_eq!(run(with_retries(&retry(3), always(Delivery::Rejected("422".into())))), Delivery::Rejected("422".into()));
        assert_eq!(tries.swap(0, Ordering::SeqCst), 1, "a message failure is final");
        let halted = retry(3);
        halted.halt.raise();
        run(with_retries(&halted, always(Delivery::Down("refused".into()))));
        assert_eq!(tries.swap(0, Ordering::SeqCst), 1, "a halted run tries once");
        let mut answers = vec![Delivery::Delivered, Delivery::AppFailed("500".into())];
        assert_eq!(run(with_retries(&retry(3), || std::future::ready(answers.pop().unwrap()))), Delivery::Delivered);
    }

    #[test]
    fn exec_exit_codes_and_file_lines() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tempfail.sh");
        std::fs::write(&script, "#!/bin/sh\nexit 75\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let entry = crate::manifest::Entry {
            key: "k".into(),
            decision: crate::manifest::Decision::Replay,
            signature: crate::signature::Signature(Vec::new()),
            id: "i".into(),
            attempts: 0,
            max_attempts: 3,
            record: serde_json::json!({"a": 1}),
            origin: None,
        };
        let message = Message::of(&entry, &crate::manifest::Origin::default()).unwrap();
        let send = |spec: &str| run(async { parse(spec, retry(1)).unwrap().send(&message).await });
        assert_eq!(send("exec:true"), Delivery::Delivered);
        assert!(matches!(send("exec:false"), Delivery::Rejected(_)));
        assert!(matches!(send(&format!("exec:{}", script.display())), Delivery::Unavailable(_)));
        assert!(matches!(send("exec:/nonexistent/command"), Delivery::Down(_)));
        let file = dir.path().join("out.jsonl");
        assert_eq!(send(&format!("file:{}", file.display())), Delivery::Delivered);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"key\":\"k\",\"record\":{\"a\":1}}\n");
        assert!(parse("ftp://x", retry(1)).is_err());
    }
}

