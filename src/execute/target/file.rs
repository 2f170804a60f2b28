//! `file:PATH`: one line `{"key": …, "record": …}` per message, whole and synced before it
//! counts (see `append`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures_util::future::BoxFuture;
use serde_json::json;

use super::{Delivery, Target};
use crate::execute::append::AppendFile;
use crate::execute::message::Message;

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

