//! `kafka://HOST:PORT[,HOST:PORT…][/TOPIC]`: one record per message on its origin topic (or
//! TOPIC), with the origin key and headers (in order) plus `dlqf-idempotency-key`; keyed
//! records go to the partition Java's default partitioner picks, so a replay lands where the
//! original did. Records to one partition are batched (`kafka_produce`); delivered means
//! acknowledged by every in-sync replica.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use anyhow::{bail, Result};
use futures_util::future::BoxFuture;
use rskafka::BackoffConfig;
use rskafka::client::error::Error as ClientError;
use rskafka::client::partition::UnknownTopicHandling;
use rskafka::client::{Client, ClientBuilder};
use tokio::sync::OnceCell;

use super::kafka_produce::{protocol_failure, Planned, Producer};
use super::{with_retries, Delivery, Retry, Target};
use crate::execute::message::Message;

pub struct KafkaTarget {
    brokers: Vec<String>,
    /// The topic every record goes to, when the URL names one.
    topic: Option<String>,
    retry: Retry,
    client: OnceCell<Client>,
    /// Partition counts by topic, as the brokers last said.
    partitions: Mutex<HashMap<String, usize>>,
    /// Topics found missing even when asked for by name.
    missing: Mutex<HashSet<String>>,
    producer: Producer,
}

impl KafkaTarget {
    /// `HOST:PORT[,HOST:PORT…][/TOPIC]`, the part after `kafka://`.
    pub fn new(spec: &str, retry: Retry) -> Result<KafkaTarget> {
        let (brokers, topic) = spec.split_once('/').unwrap_or((spec, ""));
        let brokers: Vec<String> = brokers.split(',').filter(|b| !b.is_empty()).map(str::to_string).collect();
        if brokers.is_empty() {
            bail!("`kafka://{spec}`: no broker (kafka://HOST:PORT[,HOST:PORT…][/TOPIC])");
        }
        let topic = (!topic.is_empty()).then(|| topic.to_string());
        let producer = Producer::new(brokers.clone(), retry.timeout);
        Ok(KafkaTarget { brokers, topic, retry, client: OnceCell::new(), partitions: Mutex::default(), missing: Mutex::default(), producer })
    }

    /// Whether the URL names the topic (a quarantine sink must).
    pub fn has_topic(&self) -> bool {
        self.topic.is_some()
    }

    fn name(&self) -> String {
        format!("kafka://{}", self.brokers.join(","))
    }

