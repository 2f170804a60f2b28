//! `amqp://USER:PASSWORD@HOST:PORT/VHOST[/EXCHANGE]`: each message published back to RabbitMQ,
//! to its origin exchange (or EXCHANGE; the default exchange when there is neither) with its
//! origin key as the routing key, persistent, with its original properties and headers (the dead-lettering ones were
//! left out at plan time) and `dlqf-idempotency-key`; delivered once the broker confirms it
//! (publisher confirms). A message no queue is bound for, or an exchange that does not exist,
//! is the broker's setup: never the message's failure.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use amqprs::callbacks::{ChannelCallback, ConnectionCallback};
use amqprs::channel::{BasicPublishArguments, Channel, ConfirmSelectArguments};
use amqprs::connection::{Connection, OpenConnectionArguments};
use amqprs::{Ack, BasicProperties, Cancel, Close, CloseChannel, FieldTable, FieldValue, Nack, Return};
use anyhow::{bail, Context, Result};
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{with_retries, Delivery, Retry, Target};
use crate::execute::message::Message;

pub struct AmqpTarget {
    connect: OpenConnectionArguments,
    /// `amqp://HOST:PORT/VHOST`, the password left out, for messages.
    name: String,
    /// The exchange every message goes to, when the URL names one.
    exchange: Option<String>,
    retry: Retry,
    link: tokio::sync::Mutex<Option<Link>>,
}

/// A connection and its confirming channel, with the delivery tag of the last message published.
struct Link {
    connection: Connection,
    channel: Channel,
    confirms: Arc<Confirms>,
    last_tag: u64,
}

/// What the broker said of the messages published on a channel, by delivery tag.
#[derive(Default)]
struct Confirms {
    pending: Mutex<BTreeMap<u64, oneshot::Sender<Confirm>>>,
    /// Messages the broker returned as unroutable (by their idempotency key), acked after.
    returned: Mutex<HashSet<String>>,
    /// Why the channel or connection closed, once it has.
    closed: Mutex<Option<Closed>>,
}

#[derive(Clone, Debug)]
enum Confirm {
    Ack,
    Nack,
    Closed(Closed),
}

/// A channel or connection the broker closed: its AMQP reply code and text.
#[derive(Clone, Debug)]
struct Closed {
    code: u16,
    text: String,
}

impl Confirms {
    /// Answers the messages a confirmation covers: `tag`, and every one before it when `multiple`.
    fn settle(&self, tag: u64, multiple: bool, confirm: Confirm) {
        let mut pending = self.pending.lock().expect("confirms lock");
        let settled: Vec<u64> = if multiple { pending.range(..=tag).map(|(t, _)| *t).collect() } else { vec![tag] };
        for t in settled {
            if let Some(reply) = pending.remove(&t) {
                let _ = reply.send(confirm.clone());
            }
        }
    }

    /// The channel is gone: every message waiting for its confirmation gets why.
    fn close(&self, closed: Closed) {
        *self.closed.lock().expect("confirms lock") = Some(closed.clone());
        for (_, reply) in std::mem::take(&mut *self.pending.lock().expect("confirms lock")) {
            let _ = reply.send(Confirm::Closed(closed.clone()));
        }
    }
}

/// The callbacks amqprs calls on the channel's and the connection's events, into `Confirms`.
struct Events(Arc<Confirms>);

#[async_trait::async_trait]
impl ChannelCallback for Events {
    async fn close(&mut self, _: &Channel, close: CloseChannel) -> std::result::Result<(), amqprs::error::Error> {
        self.0.close(Closed { code: close.reply_code(), text: close.reply_text().clone() });
        Ok(())
    }
    async fn cancel(&mut self, _: &Channel, _: Cancel) -> std::result::Result<(), amqprs::error::Error> {
        Ok(())
    }
    async fn flow(&mut self, _: &Channel, _: bool) -> std::result::Result<bool, amqprs::error::Error> {
        Ok(true)
    }
    async fn publish_ack(&mut self, _: &Channel, ack: Ack) {
        self.0.settle(ack.delivery_tag(), ack.mutiple(), Confirm::Ack);
    }
    async fn publish_nack(&mut self, _: &Channel, nack: Nack) {
        self.0.settle(nack.delivery_tag(), nack.multiple(), Confirm::Nack);
    }
    async fn publish_return(&mut self, _: &Channel, _: Return, properties: BasicProperties, _: Vec<u8>) {
        let key = properties.headers().and_then(|h| h.get(&"dlqf-idempotency-key".try_into().expect("a short name"))).map(|v| match v {
            FieldValue::S(text) => text.to_string(),
            other => other.to_string(),
        });
        if let Some(key) = key {
            self.0.returned.lock().expect("confirms lock").insert(key);
        }
    }
}

