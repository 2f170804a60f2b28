//! Where poison messages are held: `file:PATH` (JSON-lines) or `http(s)://…`. Each key is
//! published once: the file sink remembers the keys it holds, the HTTP sink sends the key.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::target::{BoxFuture, Delivery, HttpTarget, Retry};

pub trait Sink: Send + Sync {
    /// Publishes one quarantine line for `key`; publishing a key already held is a no-op.
    fn publish<'a>(&'a self, key: &'a str, line: &'a Value) -> BoxFuture<'a, Result<()>>;
}

pub fn parse(spec: &str, retry: Retry) -> Result<Box<dyn Sink>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        Ok(Box::new(HttpSink(HttpTarget::new(spec, retry)?)))
    } else if let Some(path) = spec.strip_prefix("file:") {
        Ok(Box::new(FileSink::open(PathBuf::from(path))?))
    } else {
        bail!("quarantine `{spec}`: expected file:PATH or http(s)://…")
    }
}

pub struct FileSink {
    state: Mutex<(File, HashSet<String>)>,
    path: PathBuf,
}

impl FileSink {
    /// Opens the file, learns which keys it holds, and cuts a half-written last line (a
    /// crash mid-write) so every line stays whole.
    pub fn open(path: PathBuf) -> Result<FileSink> {
        let name = path.display().to_string();
        let mut file = OpenOptions::new().create(true).read(true).append(true).open(&path).with_context(|| format!("{name}: cannot open quarantine"))?;
        let mut keys = HashSet::new();
        let mut whole = 0u64;
        let mut reader = BufReader::new(&file);
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader.read_line(&mut line).with_context(|| format!("{name}: cannot read quarantine"))?;
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            whole += n as u64;
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if let Some(k) = v.get("key").and_then(Value::as_str) {
                    keys.insert(k.to_string());
                }
            }
        }
        if whole < file.metadata()?.len() {
            file.set_len(whole)?;
        }
        file.seek(SeekFrom::End(0))?;
        Ok(FileSink { state: Mutex::new((file, keys)), path })
    }
}

impl Sink for FileSink {
    fn publish<'a>(&'a self, key: &'a str, line: &'a Value) -> BoxFuture<'a, Result<()>> {
        let result = (|| -> Result<()> {
            let mut state = self.state.lock().expect("quarantine lock");
            if state.1.contains(key) {
                return Ok(());
            }
            let mut bytes = serde_json::to_vec(line)?;
            bytes.push(b'\n');
            state.0.write_all(&bytes).with_context(|| format!("{}: cannot write quarantine", self.path.display()))?;
            state.1.insert(key.to_string());
            Ok(())
        })();
        Box::pin(async move { result })
    }
}

pub struct HttpSink(HttpTarget);

impl Sink for HttpSink {
    fn publish<'a>(&'a self, key: &'a str, line: &'a Value) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            match self.0.post(key, serde_json::to_vec(line)?).await {
                Delivery::Delivered | Delivery::AlreadyDone => Ok(()),
                Delivery::Failed(why) => bail!("quarantine: {why}"),
            }
        })
    }
}
