//! `redis://[USER:PASSWORD@]HOST:PORT[/DB[/QUEUE]]`: a Sidekiq job put back on its queue (or
//! QUEUE) as Sidekiq's
//! own "retry now" does (api.rb `SortedEntry#retry`, then `Client#atomic_push`): its
//! `retry_count` one less, `enqueued_at` now (integer milliseconds where the job's times are
//! integers, Sidekiq 8; float seconds before), the queue added to `queues` and the job pushed
//! on `queue:NAME`, in one MULTI/EXEC; with `dlqf-idempotency-key` among its keys. Spoken in
//! RESP over a few connections, used in turn.

use anyhow::{bail, Context, Result};
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

use super::{with_retries, Delivery, Retry, Target};
use crate::execute::message::Message;

pub struct RedisTarget {
    address: String,
    /// AUTH's arguments, when the URL names a password.
    auth: Option<(Option<String>, String)>,
    db: u32,
    /// The queue every job goes to, when the URL names one.
    queue: Option<String>,
    /// `redis://HOST:PORT/DB`, the password left out, for messages.
    name: String,
    retry: Retry,
    connections: Vec<tokio::sync::Mutex<Option<BufStream<TcpStream>>>>,
    /// The connection the next job takes.
    turn: std::sync::atomic::AtomicUsize,
}

/// Connections kept open: jobs in flight at once (a server that stalls holds each up to
/// --timeout, so one connection would queue every other job behind it).
const CONNECTIONS: usize = 8;

/// A reply, as far as pushing a job needs to read one.
#[derive(Debug, PartialEq)]
enum Reply {
    Ok,
    Error(String),
}

impl RedisTarget {
    /// The part after `redis://`.
    pub fn new(spec: &str, retry: Retry) -> Result<RedisTarget> {
        let url = reqwest::Url::parse(&format!("redis://{spec}")).with_context(|| format!("`redis://{spec}`: not a URL"))?;
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else { bail!("`redis://{spec}`: no host (redis://HOST:PORT/DB)") };
        let port = url.port().unwrap_or(6379);
        let (db, queue) = match url.path().trim_start_matches('/').split_once('/') {
            Some((db, queue)) => (db, Some(queue.to_string()).filter(|q| !q.is_empty())),
            None => (url.path().trim_start_matches('/'), None),
        };
        let db = match db {
            "" => 0,
            n => n.parse().with_context(|| format!("`redis://{spec}`: the database is a number"))?,
        };
        let decode = crate::execute::percent::percent_decode;
        let auth = url.password().map(|p| ((!url.username().is_empty()).then(|| decode(url.username())), decode(p)));
        let connections = (0..CONNECTIONS).map(|_| tokio::sync::Mutex::new(None)).collect();
        Ok(RedisTarget { address: format!("{host}:{port}"), auth, db, queue, name: format!("redis://{host}:{port}/{db}"), retry, connections, turn: Default::default() })
    }

    async fn connect(&self) -> Result<BufStream<TcpStream>, Delivery> {
        let down = |why: String| Delivery::Down(format!("{}: {why}", self.name));
        let stream = match tokio::time::timeout(self.retry.timeout, TcpStream::connect(&self.address)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(down(format!("cannot connect: {e}"))),
            Err(_) => return Err(down(format!("cannot connect: no answer within {:?}", self.retry.timeout))),
        };
        let mut stream = BufStream::new(stream);
        let mut hello: Vec<Vec<Vec<u8>>> = Vec::new();
        if let Some((user, password)) = &self.auth {
            let mut auth = vec![b"AUTH".to_vec()];
            auth.extend(user.iter().map(|u| u.as_bytes().to_vec()));
            auth.push(password.as_bytes().to_vec());
            hello.push(auth);
        }
        hello.push(vec![b"SELECT".to_vec(), self.db.to_string().into_bytes()]);
        for command in &hello {
            match self.exchange(&mut stream, std::slice::from_ref(command)).await {
                Ok(replies) if replies.iter().all(|r| *r == Reply::Ok) => {}
                Ok(replies) => return Err(down(format!("{} refused: {replies:?}", String::from_utf8_lossy(&command[0])))),
                Err(failure) => return Err(failure),
            }
        }
        Ok(stream)
    }