#[async_trait::async_trait]
impl ConnectionCallback for Events {
    async fn close(&mut self, _: &Connection, close: Close) -> std::result::Result<(), amqprs::error::Error> {
        self.0.close(Closed { code: close.reply_code(), text: close.reply_text().clone() });
        Ok(())
    }
    async fn blocked(&mut self, _: &Connection, _: String) {}
    async fn unblocked(&mut self, _: &Connection) {}
    async fn secret_updated(&mut self, _: &Connection) {}
}

/// AMQP's reply code for an exchange (or vhost) that is not there, and for access refused.
const NOT_FOUND: u16 = 404;
const ACCESS_REFUSED: u16 = 403;

impl AmqpTarget {
    /// `USER:PASSWORD@HOST:PORT/VHOST[/EXCHANGE]`, the part after `amqp://` (the vhost `/` by
    /// default, percent-encoded as `%2F` where it is named).
    pub fn new(spec: &str, retry: Retry) -> Result<AmqpTarget> {
        let url = reqwest::Url::parse(&format!("amqp://{spec}")).with_context(|| format!("`amqp://{spec}`: not a URL"))?;
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else { bail!("`amqp://{spec}`: no host (amqp://USER:PASSWORD@HOST:PORT/VHOST)") };
        let port = url.port().unwrap_or(5672);
        let decode = crate::execute::percent::percent_decode;
        let user = if url.username().is_empty() { "guest".to_string() } else { decode(url.username()) };
        let password = url.password().map_or_else(|| "guest".to_string(), decode);
        let segments: Vec<&str> = url.path().trim_start_matches('/').split('/').collect();
        let (vhost, exchange) = match segments.as_slice() {
            [""] => ("/".to_string(), None),
            [vhost] => (decode(vhost), None),
            [vhost, exchange] => (if vhost.is_empty() { "/".to_string() } else { decode(vhost) }, Some(decode(exchange))),
            _ => bail!("`amqp://{spec}`: a virtual host (`%2F` for `/`) and an exchange at most after the port"),
        };
        let connect = OpenConnectionArguments::new(host, port, &user, &password).virtual_host(&vhost).connection_name("dlqf").finish();
        let name = format!("amqp://{host}:{port}{}", url.path());
        Ok(AmqpTarget { connect, name, exchange, retry, link: tokio::sync::Mutex::new(None) })
    }

    /// A connection with a channel in confirm mode.
    async fn open(&self) -> Result<Link, Delivery> {
        let down = |what: &str, e: amqprs::error::Error| Delivery::Down(format!("{}: {what}: {e}", self.name));
        let connection = tokio::time::timeout(self.retry.timeout, Connection::open(&self.connect))
            .await
            .map_err(|_| Delivery::Down(format!("{}: cannot connect: no answer within {:?}", self.name, self.retry.timeout)))?
            .map_err(|e| down("cannot connect", e))?;
        let confirms = Arc::new(Confirms::default());
        connection.register_callback(Events(confirms.clone())).await.map_err(|e| down("connection", e))?;
        let channel = connection.open_channel(None).await.map_err(|e| down("cannot open a channel", e))?;
        channel.register_callback(Events(confirms.clone())).await.map_err(|e| down("channel", e))?;
        channel.confirm_select(ConfirmSelectArguments::default()).await.map_err(|e| down("publisher confirms refused", e))?;
        Ok(Link { connection, channel, confirms, last_tag: 0 })
    }

