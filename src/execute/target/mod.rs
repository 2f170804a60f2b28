//! Where replayed messages go. A target is a small trait; `http(s)://`, `exec:` and `file:`
//! implement it, and all pass the same compliance test. Each says whose failure a failed
//! delivery is (see `Delivery`); the run decides what that costs.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures_util::future::BoxFuture;
use serde_json::json;

use super::append::AppendFile;
use super::message::Message;
use super::backoff::Backoff;

/// The result of delivering one message, and whose failure a failed delivery is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// The target already had it (HTTP 409).
    AlreadyDone,
    /// The target refused this message (a 4xx other than 409, a non-zero exit): a message
    /// failure, counted against the key.
    Rejected(String),
    /// A 5xx, a timeout, a dropped connection, exit 75 (EX_TEMPFAIL): this key's failure when
    /// the target serves the others, the target's when it fails for everyone.
    Transient(String),
    /// The target was not reached (refused connection, DNS or TLS error, a command that cannot
    /// start, an unwritable file): the target's failure, never the key's.
    Down(String),
}

pub trait Target: Send + Sync {
    /// Delivers one message, retrying transient failures itself.
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery>;
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

/// Checks the form of `http(s)://…`, `exec:CMD ARG…` or `file:PATH` without opening anything.
pub fn check(spec: &str) -> Result<()> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        Ok(())
    } else if let Some(cmd) = spec.strip_prefix("exec:") {
        if cmd.split_whitespace().next().is_none() {
            bail!("`{spec}`: exec: needs a command");
        }
        Ok(())
    } else if spec.strip_prefix("file:").is_some_and(|p| !p.is_empty()) {
        Ok(())
    } else {
        bail!("`{spec}`: expected http(s)://…, exec:CMD ARG… or file:PATH")
    }
}

/// Opens the target a checked spec names.
pub fn parse(spec: &str, retry: Retry) -> Result<Box<dyn Target>> {
    check(spec)?;
    if let Some(cmd) = spec.strip_prefix("exec:") {
        Ok(Box::new(ExecTarget { argv: cmd.split_whitespace().map(str::to_string).collect() }))
    } else if let Some(path) = spec.strip_prefix("file:") {
        Ok(Box::new(FileTarget::open(PathBuf::from(path))?))
    } else {
        Ok(Box::new(HttpTarget::new(spec, retry)?))
    }
}

pub struct HttpTarget {
    client: reqwest::Client,
    url: String,
    retry: Retry,
}

impl HttpTarget {
    pub fn new(url: &str, retry: Retry) -> Result<HttpTarget> {
        let client = reqwest::Client::builder().timeout(retry.timeout).build().context("building the HTTP client")?;
        Ok(HttpTarget { client, url: url.to_string(), retry })
    }

    /// POSTs `body` with the key (and any extra headers), retried while the answer says so
    /// (see `Delivery`).
    pub async fn post(&self, key: &str, body: Vec<u8>, extra: &[(String, String)]) -> Delivery {
        with_retries(&self.retry, || async {
            let mut request = self.client.post(&self.url).header("Content-Type", "application/json").header("Idempotency-Key", key);
            for (name, value) in extra {
                request = request.header(name.as_str(), value.as_str());
            }
            let sent = request.body(body.clone()).send().await;
            match sent {
                Ok(response) => answer(&self.url, response.status()),
                Err(e) => transport_error(&self.url, &e),
            }
        })
        .await
    }
}

impl Delivery {
    /// Worth another try within the run: a 5xx, a timeout, a connection that failed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Delivery::Transient(_) | Delivery::Down(_))
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

/// An HTTP answer: 2xx delivered, 409 already done, other 4xx this message's failure, the
/// rest transient.
fn answer(url: &str, status: reqwest::StatusCode) -> Delivery {
    match status.as_u16() {
        200..=299 => Delivery::Delivered,
        409 => Delivery::AlreadyDone,
        400..=499 => Delivery::Rejected(format!("HTTP {status} from {url}")),
        _ => Delivery::Transient(format!("HTTP {status} from {url}")),
    }
}

/// A transport error: not reached (connect, DNS, TLS) is the target's failure; a timeout or a
/// connection dropped mid-request may be this message's.
fn transport_error(url: &str, e: &reqwest::Error) -> Delivery {
    if e.is_timeout() {
        Delivery::Transient(format!("{url}: timed out"))
    } else if e.is_connect() {
        let cause = std::error::Error::source(e).and_then(std::error::Error::source).map(|c| format!(" ({c})")).unwrap_or_default();
        Delivery::Down(format!("{url}: cannot connect{cause}"))
    } else {
        Delivery::Transient(format!("{url}: {e}"))
    }
}

impl Target for HttpTarget {
    /// The payload as the body; the origin key and headers as `X-Dlqf-Origin-Key` and
    /// `X-Dlqf-Origin-Header-NAME` (those a header can carry).
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        let mut extra: Vec<(String, String)> = message.origin_key_text().map(|k| ("X-Dlqf-Origin-Key".to_string(), k)).into_iter().collect();
        for (name, value) in &message.headers {
            extra.push((format!("X-Dlqf-Origin-Header-{name}"), String::from_utf8_lossy(value).into_owned()));
        }
        extra.retain(|(name, value)| reqwest::header::HeaderName::try_from(name.as_str()).is_ok() && reqwest::header::HeaderValue::try_from(value.as_str()).is_ok());
        Box::pin(async move { self.post(message.key, message.payload.clone(), &extra).await })
    }
}

