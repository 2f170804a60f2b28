//! Where replayed messages go. A target is a small trait; `http(s)://`, `exec:` and `file:`
//! implement it, and all pass the same compliance test.

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The result of delivering one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// The target already had it (HTTP 409).
    AlreadyDone,
    Failed(String),
}

pub trait Target: Send + Sync {
    /// Delivers `record` under the idempotency `key`, retrying transient failures itself.
    fn send<'a>(&'a self, key: &'a str, record: &'a Value) -> BoxFuture<'a, Delivery>;
}

/// Retry and timeout settings shared by network targets and sinks.
#[derive(Clone, Copy, Debug)]
pub struct Retry {
    pub attempts: u32,
    pub backoff: Duration,
    pub timeout: Duration,
}

/// Parses `http(s)://…`, `exec:CMD ARG…` or `file:PATH`.
pub fn parse(spec: &str, retry: Retry) -> Result<Box<dyn Target>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        Ok(Box::new(HttpTarget::new(spec, retry)?))
    } else if let Some(cmd) = spec.strip_prefix("exec:") {
        let argv: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        if argv.is_empty() {
            bail!("target `{spec}`: exec: needs a command");
        }
        Ok(Box::new(ExecTarget { argv }))
    } else if let Some(path) = spec.strip_prefix("file:") {
        Ok(Box::new(FileTarget::open(PathBuf::from(path))?))
    } else {
        bail!("target `{spec}`: expected http(s)://…, exec:CMD ARG… or file:PATH")
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

    /// POSTs `body` with the key; 2xx delivered, 409 already done, other 4xx permanent,
    /// 5xx and transport errors retried with exponential backoff.
    pub async fn post(&self, key: &str, body: Vec<u8>) -> Delivery {
        let mut last = String::new();
        for attempt in 0..self.retry.attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(self.retry.backoff * 2u32.pow(attempt - 1)).await;
            }
            let sent = self
                .client
                .post(&self.url)
                .header("Content-Type", "application/json")
                .header("Idempotency-Key", key)
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(resp) => {
                    let status = resp.status();
                    if status.is_success() {
                        return Delivery::Delivered;
                    }
                    if status.as_u16() == 409 {
                        return Delivery::AlreadyDone;
                    }
                    last = format!("HTTP {status} from {}", self.url);
                    if status.is_client_error() {
                        return Delivery::Failed(last);
                    }
                }
                Err(e) => last = format!("{}: {}", self.url, describe(&e)),
            }
        }
        Delivery::Failed(last)
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        e.to_string()
    }
}

impl Target for HttpTarget {
    fn send<'a>(&'a self, key: &'a str, record: &'a Value) -> BoxFuture<'a, Delivery> {
        Box::pin(self.post(key, serde_json::to_vec(record).expect("records serialise")))
    }
}

/// Runs a command per message (no shell): the record on stdin, the key in
/// `DLQF_IDEMPOTENCY_KEY`; exit status 0 is delivered.
pub struct ExecTarget {
    argv: Vec<String>,
}

impl Target for ExecTarget {
    fn send<'a>(&'a self, key: &'a str, record: &'a Value) -> BoxFuture<'a, Delivery> {
        let argv = self.argv.clone();
        let name = argv[0].clone();
        let key = key.to_string();
        let body = serde_json::to_vec(record).expect("records serialise");
        Box::pin(async move {
            let run = tokio::task::spawn_blocking(move || -> std::io::Result<std::process::Output> {
                let mut child = Command::new(&argv[0])
                    .args(&argv[1..])
                    .env("DLQF_IDEMPOTENCY_KEY", &key)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()?;
                child.stdin.take().expect("piped").write_all(&body)?;
                child.wait_with_output()
            })
            .await;
            match run {
                Ok(Ok(out)) if out.status.success() => Delivery::Delivered,
                Ok(Ok(out)) => {
                    let err = String::from_utf8_lossy(&out.stderr);
                    Delivery::Failed(format!("{name} exited with {}: {}", out.status, err.trim().chars().take(200).collect::<String>()))
                }
                Ok(Err(e)) => Delivery::Failed(format!("cannot run command: {e}")),
                Err(e) => Delivery::Failed(format!("command task failed: {e}")),
            }
        })
    }
}

/// Appends `{"key": …, "record": …}` lines to a file.
pub struct FileTarget {
    file: Mutex<std::fs::File>,
    path: PathBuf,
}

impl FileTarget {
    pub fn open(path: PathBuf) -> Result<FileTarget> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path).with_context(|| format!("{}: cannot open target", path.display()))?;
        Ok(FileTarget { file: Mutex::new(file), path })
    }
}

impl Target for FileTarget {
    fn send<'a>(&'a self, key: &'a str, record: &'a Value) -> BoxFuture<'a, Delivery> {
        let mut line = serde_json::to_vec(&json!({"key": key, "record": record})).expect("records serialise");
        line.push(b'\n');
        let result = self.file.lock().expect("target lock").write_all(&line);
        Box::pin(async move {
            match result {
                Ok(()) => Delivery::Delivered,
                Err(e) => Delivery::Failed(format!("{}: {e}", self.path.display())),
            }
        })
    }
}