    /// Writes `commands` and reads their replies (a transaction's EXEC reply as its commands').
    async fn exchange(&self, stream: &mut BufStream<TcpStream>, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>, Delivery> {
        let mut out = Vec::new();
        for command in commands {
            out.extend_from_slice(format!("*{}\r\n", command.len()).as_bytes());
            for arg in command {
                out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                out.extend_from_slice(arg);
                out.extend_from_slice(b"\r\n");
            }
        }
        let talk = async {
            stream.write_all(&out).await?;
            stream.flush().await?;
            let mut replies = Vec::new();
            for _ in commands {
                read_reply(stream, &mut replies).await?;
            }
            Ok::<_, std::io::Error>(replies)
        };
        match tokio::time::timeout(self.retry.timeout, talk).await {
            Ok(Ok(replies)) => Ok(replies),
            Ok(Err(e)) => Err(Delivery::Unavailable(format!("{}: {e}", self.name))),
            Err(_) => Err(Delivery::Unavailable(format!("{}: no answer within {:?}", self.name, self.retry.timeout))),
        }
    }

    async fn push(&self, message: &Message<'_>) -> Delivery {
        let job = match retried_job(message) {
            Ok(job) => job,
            Err(why) => return Delivery::Rejected(format!("{}: {why}", self.name)),
        };
        let Some(queue) = self.queue.clone().or_else(|| message.topic.clone()).or_else(|| job["queue"].as_str().map(str::to_string)) else {
            return Delivery::Rejected(format!("{}: the job names no queue", self.name));
        };
        let json = serde_json::to_vec(&job).expect("values serialise");
        let commands = [
            vec![b"MULTI".to_vec()],
            vec![b"SADD".to_vec(), b"queues".to_vec(), queue.as_bytes().to_vec()],
            vec![b"LPUSH".to_vec(), format!("queue:{queue}").into_bytes(), json],
            vec![b"EXEC".to_vec()],
        ];
        let turn = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % CONNECTIONS;
        let mut connection = self.connections[turn].lock().await;
        if connection.is_none() {
            match self.connect().await {
                Ok(stream) => *connection = Some(stream),
                Err(failure) => return failure,
            }
        }
        let replies = self.exchange(connection.as_mut().expect("connected"), &commands).await;
        match replies {
            Err(failure) => {
                *connection = None;
                failure
            }
            Ok(replies) => match replies.iter().find_map(|r| match r {
                Reply::Error(e) => Some(e),
                Reply::Ok => None,
            }) {
                None => Delivery::Delivered,
                // Loading a dataset, a busy script: a passing state of the server.
                Some(e) if e.starts_with("LOADING") || e.starts_with("BUSY") || e.starts_with("TRYAGAIN") => Delivery::Unavailable(format!("{}: {e}", self.name)),
                // A wrong type at the key, no permission, out of memory: the server's setup.
                Some(e) => Delivery::Down(format!("{}: {e}", self.name)),
            },
        }
    }
}

/// The dead job as Sidekiq's retry pushes it again (see the module's note).
fn retried_job(message: &Message) -> Result<Value, String> {
    let mut job: Value = serde_json::from_slice(message.payload.as_deref().unwrap_or_default()).map_err(|e| format!("the job is not JSON: {e}"))?;
    let Value::Object(map) = &mut job else { return Err("the job is not a JSON object".into()) };
    if let Some(count) = map.get("retry_count").and_then(Value::as_i64) {
        map.insert("retry_count".into(), Value::from(count - 1));
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let milliseconds = map.get("created_at").or_else(|| map.get("failed_at")).is_some_and(|t| t.is_i64() || t.is_u64());
    let enqueued = if milliseconds { Value::from(now.as_millis() as u64) } else { Value::from(now.as_secs_f64()) };
    map.insert("enqueued_at".into(), enqueued);
    map.insert("dlqf-idempotency-key".into(), Value::String(message.key.to_string()));
    Ok(job)
}

/// Reads one reply: `+OK`-like and `:N` as Ok, `-ERR` as an error, a bulk string skipped, an
/// array's elements in turn (EXEC's answer holds its commands').
fn read_reply<'a>(stream: &'a mut BufStream<TcpStream>, replies: &'a mut Vec<Reply>) -> BoxFuture<'a, std::io::Result<()>> {
    Box::pin(async move {
        let mut line = Vec::new();
        stream.read_until(b'\n', &mut line).await?;
        if !line.ends_with(b"\r\n") {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the connection closed mid-reply"));
        }
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not a RESP reply: {text:?}"));
        match line[0] {
            b'+' | b':' => replies.push(Reply::Ok),
            b'-' => replies.push(Reply::Error(text)),
            b'$' => {
                let length: i64 = text.parse().map_err(|_| bad())?;
                if length >= 0 {
                    let mut skip = vec![0u8; length as usize + 2];
                    stream.read_exact(&mut skip).await?;
                }
                replies.push(Reply::Ok);
            }
            b'*' => {
                let count: i64 = text.parse().map_err(|_| bad())?;
                for _ in 0..count.max(0) {
                    read_reply(stream, replies).await?;
                }
                if count < 0 {
                    // A transaction the server aborted (EXEC answers a null array).
                    replies.push(Reply::Error("EXECABORT the transaction was discarded".into()));
                }
            }
            _ => return Err(bad()),
        }
        Ok(())
    })
}

impl Target for RedisTarget {
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        Box::pin(async move { with_retries(&self.retry, || self.push(message)).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_the_job_as_sidekiqs_retry_pushes_it() {
        let t = RedisTarget::new("default:pw@cache:6380/3", Retry::once()).unwrap();
        assert_eq!((t.address.as_str(), t.db, t.name.as_str()), ("cache:6380", 3, "redis://cache:6380/3"));
        assert_eq!(t.auth, Some((Some("default".into()), "pw".into())));
        let escaped = RedisTarget::new(":p%40ss%3Aword@cache:6380", Retry::once()).unwrap();
        assert_eq!(escaped.auth, Some((None, "p@ss:word".into())), "a percent-encoded password is decoded");
        assert!(RedisTarget::new("cache/x", Retry::once()).is_err());
        assert_eq!(RedisTarget::new("cache/2/replays", Retry::once()).unwrap().queue.as_deref(), Some("replays"));
        let record = serde_json::json!({});
        let message = |payload: &str| Message {
            key: "k1",
            id: "j",
            record: &record,
            payload: Some(payload.as_bytes().to_vec()),
            topic: Some("critical".into()),
            origin_key: None,
            headers: Vec::new(),
            whole_record: true,
            properties: None,
        };
        // Sidekiq 8: integer milliseconds, kept so; keys in their order, retry_count one less.
        let job = retried_job(&message(r#"{"class":"ChargeJob","retry_count":25,"created_at":1790812800123,"jid":"ab"}"#)).unwrap();
        let keys: Vec<&String> = job.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["class", "retry_count", "created_at", "jid", "enqueued_at", "dlqf-idempotency-key"]);
        assert_eq!(job["retry_count"], 24);
        assert!(job["enqueued_at"].is_u64() && job["enqueued_at"].as_u64().unwrap() > 1_790_000_000_000);
        // Sidekiq 7: float seconds.
        let job = retried_job(&message(r#"{"class":"ChargeJob","created_at":1790812800.5}"#)).unwrap();
        assert!(job["enqueued_at"].is_f64() && job["enqueued_at"].as_f64().unwrap() > 1_790_000_000.0);
        assert!(retried_job(&message("[1]")).unwrap_err().contains("not a JSON object"));
    }
}