/// Runs a command per message (no shell): the record on stdin, the key in
/// `DLQF_IDEMPOTENCY_KEY`; exit status 0 is delivered, 75 (EX_TEMPFAIL) a transient failure,
/// any other a rejection.
pub struct ExecTarget {
    argv: Vec<String>,
}

impl Target for ExecTarget {
    /// The payload on stdin; the keys and origin headers in the environment.
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        let argv = self.argv.clone();
        let name = argv[0].clone();
        let mut env = vec![("DLQF_IDEMPOTENCY_KEY".to_string(), message.key.to_string())];
        env.extend(message.origin_key_text().map(|k| ("DLQF_ORIGIN_KEY".to_string(), k)));
        if !message.headers.is_empty() {
            env.push(("DLQF_ORIGIN_HEADERS".to_string(), message.headers_json().to_string()));
        }
        let body = message.payload.clone();
        Box::pin(async move {
            let run = tokio::task::spawn_blocking(move || -> std::io::Result<std::process::Output> {
                let mut child = Command::new(&argv[0])
                    .args(&argv[1..])
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()?;
                // A command may exit without reading its input: its exit status still counts.
                match child.stdin.take().expect("piped").write_all(&body) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
                    _ => {}
                }
                child.wait_with_output()
            })
            .await;
            match run {
                Ok(Ok(out)) if out.status.success() => Delivery::Delivered,
                Ok(Ok(out)) => {
                    let err = String::from_utf8_lossy(&out.stderr);
                    let why = format!("{name} exited with {}: {}", out.status, err.trim().chars().take(200).collect::<String>());
                    if out.status.code() == Some(EX_TEMPFAIL) { Delivery::Transient(why) } else { Delivery::Rejected(why) }
                }
                Ok(Err(e)) => Delivery::Down(format!("cannot run {name}: {e}")),
                Err(e) => Delivery::Down(format!("{name}: command task failed: {e}")),
            }
        })
    }
}

/// The exit status (sysexits' EX_TEMPFAIL) by which an `exec:` command says "try again later".
const EX_TEMPFAIL: i32 = 75;

/// Appends `{"key": …, "record": …}` lines to a file, each whole and synced before it counts.
pub struct FileTarget {
    file: Arc<AppendFile>,
}

impl FileTarget {
    pub fn open(path: PathBuf) -> Result<FileTarget> {
        let file = AppendFile::open(&path, |_| {}).with_context(|| format!("target {}", path.display()))?;
        Ok(FileTarget { file: Arc::new(file) })
    }
}

impl Target for FileTarget {
    /// A line `{"key": …, "record": …}`: the whole record, as planned.
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        let mut line = serde_json::to_vec(&json!({"key": message.key, "record": message.record})).expect("records serialise");
        line.push(b'\n');
        let file = self.file.clone();
        Box::pin(async move {
            match tokio::task::spawn_blocking(move || file.append(&line)).await {
                Ok(Ok(())) => Delivery::Delivered,
                Ok(Err(e)) => Delivery::Down(format!("{e:#}")),
                Err(e) => Delivery::Down(format!("{}: write task failed: {e}", self.file.path().display())),
            }
        })
    }
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
    fn answers_say_whose_failure_it_is() {
        let status = |n| reqwest::StatusCode::from_u16(n).unwrap();
        assert_eq!(answer("u", status(204)), Delivery::Delivered);
        assert_eq!(answer("u", status(409)), Delivery::AlreadyDone);
        assert_eq!(answer("u", status(422)), Delivery::Rejected("HTTP 422 Unprocessable Entity from u".into()));
        assert_eq!(answer("u", status(503)), Delivery::Transient("HTTP 503 Service Unavailable from u".into()));
        assert!(answer("u", status(503)).is_retryable() && !answer("u", status(404)).is_retryable());
        assert!(Delivery::Down("x".into()).is_retryable());
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
        assert_eq!(run(with_retries(&retry(3), always(Delivery::Transient("503".into())))), Delivery::Transient("503".into()));
        assert_eq!(tries.swap(0, Ordering::SeqCst), 3);
        assert_eq!(run(with_retries(&retry(3), always(Delivery::Rejected("422".into())))), Delivery::Rejected("422".into()));
        assert_eq!(tries.swap(0, Ordering::SeqCst), 1, "a message failure is final");
        let halted = retry(3);
        halted.halt.raise();
        run(with_retries(&halted, always(Delivery::Down("refused".into()))));
        assert_eq!(tries.swap(0, Ordering::SeqCst), 1, "a halted run tries once");
        let mut answers = vec![Delivery::Delivered, Delivery::Transient("503".into())];
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
            record: json!({"a": 1}),
        };
        let message = Message::of(&entry, &crate::manifest::Origin::default());
        let send = |spec: &str| run(async { parse(spec, retry(1)).unwrap().send(&message).await });
        assert_eq!(send("exec:true"), Delivery::Delivered);
        assert!(matches!(send("exec:false"), Delivery::Rejected(_)));
        assert!(matches!(send(&format!("exec:{}", script.display())), Delivery::Transient(_)));
        assert!(matches!(send("exec:/nonexistent/command"), Delivery::Down(_)));
        let file = dir.path().join("out.jsonl");
        assert_eq!(send(&format!("file:{}", file.display())), Delivery::Delivered);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"key\":\"k\",\"record\":{\"a\":1}}\n");
        assert!(parse("ftp://x", retry(1)).is_err());
    }
}
