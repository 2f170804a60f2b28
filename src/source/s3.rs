//! `s3://` inputs through object_store (the version polars itself uses): prefixes, globs and
//! hive folders are listed; objects are streamed, with the store's retries and backoff.

use std::io::{self, Read};
use std::sync::{Arc, LazyLock};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::local::format_from_name;
use super::{Compression, Format, Input, Location};
use crate::temp::TempFile;

/// One runtime for all object-store calls; readers block on it from worker threads.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio runtime")
});

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
    let short: String = first.split(" - HTTP error").next().unwrap_or(first).chars().take(300).collect();
    short
}

fn s3_error(url: &str, doing: &str, e: object_store::Error) -> anyhow::Error {
    anyhow::anyhow!("{url}: {doing}: {}", describe(&e))
}

/// Credentials, region and endpoint come from the standard AWS_* environment variables.
fn store(bucket: &str) -> Result<Arc<dyn ObjectStore>> {
    let store = AmazonS3Builder::from_env().with_bucket_name(bucket).build().with_context(|| format!("s3://{bucket}: cannot configure S3"))?;
    Ok(Arc::new(store))
}

fn split(url: &str) -> Result<(String, String)> {
    let rest = url.strip_prefix("s3://").expect("an s3:// url");
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        bail!("{url}: no bucket name");
    }
    Ok((bucket.to_string(), key.to_string()))
}

/// The objects an `s3://bucket/…` argument names: one object, every dump under a prefix
/// (hive folders included), or the objects matching a glob.
pub fn resolve(url: &str) -> Result<Vec<Input>> {
    let (bucket, key) = split(url)?;
    let store = store(&bucket)?;
    let glob_at = key.find(['*', '?', '[']);
    let prefix = match glob_at {
        Some(i) => key[..i].rsplit_once('/').map(|(p, _)| p.to_string()).unwrap_or_default(),
        None => key.trim_end_matches('/').to_string(),
    };
    let pattern = glob_at.map(|_| glob::Pattern::new(&key)).transpose().with_context(|| format!("{url}: invalid glob pattern"))?;
    if pattern.is_none() && !key.is_empty() && !key.ends_with('/') {
        // One object, if the key names one (listing treats a prefix as a folder).
        let head = RUNTIME.block_on(store.head(&ObjectPath::from(key.as_str())));
        match head {
            Ok(meta) => {
                let format = format_from_name(std::path::Path::new(&key)).unwrap_or(Format::Jsonl(Compression::None));
                return Ok(vec![Input { display: url.to_string(), location: Location::S3 { bucket, key }, format, size: Some(meta.size) }]);
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(s3_error(url, "cannot read", e)),
        }
    }
    let listed: Vec<object_store::ObjectMeta> = RUNTIME.block_on(async {
        let prefix = (!prefix.is_empty()).then(|| ObjectPath::from(prefix.as_str()));
        store.list(prefix.as_ref()).collect::<Vec<_>>().await.into_iter().collect::<Result<Vec<_>, _>>()
    }).map_err(|e| s3_error(url, "cannot list", e))?;

    let mut inputs = Vec::new();
    for meta in listed {
        let name = meta.location.to_string();
        let exact = pattern.is_none() && name == key;
        let under = pattern.is_none() && (key.is_empty() || name.starts_with(&format!("{}/", key.trim_end_matches('/'))));
        let matched = pattern.as_ref().is_some_and(|p| p.matches(&name));
        if !(exact || under || matched) {
            continue;
        }
        let base = name.rsplit('/').next().unwrap_or(&name);
        if !exact && (base.starts_with('.') || base.starts_with('_')) {
            continue;
        }
        let format = match format_from_name(std::path::Path::new(&name)) {
            Some(f) => f,
            None if exact => Format::Jsonl(Compression::None),
            None => continue,
        };
        inputs.push(Input { display: format!("s3://{bucket}/{name}"), location: Location::S3 { bucket: bucket.clone(), key: name }, format, size: Some(meta.size) });
    }
    inputs.sort_by(|a, b| a.display.cmp(&b.display));
    if inputs.is_empty() {
        bail!("{url}: no such object, and no dump files under it or matching it");
    }
    Ok(inputs)
}

/// Streams an object's bytes as a blocking reader.
pub fn open(bucket: &str, key: &str) -> Result<Box<dyn Read + Send>> {
    let store = store(bucket)?;
    let path = ObjectPath::from(key);
    let stream = RUNTIME
        .block_on(async { store.get(&path).await.map(|r| r.into_stream()) })
        .map_err(|e| s3_error(&format!("s3://{bucket}/{key}"), "cannot read", e))?;
    Ok(Box::new(StreamReader { stream, current: Bytes::new(), name: format!("s3://{bucket}/{key}") }))
}

/// An object's whole content (small files: reports, policies).
pub fn read_all(url: &str) -> Result<Vec<u8>> {
    let (bucket, key) = split(url)?;
    let mut bytes = Vec::new();
    open(&bucket, &key)?.read_to_end(&mut bytes).with_context(|| format!("{url}: cannot read"))?;
    Ok(bytes)
}

/// Downloads an object to a temporary file (Parquet readers need to seek); removed on drop.
pub fn download(bucket: &str, key: &str) -> Result<TempFile> {
    let temp = TempFile::new();
    let mut file = std::fs::File::create(temp.path()).with_context(|| format!("{}: cannot create", temp.path().display()))?;
    io::copy(&mut open(bucket, key)?, &mut file).with_context(|| format!("s3://{bucket}/{key}: read error"))?;
    Ok(temp)
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

/// Writes bytes to an object (reports and manifests with `-o s3://…`).
pub fn put(url: &str, bytes: Vec<u8>) -> Result<()> {
    let (bucket, key) = split(url)?;
    let store = store(&bucket)?;
    RUNTIME.block_on(store.put(&ObjectPath::from(key.as_str()), bytes.into())).map_err(|e| s3_error(url, "cannot write", e))?;
    Ok(())
}

/// Uploads a local file to `s3://…` in parts, without holding it in memory (manifests).
pub fn upload_file(url: &str, file: &std::path::Path) -> Result<()> {
    let (bucket, key) = split(url)?;
    let store = store(&bucket)?;
    let mut source = std::fs::File::open(file).with_context(|| format!("{}: cannot read", file.display()))?;
    RUNTIME
        .block_on(async {
            let upload = store.put_multipart(&ObjectPath::from(key.as_str())).await?;
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
        .map_err(|e| s3_error(url, "cannot write", e))?;
    Ok(())
}
