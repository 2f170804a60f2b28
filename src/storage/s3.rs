//! S3 through object_store (the version polars itself uses): one client per bucket per run,
//! listing, streamed and ranged reads, small objects fetched ahead concurrently, PUT and
//! multipart upload; retries with backoff are the store's. Credentials, region and endpoint
//! come from the standard AWS chain (`crate::aws`).

use std::collections::{HashMap, HashSet};
use std::io::{self, Read};
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, LazyLock, Mutex};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::{Found, Location};
use crate::aws::{Aws, ChainCredentials};

/// One runtime for all object-store calls; readers block on it from worker threads.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime")
});

/// Objects up to this size are fetched whole, ahead of their turn.
const AHEAD_MAX_BYTES: u64 = 4 << 20;
/// Bytes fetched ahead and not yet taken, about: the fetches in flight are as many as objects
/// of the mean size fill this, from 16 to 64. A small object's time is mostly the server's
/// latency (a first byte after 3-40 ms), not its bytes, so many in flight hide it.
const AHEAD_BYTES: u64 = 64 << 20;
const AHEAD_CONCURRENCY: std::ops::RangeInclusive<usize> = 16..=64;

/// The S3 clients of one run, one per bucket.
#[derive(Default)]
pub(super) struct Clients {
    by_bucket: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl Clients {
    fn store(&self, bucket: &str) -> Result<Arc<dyn ObjectStore>> {
        let mut stores = self.by_bucket.lock().expect("clients lock");
        if let Some(store) = stores.get(bucket) {
            return Ok(store.clone());
        }
        let aws = Aws::get();
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket).with_credentials(Arc::new(ChainCredentials));
        if let Some(region) = aws.region() {
            builder = builder.with_region(region);
        }
        if let Some(endpoint) = aws.endpoint("S3") {
            // An endpoint the user set to plain HTTP (a local S3 server) is meant.
            builder = builder.with_allow_http(endpoint.starts_with("http://")).with_endpoint(endpoint);
        }
        let store: Arc<dyn ObjectStore> = Arc::new(builder.build().with_context(|| format!("s3://{bucket}: cannot configure S3"))?);
        stores.insert(bucket.to_string(), store.clone());
        Ok(store)
    }

    /// One object, every object under a prefix (hive folders included), or the objects a
    /// glob matches; hidden and `_`-prefixed names are skipped unless named exactly.
    pub(super) fn list(&self, url: &str, bucket: &str, key: &str) -> Result<Vec<Found>> {
        let store = self.store(bucket)?;
        let glob_at = key.find(['*', '?', '[']);
        let prefix = match glob_at {
            Some(i) => key[..i].rsplit_once('/').map(|(p, _)| p.to_string()).unwrap_or_default(),
            None => key.trim_end_matches('/').to_string(),
        };
        let pattern = glob_at.map(|_| glob::Pattern::new(key)).transpose().with_context(|| format!("{url}: invalid glob pattern"))?;
        let object = |key: &str, meta: &object_store::ObjectMeta, explicit: bool| Found {
            location: Location::S3 { bucket: bucket.to_string(), key: key.to_string() },
            size: Some(meta.size),
            etag: meta.e_tag.clone(),
            explicit,
        };
        if pattern.is_none() && !key.is_empty() && !key.ends_with('/') {
            // One object, if the key names one (listing treats a prefix as a folder).
            match RUNTIME.block_on(store.head(&ObjectPath::from(key))) {
                Ok(meta) => return Ok(vec![object(key, &meta, true)]),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(error(url, "cannot read", e)),
            }
        }
        let listed: Vec<object_store::ObjectMeta> = RUNTIME
            .block_on(async {
                let prefix = (!prefix.is_empty()).then(|| ObjectPath::from(prefix.as_str()));
                store.list(prefix.as_ref()).collect::<Vec<_>>().await.into_iter().collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| error(url, "cannot list", e))?;
        let folder = format!("{}/", key.trim_end_matches('/'));
        let found: Vec<Found> = listed
            .into_iter()
            .filter_map(|meta| {
                let name = meta.location.to_string();
                let base = name.rsplit('/').next().unwrap_or(&name);
                let selected = match &pattern {
                    Some(p) => p.matches(&name),
                    None => key.is_empty() || name.starts_with(&folder),
                };
                (selected && !base.starts_with('.') && !base.starts_with('_')).then(|| object(&name, &meta, false))
            })
            .collect();
        if found.is_empty() {
            bail!("{url}: no such object, and no dump files under it or matching it");
        }
        Ok(found)
    }

    /// Streams an object's bytes as a blocking reader.
    pub(super) fn open(&self, bucket: &str, key: &str) -> Result<Box<dyn Read + Send>> {
        let store = self.store(bucket)?;
        let name = format!("s3://{bucket}/{key}");
        let stream = RUNTIME
            .block_on(async { store.get(&ObjectPath::from(key)).await.map(|r| r.into_stream()) })
            .map_err(|e| error(&name, "cannot read", e))?;
        Ok(Box::new(StreamReader { stream, current: Bytes::new(), name }))
    }

    pub(super) fn ranges(&self, bucket: &str, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let store = self.store(bucket)?;
        RUNTIME.block_on(store.get_ranges(&ObjectPath::from(key), ranges)).map_err(|e| error(&format!("s3://{bucket}/{key}"), "cannot read", e))
    }

    pub(super) fn put(&self, bucket: &str, key: &str, bytes: Vec<u8>) -> Result<()> {
        let store = self.store(bucket)?;
        RUNTIME.block_on(store.put(&ObjectPath::from(key), bytes.into())).map_err(|e| error(&format!("s3://{bucket}/{key}"), "cannot write", e))?;
        Ok(())
    }

    /// Uploads a local file in parts, without holding it in memory.
    pub(super) fn upload(&self, bucket: &str, key: &str, file: &std::path::Path) -> Result<()> {
        let store = self.store(bucket)?;
        let mut source = std::fs::File::open(file).with_context(|| format!("{}: cannot read", file.display()))?;
        RUNTIME
            .block_on(async {
                let upload = store.put_multipart(&ObjectPath::from(key)).await?;
                let mut writer = object_store::WriteMultipart::new(upload);
                let mut buf = vec![0u8; 8 << 20];
                loop {
                    let n = source.read(&mut buf).map_err(|e| object_store::Error::Generic { store: "S3", source: Box::new(e) })?;
                    if n == 0 {
                        break;
                    }
                    writer.wait_for_capacity(4).await?;
                    writer.write(&buf[..n]);
                }
                writer.finish().await
            })
            .map_err(|e| error(&format!("s3://{bucket}/{key}"), "cannot write", e))?;
        Ok(())
    }
}

/// Small S3 objects being fetched ahead of their turn, in order.
pub(super) struct Ahead {
    expected: HashSet<Location>,
    arriving: Option<Receiver<Result<Bytes>>>,
}

impl Ahead {
    /// Starts fetching the small S3 objects among `objects` (in their order, several at once).
    pub(super) fn start(clients: &Clients, objects: &[(Location, Option<u64>)]) -> Ahead {
        let mut bytes = 0;
        let small: Vec<(Arc<dyn ObjectStore>, String, String)> = objects
            .iter()
            .filter_map(|(location, size)| match (location, size) {
                (Location::S3 { bucket, key }, Some(size)) if *size <= AHEAD_MAX_BYTES => {
                    bytes += size;
                    clients.store(bucket).ok().map(|store| (store, bucket.clone(), key.clone()))
                }
                _ => None,
            })
            .collect();
        if small.len() < 2 {
            return Ahead { expected: HashSet::new(), arriving: None };
        }
        let expected = small.iter().map(|(_, bucket, key)| Location::S3 { bucket: bucket.clone(), key: key.clone() }).collect();
        let mean = (bytes / small.len() as u64).max(1);
        let in_flight = ((AHEAD_BYTES / mean) as usize).clamp(*AHEAD_CONCURRENCY.start(), *AHEAD_CONCURRENCY.end());
        let (sender, receiver) = sync_channel(in_flight);
        let fetches: Vec<_> = small.into_iter().map(|(store, bucket, key)| fetch(store, bucket, key)).collect();
        RUNTIME.spawn(async move {
            let mut fetched = stream::iter(fetches).buffered(in_flight);
            while let Some(object) = fetched.next().await {
                // The receiver blocks the consumer, not this task: hand over off the runtime.
                let sender = sender.clone();
                if tokio::task::spawn_blocking(move || sender.send(object)).await.map_or(true, |sent| sent.is_err()) {
                    break; // the reader stopped early
                }
            }
        });
        Ahead { expected, arriving: Some(receiver) }
    }