    async fn publish(&self, message: &Message<'_>) -> Delivery {
        let exchange = self.exchange.clone().or_else(|| message.topic.clone()).unwrap_or_default();
        let routing_key = match std::str::from_utf8(message.origin_key.as_deref().unwrap_or_default()) {
            Ok(key) => key.to_string(),
            Err(_) => return Delivery::Rejected(format!("{}: the routing key is not UTF-8 text", self.name)),
        };
        if exchange.len() > 255 || routing_key.len() > 255 {
            return Delivery::Rejected(format!("{}: an exchange name or routing key is over AMQP's 255 bytes", self.name));
        }
        let properties = match properties(message) {
            Ok(p) => p,
            Err(why) => return Delivery::Rejected(format!("{}: {why}", self.name)),
        };
        let (confirmed, confirms) = {
            let mut link = self.link.lock().await;
            if link.as_ref().is_none_or(|l| l.confirms.closed.lock().expect("confirms lock").is_some()) {
                *link = Some(match self.open().await {
                    Ok(opened) => opened,
                    Err(down) => return down,
                });
            }
            let link = link.as_mut().expect("opened");
            // Tags count the channel's publications from 1: one at a time, in order.
            let tag = link.last_tag + 1;
            let (reply, confirmed) = oneshot::channel();
            link.confirms.pending.lock().expect("confirms lock").insert(tag, reply);
            let args = BasicPublishArguments::new(&exchange, &routing_key).mandatory(true).finish();
            // A broker that stopped reading (a memory or disk alarm blocks publishers) fills the
            // connection's buffers, and the publication waits: no longer than --timeout.
            let published = tokio::time::timeout(self.retry.timeout, link.channel.basic_publish(properties, message.body(), args)).await;
            let failed = match published {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(format!("publishing: {e}")),
                Err(_) => Some(format!("publishing: not taken within {:?}", self.retry.timeout)),
            };
            if let Some(why) = failed {
                link.confirms.pending.lock().expect("confirms lock").remove(&tag);
                link.confirms.close(Closed { code: 0, text: why.clone() });
                return Delivery::Unavailable(format!("{}: {why}", self.name));
            }
            link.last_tag = tag;
            (confirmed, link.confirms.clone())
        };
        let confirm = match tokio::time::timeout(self.retry.timeout, confirmed).await {
            Err(_) => {
                // The next message opens a new connection; what this one holds unread is dropped.
                confirms.close(Closed { code: 0, text: "no confirmation in time".into() });
                return Delivery::Unavailable(format!("{}: no confirmation within {:?}", self.name, self.retry.timeout));
            }
            Ok(Err(_)) => return Delivery::Unavailable(format!("{}: the channel closed before confirming", self.name)),
            Ok(Ok(confirm)) => confirm,
        };
        match confirm {
            Confirm::Ack if confirms.returned.lock().expect("confirms lock").remove(message.key) => {
                Delivery::Down(format!("{}: exchange `{exchange}` routes `{routing_key}` to no queue", self.name))
            }
            Confirm::Ack => Delivery::Delivered,
            Confirm::Nack => Delivery::Unavailable(format!("{}: the broker refused to take it (nack)", self.name)),
            Confirm::Closed(Closed { code, text }) if code == NOT_FOUND || code == ACCESS_REFUSED => {
                Delivery::Down(format!("{}: exchange `{exchange}`: {code} {text}", self.name))
            }
            Confirm::Closed(Closed { code, text }) => Delivery::Unavailable(format!("{}: {code} {text}", self.name)),
        }
    }
}

impl Target for AmqpTarget {
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        Box::pin(async move { with_retries(&self.retry, || self.publish(message)).await })
    }

    /// The channel and connection closed as AMQP closes them (amqprs must close them inside
    /// the runtime: dropped outside it, it panics).
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(link) = self.link.lock().await.take() {
                // A broker that stopped reading never answers: then the link is dropped as it is.
                let close = async {
                    let _ = link.channel.close().await;
                    let _ = link.connection.close().await;
                };
                let _ = tokio::time::timeout(self.retry.timeout, close).await;
            }
        })
    }
}