    async fn client(&self) -> Result<&Client, Delivery> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        self.reachable().await?;
        let backoff = BackoffConfig { deadline: Some(self.retry.timeout), ..BackoffConfig::default() };
        self.client
            .get_or_try_init(|| ClientBuilder::new(self.brokers.clone()).client_id("dlqf").backoff_config(backoff).build())
            .await
            .map_err(|e| Delivery::Down(format!("{}: cannot connect: {e}", self.name())))
    }

    /// Whether any broker accepts a connection: a refused connection or a name that does not
    /// resolve proves them unreachable at once, where the client would retry until its deadline.
    async fn reachable(&self) -> Result<(), Delivery> {
        let wait = self.retry.timeout.min(std::time::Duration::from_secs(5));
        let mut why = Vec::new();
        for broker in &self.brokers {
            match tokio::time::timeout(wait, tokio::net::TcpStream::connect(broker)).await {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => why.push(format!("{broker}: {e}")),
                Err(_) => why.push(format!("{broker}: no answer within {wait:?}")),
            }
        }
        Err(Delivery::Down(format!("{}: cannot connect ({})", self.name(), why.join("; "))))
    }

    /// The topic's partition count (asked of the brokers once, and again when unknown). A
    /// topic the brokers do not list is asked for by name, as producers do, which makes brokers
    /// that create topics on demand create it; a topic that still does not exist is the
    /// target's failure (its setup), never the message's, and is not asked for again.
    async fn partition_count(&self, client: &Client, topic: &str) -> Result<usize, Delivery> {
        if let Some(&n) = self.partitions.lock().expect("partitions lock").get(topic) {
            return Ok(n);
        }
        let missing = || Delivery::Down(format!("{}: topic `{topic}` does not exist, and the brokers did not create it", self.name()));
        if self.missing.lock().expect("missing lock").contains(topic) {
            return Err(missing());
        }
        let mut found = self.list_partitions(client, topic).await?;
        if found.is_none() {
            let by_name = client.partition_client(topic, 0, UnknownTopicHandling::Retry);
            let _ = tokio::time::timeout(self.retry.timeout, by_name).await;
            found = self.list_partitions(client, topic).await?;
        }
        found.ok_or_else(|| {
            self.missing.lock().expect("missing lock").insert(topic.to_string());
            missing()
        })
    }

    /// Lists the brokers' topics into the partition counts; returns `topic`'s, if it has any.
    async fn list_partitions(&self, client: &Client, topic: &str) -> Result<Option<usize>, Delivery> {
        let topics = client.list_topics().await.map_err(|e| self.failure(e))?;
        let mut known = self.partitions.lock().expect("partitions lock");
        for t in topics {
            known.insert(t.name, t.partitions.len());
        }
        Ok(known.get(topic).copied().filter(|&n| n > 0))
    }

    async fn send_once(&self, message: &Message<'_>) -> Delivery {
        let Some(topic) = self.topic.clone().or_else(|| message.topic.clone()) else {
            return Delivery::Rejected(format!("{}: the record names no topic, and the URL none", self.name()));
        };
        let client = match self.client().await {
            Ok(client) => client,
            Err(down) => return down,
        };
        let partitions = match self.partition_count(client, &topic).await {
            Ok(n) => n,
            Err(failure) => return failure,
        };
        // Java's default partitioner for keyed records; the idempotency key spreads the rest.
        let hashed = message.origin_key.as_deref().unwrap_or(message.key.as_bytes());
        let partition = ((murmur2(hashed) & 0x7fff_ffff) as usize % partitions) as i32;
        // Headers in the record's order, then dlqf's own: a key an earlier replay left on a
        // message that came back is replaced, so one record carries one key.
        let mut headers = message.headers.clone();
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case("dlqf-idempotency-key"));
        headers.push(("dlqf-idempotency-key".into(), Some(message.key.as_bytes().to_vec())));
        let record = Planned { key: message.origin_key.clone(), value: message.payload.clone(), headers };
        self.producer.produce(&topic, partition, record).await
    }

    /// Whose failure a client error is: unreachable brokers are the target's; a record the
    /// broker refuses is the message's; the rest may pass.
    fn failure(&self, e: ClientError) -> Delivery {
        let why = format!("{}: {e}", self.name());
        match &e {
            ClientError::Connection(_) | ClientError::RetryFailed(_) => Delivery::Down(why),
            // A topic that is not there is the brokers' setup, as a missing topic is above.
            ClientError::ServerError { protocol_error, .. } => protocol_failure(*protocol_error, why),
            _ => Delivery::Unavailable(why),
        }
    }
}

impl Target for KafkaTarget {
    fn send<'a>(&'a self, message: &'a Message<'a>) -> BoxFuture<'a, Delivery> {
        Box::pin(async move { with_retries(&self.retry, || self.send_once(message)).await })
    }
}

/// Kafka's murmur2, as Java's producer computes it (and librdkafka's `murmur2_random`).
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rskafka::client::error::ProtocolError;

    #[test]
    fn a_missing_topic_is_the_brokers_failure_and_a_bad_record_the_messages() {
        let target = KafkaTarget::new("127.0.0.1:9092", Retry::once()).unwrap();
        let server = |protocol_error| ClientError::ServerError {
            protocol_error,
            error_message: None,
            request: rskafka::client::error::RequestContext::Topic("orders".into()),
            response: None,
            is_virtual: false,
        };
        assert!(matches!(target.failure(server(ProtocolError::UnknownTopicOrPartition)), Delivery::Down(_)));
        assert!(matches!(target.failure(server(ProtocolError::TopicAuthorizationFailed)), Delivery::Down(_)));
        assert!(matches!(target.failure(server(ProtocolError::InvalidRecord)), Delivery::Rejected(_)));
        assert!(matches!(target.failure(server(ProtocolError::MessageTooLarge)), Delivery::Rejected(_)));
        assert!(matches!(target.failure(server(ProtocolError::NotLeaderOrFollower)), Delivery::Unavailable(_)));
    }

    #[test]
    fn murmur2_matches_kafkas_own_test_vectors() {
        // From Kafka's UtilsTest.testMurmur2 (clients/src/test/java/.../utils/UtilsTest.java).
        let cases: [(&str, i32); 6] = [
            ("21", -973932308),
            ("foobar", -790332482),
            ("a-little-bit-long-string", -985981536),
            ("a-little-bit-longer-string", -1486304829),
            ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
            ("abc", 479470107),
        ];
        for (text, want) in cases {
            assert_eq!(murmur2(text.as_bytes()), want, "{text}");
        }
    }
}