    /// The fetched bytes of `location` if it was fetched ahead (its turn has come: objects
    /// must be taken in order), else None.
    pub(super) fn take(&self, location: &Location) -> Option<Result<Bytes>> {
        if !self.expected.contains(location) {
            return None;
        }
        let arriving = self.arriving.as_ref()?;
        Some(arriving.recv().unwrap_or_else(|_| Err(anyhow::anyhow!("{location}: fetch stopped"))))
    }
}

async fn fetch(store: Arc<dyn ObjectStore>, bucket: String, key: String) -> Result<Bytes> {
    let name = format!("s3://{bucket}/{key}");
    let got = store.get(&ObjectPath::from(key.as_str())).await.map_err(|e| error(&name, "cannot read", e))?;
    got.bytes().await.map_err(|e| error(&name, "read error", e))
}

/// An object-store error in one line: S3's own code and message when it sent them.
fn describe(e: &object_store::Error) -> String {
    match e {
        object_store::Error::NotFound { .. } => return "not found".into(),
        object_store::Error::PermissionDenied { .. } => {
            return "access denied (HTTP 403): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy".into()
        }
        object_store::Error::Unauthenticated { .. } => return "not authenticated (HTTP 401): check the AWS credentials".into(),
        _ => {}
    }
    // A failure of the credential chain says itself, whatever the store wrapped it in.
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if text.contains("AWS credentials") || text.starts_with("no AWS credentials") {
            return text;
        }
        source = s.source();
    }
    let text = e.to_string();
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find('<')? + start;
        Some(text[start..end].to_string())
    };
    if let (Some(code), Some(message)) = (tag("Code"), tag("Message")) {
        return format!("{code}: {message}");
    }
    let first = text.lines().next().unwrap_or_default();
    first.split(" - HTTP error").next().unwrap_or(first).chars().take(300).collect()
}

fn error(url: &str, doing: &str, e: object_store::Error) -> anyhow::Error {
    anyhow::anyhow!("{url}: {doing}: {}", describe(&e))
}

struct StreamReader {
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    current: Bytes,
    name: String,
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match RUNTIME.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(bytes)) => self.current = bytes,
                Some(Err(e)) => return Err(io::Error::other(format!("{}: {}", self.name, describe(&e)))),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}