/// The message's original properties, persistent, its headers with `dlqf-idempotency-key`. A
/// `user_id` is left out: the broker refuses one that is not the connection's user.
fn properties(message: &Message) -> Result<BasicProperties, String> {
    let original = message.properties.as_ref().and_then(Value::as_object);
    let text = |name: &str| original.and_then(|p| p.get(name)).and_then(Value::as_str);
    let number = |name: &str| original.and_then(|p| p.get(name)).and_then(Value::as_u64);
    let mut properties = BasicProperties::default();
    properties.with_persistence(true);
    if let Some(v) = text("content_type") {
        properties.with_content_type(v);
    }
    if let Some(v) = text("content_encoding") {
        properties.with_content_encoding(v);
    }
    if let Some(v) = number("priority") {
        properties.with_priority(v.min(255) as u8);
    }
    for (name, set) in [
        ("correlation_id", BasicProperties::with_correlation_id as for<'a> fn(&'a mut BasicProperties, &str) -> &'a mut BasicProperties),
        ("reply_to", BasicProperties::with_reply_to),
        ("expiration", BasicProperties::with_expiration),
        ("message_id", BasicProperties::with_message_id),
        ("type", BasicProperties::with_message_type),
        ("app_id", BasicProperties::with_app_id),
    ] {
        if let Some(v) = text(name) {
            set(&mut properties, v);
        }
    }
    if let Some(v) = number("timestamp") {
        properties.with_timestamp(v);
    }
    let mut headers = match original.and_then(|p| p.get("headers")) {
        Some(Value::Object(map)) => table(map)?,
        _ => FieldTable::new(),
    };
    headers.insert(short("dlqf-idempotency-key")?, FieldValue::S(message.key.try_into().map_err(|_| "the key is too long")?));
    properties.with_headers(headers);
    Ok(properties)
}

/// A JSON object as an AMQP table, each value typed as RabbitMQ's management API showed it.
fn table(map: &serde_json::Map<String, Value>) -> Result<FieldTable, String> {
    let mut table = FieldTable::new();
    for (name, value) in map {
        table.insert(short(name)?, field(value)?);
    }
    Ok(table)
}

fn field(value: &Value) -> Result<FieldValue, String> {
    Ok(match value {
        Value::Null => FieldValue::V,
        Value::Bool(b) => FieldValue::t(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => FieldValue::l(i),
            None => FieldValue::d(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => FieldValue::S(s.as_str().try_into().map_err(|_| "a header value is too long")?),
        Value::Array(items) => FieldValue::A(items.iter().map(field).collect::<Result<Vec<_>, _>>()?.try_into().map_err(|_| "a header array is too long")?),
        Value::Object(map) => FieldValue::F(table(map)?),
    })
}

fn short(name: &str) -> Result<amqprs::FieldName, String> {
    name.to_string().try_into().map_err(|_| format!("header name `{name}` is over 255 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_host_port_credentials_and_vhost() {
        let t = AmqpTarget::new("shop:s%40cret@broker:5673/prod%2Feu", Retry::once()).unwrap();
        assert_eq!(t.name, "amqp://broker:5673/prod%2Feu", "no password in messages");
        assert_eq!((t.connect.get_host(), t.connect.get_port()), ("broker", 5673));
        assert!(t.connect.get_credentials() == &amqprs::security::SecurityCredentials::new_plain("shop", "s@cret"), "user and password decoded");
        assert_eq!(t.connect.get_virtual_host(), "prod/eu");
        assert_eq!(AmqpTarget::new("broker", Retry::once()).unwrap().connect.get_virtual_host(), "/");
        let with_exchange = AmqpTarget::new("broker/%2F/replays", Retry::once()).unwrap();
        assert_eq!((with_exchange.connect.get_virtual_host(), with_exchange.exchange.as_deref()), ("/", Some("replays")));
        assert!(AmqpTarget::new("broker/a/b/c", Retry::once()).is_err());
    }
}
