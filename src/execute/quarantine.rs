//! Where poison messages are held: `file:PATH` (JSON-lines) or `http(s)://…`. Each key is
//! published once: the file sink remembers the keys it holds, the HTTP sink sends the key.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::append::AppendFile;
use futures_util::future::BoxFuture;

use super::message::Message;
use super::target::{self, Delivery, KafkaTarget, Retry, Target};

pub trait Sink: Send + Sync {
    /// Publishes one quarantine line for `key`; publishing a key already held is a no-op.
    fn publish<'a>(&'a self, key: &'a str, line: &'a Value) -> BoxFuture<'a, Result<()>>;
}

/// Checks the form of `file:PATH`, `http(s)://…`, `kafka://HOST:PORT…/TOPIC` or
/// `sqs://QUEUE` without opening anything.
pub fn check(spec: &str) -> Result<()> {
    let expected = "expected file:PATH, http(s)://…, kafka://HOST:PORT[,…]/TOPIC or sqs://QUEUE-NAME";
    if spec.starts_with("exec:") {
        bail!("`{spec}`: {expected}");
    }
    target::check(spec).map_err(|_| anyhow::anyhow!("`{spec}`: {expected}"))?;
    if let Some(rest) = spec.strip_prefix("kafka://") {
        if !KafkaTarget::new(rest, target::Retry::once())?.has_topic() {
            bail!("`{spec}`: a Kafka quarantine needs its topic: kafka://HOST:PORT/TOPIC");
        }
    }
    Ok(())
}

/// Opens the sink a checked spec names: the file sink, or a target that carries the
/// quarantine line as its payload, keyed by the idempotency key.
pub fn parse(spec: &str, retry: Retry) -> Result<Box<dyn Sink>> {
    check(spec)?;
    match spec.strip_prefix("file:") {
        Some(path) => Ok(Box::new(FileSink::open(PathBuf::from(path))?)),
        None => Ok(Box::new(TargetSink(target::parse(spec, retry)?))),
    }
}

pub struct FileSink {
    file: Arc<AppendFile>,
    /// The keys the file holds (or is being given), so each is published once.
    keys: Mutex<HashSet<String>>,
}

impl FileSink {
    /// Opens the file, learns which keys it holds, and cuts a half-written last line (a
    /// crash mid-write) so every line stays whole.
    pub fn open(path: PathBuf) -> Result<FileSink> {
        let mut keys = HashSet::new();
        let file = AppendFile::open(&path, |line| {
            if let Some(k) = serde_json::from_str::<Value>(line).ok().and_then(|v| v.get("key").and_then(Value::as_str).map(str::to_string)) {
                keys.insert(k);
            }
        })
        .with_context(|| format!("quarantine {}", path.display()))?;
        Ok(FileSink { file: Arc::new(file), keys: Mutex::new(keys) })
    }
}

impl Sink for FileSink {
    fn publish<'a>(&'a self, key: &'a str, line: &'a Value) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if !self.keys.lock().expect("quarantine lock").insert(key.to_string()) {
                return Ok(());
            }
            let mut bytes = serde_json::to_vec(line)?;
            bytes.push(b'\n');
            let file = self.file.clone();
            let written = tokio::task::spawn_blocking(move || file.append(&bytes)).await.context("quarantine write task")?;
            if written.is_err() {
                self.keys.lock().expect("quarantine lock").remove(key);
            }
            written.context("quarantine")
        })
    }
}

/// A target as a quarantine: the line is the payload, the idempotency key the message's key
/// (an HTTP `Idempotency-Key`, a Kafka record key, SQS's deduplication id), so a sink that
/// dedupes by key holds each poison message once.
pub struct TargetSink(Box<dyn Target>);

impl Sink for TargetSink {
    fn publish<'a>(&'a self, key: &'a str, line: &'a Value) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let message = Message {
                key,
                id: line["id"].as_str().unwrap_or(key),
                record: line,
                payload: Some(serde_json::to_vec(line)?),
                topic: None,
                origin_key: Some(key.as_bytes().to_vec()),
                headers: Vec::new(),
                whole_record: true,
                properties: None,
            };
            match self.0.send(&message).await {
                Delivery::Delivered | Delivery::AlreadyDone => Ok(()),
                Delivery::Rejected(why) | Delivery::Unavailable(why) | Delivery::AppFailed(why) | Delivery::Down(why) => bail!("quarantine: {why}"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn a_key_is_held_once_even_across_reopening_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        let line = |key: &str| serde_json::json!({"key": key, "detail": "d"});
        let sink = FileSink::open(path.clone()).unwrap();
        run(sink.publish("a", &line("a"))).unwrap();
        run(sink.publish("a", &line("a"))).unwrap();
        drop(sink);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"key\":\"b\",\"det");
        std::fs::write(&path, text).unwrap();
        let sink = FileSink::open(path.clone()).unwrap();
        run(sink.publish("a", &line("a"))).unwrap();
        run(sink.publish("b", &line("b"))).unwrap();
        let keys: Vec<String> =
            std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["key"].as_str().unwrap().to_string()).collect();
        assert_eq!(keys, ["a", "b"]);
    }
}
