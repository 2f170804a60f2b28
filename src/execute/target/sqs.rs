//! `sqs://QUEUE-NAME`: the payload as the message body with the idempotency key as a message
//! attribute, sent in batches of up to ten (each entry succeeds or fails on its own); FIFO
//! queues deduplicate by the key and group by the origin key. Requests are SigV4-signed with
//! the credentials of the standard AWS chain and speak SQS's JSON protocol.
//!
//! A queue that slows down (a FIFO queue's cost can grow with what it holds) gets fewer batch
//! requests in flight, never re-sent ones piled on top: see `Window`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, OnceCell};

use super::{transport_error, with_retries, Delivery, Retry, Target};
use crate::aws::Aws;
use crate::execute::message::Message;

/// Messages per SendMessageBatch, SQS's limit.
const BATCH: usize = 10;
/// How long a batch waits for more messages before it goes.
const LINGER: Duration = Duration::from_millis(2);
/// Messages in flight at most (sixteen full batches), while the queue keeps up.
const MAX_IN_FLIGHT: usize = BATCH * 16;

pub struct SqsTarget {
    queue: String,
    fifo: bool,
    client: reqwest::Client,
    retry: Retry,
    /// The queue's URL and the batcher's inbox, made on the first message.
    ready: OnceCell<(String, mpsc::Sender<Pending>)>,
}

/// A message waiting for its batch, and where its outcome goes.
struct Pending {
    entry: Value,
    reply: oneshot::Sender<Delivery>,
}

impl SqsTarget {
    pub fn new(queue: &str, retry: Retry) -> anyhow::Result<SqsTarget> {
        let client = reqwest::Client::builder().timeout(retry.timeout).build()?;
        Ok(SqsTarget { queue: queue.to_string(), fifo: queue.ends_with(".fifo"), client, retry, ready: OnceCell::new() })
    }

    fn name(&self) -> String {
        format!("sqs://{}", self.queue)
    }

    /// The region and endpoint SQS is reached at.
    fn endpoint() -> (String, String) {
        let aws = Aws::get();
        let region = aws.region().unwrap_or_else(|| "us-east-1".into());
        let endpoint = aws.endpoint("SQS").unwrap_or_else(|| format!("https://sqs.{region}.amazonaws.com"));
        (region, endpoint)
    }

    /// One signed call of SQS's JSON protocol: the answer's JSON, or whose failure it is.
    async fn call(client: &reqwest::Client, name: &str, action: &str, body: &Value) -> Result<Value, Delivery> {
        let (region, endpoint) = Self::endpoint();
        let credentials = Aws::get().credentials().await.map_err(|e| Delivery::Down(format!("{name}: {e:#}")))?;
        let body = serde_json::to_vec(body).expect("JSON serialises");
        let target = format!("AmazonSQS.{action}");
        let url = format!("{}/", endpoint.trim_end_matches('/'));
        let host = reqwest::Url::parse(&url).ok().and_then(|u| u.host_str().map(|h| match u.port() {
            Some(p) => format!("{h}:{p}"),
            None => h.to_string(),
        }));
        let host = host.ok_or_else(|| Delivery::Down(format!("{name}: bad endpoint {endpoint}")))?;
        let headers = [("content-type", "application/x-amz-json-1.0"), ("x-amz-target", target.as_str()), ("host", host.as_str())];
        let signed = crate::aws::sign(&credentials, "sqs", &region, "POST", &url, &headers, &body).map_err(|e| Delivery::Down(format!("{name}: signing: {e:#}")))?;
        let mut request = client.post(&url).header("content-type", "application/x-amz-json-1.0").header("x-amz-target", &target);
        for (k, v) in signed {
            request = request.header(k, v);
        }
        let response = request.body(body).send().await.map_err(|e| transport_error(&format!("{name} at {endpoint}"), &e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| Delivery::Unavailable(format!("{name}: {e}")))?;
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(answer);
        }
        let code = answer["__type"].as_str().map(|t| t.rsplit('#').next().unwrap_or(t).to_string()).unwrap_or_else(|| status.to_string());
        let message = answer["message"].as_str().or(answer["Message"].as_str()).unwrap_or_default();
        let why = format!("{name}: {action}: {code}: {message}");
        // A refused request as a whole (credentials, a missing queue, throttling) is the
        // queue's failure, never one message's.
        Err(if status.is_server_error() || code.contains("Throttl") { Delivery::Unavailable(why) } else { Delivery::Down(why) })
    }

    async fn ready(&self) -> Result<&(String, mpsc::Sender<Pending>), Delivery> {
        self.ready
            .get_or_try_init(|| async {
                let name = self.name();
                let answer = Self::call(&self.client, &name, "GetQueueUrl", &json!({"QueueName": self.queue})).await?;
                let url = answer["QueueUrl"].as_str().ok_or_else(|| Delivery::Down(format!("{name}: no QueueUrl in the answer")))?.to_string();
                let (sender, inbox) = mpsc::channel(BATCH * 8);
                tokio::spawn(batches(self.client.clone(), name, url.clone(), inbox, Arc::new(Window::new(self.retry.timeout))));
                Ok((url, sender))
            })
            .await
    }

    async fn send_once(&self, entry: Value) -> Delivery {
        let (_, sender) = match self.ready().await {
            Ok(ready) => ready,
            Err(delivery) => return delivery,
        };
        let (reply, outcome) = oneshot::channel();
        if sender.send(Pending { entry, reply }).await.is_err() {
            return Delivery::Down(format!("{}: the batcher stopped", self.name()));
        }
        outcome.await.unwrap_or_else(|_| Delivery::Unavailable(format!("{}: no answer for the batch", self.name())))
    }
}

/// How many messages may be in flight, set by how fast the queue answers: more while a batch
/// comes back within a quarter of the timeout, a quarter fewer when it takes over half, half
/// as many after a timeout, a throttle or an error of the queue's own (as TCP's congestion
/// window, counted in messages, so a slow queue gets small batches one at a time). Without
/// it, requests wait in a slow server past the timeout, each timed-out batch is sent again on
/// top of the work the server still does for it, and the replay buries the queue it feeds.
struct Window {
    timeout: Duration,
    /// The limit, and the messages in flight.
    state: Mutex<(usize, usize)>,
    opened: tokio::sync::Notify,
}

/// What a batch's answer said about the queue's load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    Light,
    Heavy,
    Over,
}

impl Window {
    fn new(timeout: Duration) -> Window {
        Window { timeout, state: Mutex::new((MAX_IN_FLIGHT / 2, 0)), opened: tokio::sync::Notify::new() }
    }

    /// Waits for room and takes it: at most a batch, at least one message.
    async fn take(&self) -> usize {
        loop {
            {
                let mut state = self.state.lock().unwrap();
                let (limit, in_flight) = &mut *state;
                if *in_flight < *limit {
                    let room = (*limit - *in_flight).min(BATCH);
                    *in_flight += room;
                    return room;
                }
            }
            self.opened.notified().await;
        }
    }

    /// Gives back room taken and not used.
    fn unused(&self, messages: usize) {
        self.state.lock().unwrap().1 -= messages;
        self.opened.notify_one();
    }

    /// Gives back a sent batch's room, with how long the queue took to answer it.
    fn answered(&self, messages: usize, took: Duration, overloaded: bool) {
        let load = match took {
            _ if overloaded => Load::Over,
            t if t > self.timeout / 2 => Load::Heavy,
            t if t < self.timeout / 4 => Load::Light,
            _ => return self.unused(messages),
        };
        let mut state = self.state.lock().unwrap();
        let (limit, in_flight) = &mut *state;
        *in_flight -= messages;
        *limit = match load {
            Load::Light => (*limit + messages).min(MAX_IN_FLIGHT),
            Load::Heavy => (*limit - *limit / 4).max(1),
            Load::Over => (*limit / 2).max(1),
        };
        drop(state);
        self.opened.notify_one();
    }
}

/// Gathers pending messages into batches (what waited for room, else what comes within
/// `LINGER`, as much as the window allows) and sends each batch on its own task.
async fn batches(client: reqwest::Client, name: String, url: String, mut inbox: mpsc::Receiver<Pending>, window: Arc<Window>) {
    while let Some(first) = inbox.recv().await {
        let room = window.take().await;
        let mut batch = vec![first];
        while batch.len() < room {
            match inbox.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let until = tokio::time::Instant::now() + LINGER;
        while batch.len() < room {
            match tokio::time::timeout_at(until, inbox.recv()).await {
                Ok(Some(next)) => batch.push(next),
                _ => break,
            }
        }
        window.unused(room - batch.len());
        let (client, name, url, window) = (client.clone(), name.clone(), url.clone(), window.clone());
        tokio::spawn(async move {
            let (sent, started) = (batch.len(), tokio::time::Instant::now());
            let overloaded = send_batch(&client, &name, &url, batch).await;
            window.answered(sent, started.elapsed(), overloaded);
        });
    }
}

/// Sends one batch and answers each message; true when the queue was slow or overloaded (a
/// timeout, a dropped request, its own error or a throttle).
async fn send_batch(client: &reqwest::Client, name: &str, url: &str, batch: Vec<Pending>) -> bool {
    let entries: Vec<Value> = batch.iter().enumerate().map(|(i, p)| {
        let mut entry = p.entry.clone();
        entry["Id"] = json!(i.to_string());
        entry
    }).collect();
    let mut outcomes: Vec<Option<Delivery>> = vec![None; batch.len()];
    match SqsTarget::call(client, name, "SendMessageBatch", &json!({"QueueUrl": url, "Entries": entries})).await {
        Ok(answer) => {
            let count = outcomes.len();
            let index = |v: &Value| v["Id"].as_str().and_then(|i| i.parse::<usize>().ok()).filter(|&i| i < count);
            for ok in answer["Successful"].as_array().into_iter().flatten() {
                if let Some(i) = index(ok) {
                    outcomes[i] = Some(Delivery::Delivered);
                }
            }
            for failed in answer["Failed"].as_array().into_iter().flatten() {
                if let Some(i) = index(failed) {
                    let why = format!("{name}: {}: {}", failed["Code"].as_str().unwrap_or("failed"), failed["Message"].as_str().unwrap_or_default());
                    // SenderFault: this message was refused; otherwise SQS failed to take it.
                    outcomes[i] = Some(if failed["SenderFault"].as_bool() == Some(true) { Delivery::Rejected(why) } else { Delivery::Unavailable(why) });
                }
            }
        }
        Err(whole) => outcomes.iter_mut().for_each(|o| *o = Some(whole.clone())),
    }
    let congested = outcomes.iter().any(|o| matches!(o, Some(Delivery::Unavailable(_))));
    for (pending, outcome) in batch.into_iter().zip(outcomes) {
        let _ = pending.reply.send(outcome.unwrap_or_else(|| Delivery::Unavailable(format!("{name}: the batch answer left this message out"))));
    }
    congested
}

/// A FIFO message's group: its origin key, else its id, as it is when SQS takes it (1 to 128
/// ASCII letters, digits and punctuation); otherwise `sha256:` and 32 hex digits of it, so
/// one key still makes one group.
fn group_id(message: &Message) -> String {
    let raw = message.origin_key.as_deref().filter(|k| !k.is_empty()).unwrap_or(message.id.as_bytes());
    if !raw.is_empty() && raw.len() <= 128 && raw.iter().all(|b| (b'!'..=b'~').contains(b)) {
        return String::from_utf8_lossy(raw).into_owned();
    }
    use sha2::{Digest, Sha256};
    format!("sha256:{}", crate::manifest::hex(&Sha256::digest(raw)[..16]))
}

impl Target for SqsTarget {
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        // An SQS body is text, and never empty.
        let body = match message.payload.as_deref().map(std::str::from_utf8) {
            Some(Ok(text)) if !text.is_empty() => text.to_string(),
            Some(Ok(_)) | None => return Box::pin(async { Delivery::Rejected("an empty or null payload cannot be an SQS message body".into()) }),
            Some(Err(_)) => return Box::pin(async { Delivery::Rejected("the payload is not UTF-8 text, which an SQS message body must be".into()) }),
        };
        let mut entry = json!({
            "MessageBody": body,
            "MessageAttributes": {"dlqf-idempotency-key": {"DataType": "String", "StringValue": message.key}},
        });
        if self.fifo {
            entry["MessageDeduplicationId"] = json!(message.key);
            entry["MessageGroupId"] = json!(group_id(message));
        }
        Box::pin(async move { with_retries(&self.retry, || self.send_once(entry.clone())).await })
    }
}
