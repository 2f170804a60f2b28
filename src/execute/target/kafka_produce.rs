//! Produce requests that carry each record exactly as planned: headers in the record's order,
//! a name given twice kept twice, a null value null (`kafka_batch`; rskafka's producer takes
//! headers as a sorted map of bytes). Records
//! bound for one partition wait a millisecond for others and go in one request to its leader;
//! leaders come from metadata, asked again when a broker says it no longer leads.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rskafka::messenger::Messenger;
use rskafka::protocol::error::Error as ProtocolError;
use rskafka::protocol::messages::{MetadataRequest, MetadataRequestTopic};
use rskafka::protocol::primitives::String_;
use tokio::io::BufStream;
use tokio::net::TcpStream;
use tokio::sync::{watch, Mutex};

use super::kafka_batch::{record_batch, BatchRequest};
use super::Delivery;

/// One record as a producer sent it.
#[derive(Clone, Debug)]
pub struct Planned {
    pub key: Option<Vec<u8>>,
    /// None: a tombstone.
    pub value: Option<Vec<u8>>,
    /// Names and values in order; a name may repeat, a value be null.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

impl Planned {
    fn size(&self) -> usize {
        self.key.as_ref().map_or(0, Vec::len) + self.value.as_ref().map_or(0, Vec::len) + self.headers.iter().map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len)).sum::<usize>()
    }
}

type Connection = Arc<Messenger<BufStream<TcpStream>>>;

/// How long records wait for others bound to the same partition.
const LINGER: Duration = Duration::from_millis(1);
/// The most a batch holds, in bytes.
const BATCH_BYTES: usize = 1 << 20;
/// The largest answer read from a broker.
const MAX_MESSAGE: usize = 100 << 20;

pub struct Producer {
    /// `HOST:PORT` of the brokers the URL names.
    bootstrap: Vec<String>,
    /// How long one request may take.
    timeout: Duration,
    /// Brokers by node id, and partition leaders, as metadata last said.
    brokers: Mutex<HashMap<i32, String>>,
    leaders: Mutex<HashMap<(String, i32), i32>>,
    connections: Mutex<HashMap<String, Connection>>,
    /// The batch filling for each partition.
    filling: std::sync::Mutex<HashMap<(String, i32), Arc<Batch>>>,
}

/// Records bound for one partition, sent together by the first of them.
struct Batch {
    records: std::sync::Mutex<Vec<Planned>>,
    bytes: std::sync::atomic::AtomicUsize,
    done: watch::Sender<Option<Delivery>>,
}

impl Producer {
    pub fn new(bootstrap: Vec<String>, timeout: Duration) -> Producer {
        Producer {
            bootstrap,
            timeout,
            brokers: Mutex::default(),
            leaders: Mutex::default(),
            connections: Mutex::default(),
            filling: std::sync::Mutex::default(),
        }
    }

    fn name(&self) -> String {
        format!("kafka://{}", self.bootstrap.join(","))
    }

    /// Sends one record to a partition, in a batch with those sent to it meanwhile; delivered
    /// means acknowledged by every in-sync replica.
    pub async fn produce(&self, topic: &str, partition: i32, record: Planned) -> Delivery {
        let size = record.size();
        let (batch, first) = {
            let mut filling = self.filling.lock().expect("filling lock");
            let slot = (topic.to_string(), partition);
            match filling.get(&slot) {
                Some(batch) if batch.bytes.load(std::sync::atomic::Ordering::SeqCst) + size <= BATCH_BYTES => {
                    batch.records.lock().expect("batch lock").push(record);
                    batch.bytes.fetch_add(size, std::sync::atomic::Ordering::SeqCst);
                    (batch.clone(), false)
                }
                _ => {
                    let batch = Arc::new(Batch { records: std::sync::Mutex::new(vec![record]), bytes: size.into(), done: watch::channel(None).0 });
                    filling.insert(slot, batch.clone());
                    (batch, true)
                }
            }
        };
        if first {
            tokio::time::sleep(LINGER).await;
            {
                let mut filling = self.filling.lock().expect("filling lock");
                let slot = (topic.to_string(), partition);
                if filling.get(&slot).is_some_and(|b| Arc::ptr_eq(b, &batch)) {
                    filling.remove(&slot);
                }
            }
            let records = std::mem::take(&mut *batch.records.lock().expect("batch lock"));
            let delivery = self.send(topic, partition, records).await;
            batch.done.send_replace(Some(delivery.clone()));
            return delivery;
        }
        let mut done = batch.done.subscribe();
        let delivery = done.wait_for(Option::is_some).await.map(|d| d.clone());
        match delivery {
            Ok(delivery) => delivery.expect("waited for"),
            Err(_) => Delivery::Unavailable(format!("{}: the batch was dropped", self.name())),
        }
    }

    /// One produce request with `records`, to the partition's leader.
    async fn send(&self, topic: &str, partition: i32, records: Vec<Planned>) -> Delivery {
        let leader = match self.leader(topic, partition).await {
            Ok(leader) => leader,
            Err(failure) => return failure,
        };
        let connection = match self.connect(&leader).await {
            Ok(c) => c,
            Err(failure) => return failure,
        };
        let request = produce_request(topic, partition, records, self.timeout);
        let answer = match tokio::time::timeout(self.timeout + Duration::from_secs(1), connection.request(request)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                self.connections.lock().await.remove(&leader);
                return Delivery::Unavailable(format!("{}: {leader}: {e}", self.name()));
            }
            Err(_) => {
                self.connections.lock().await.remove(&leader);
                return Delivery::Unavailable(format!("{}: {leader} did not answer within {:?}", self.name(), self.timeout));
            }
        };
        let error = answer.responses.iter().filter(|r| r.name.0 == topic).flat_map(|r| &r.partition_responses).find(|p| p.index.0 == partition).map(|p| p.error);
        match error {
            Some(None) => Delivery::Delivered,
            Some(Some(e)) => {
                if matches!(e, ProtocolError::NotLeaderOrFollower | ProtocolError::LeaderNotAvailable | ProtocolError::UnknownTopicOrPartition) {
                    self.leaders.lock().await.remove(&(topic.to_string(), partition));
                }
                protocol_failure(e, format!("{}: {topic}/{partition}: {e}", self.name()))
            }
            None => Delivery::Unavailable(format!("{}: the answer left out {topic}/{partition}", self.name())),
        }
    }

    /// The address of a partition's leader, asking the brokers when it is not known.
    async fn leader(&self, topic: &str, partition: i32) -> Result<String, Delivery> {
        // One lock at a time: `refresh` takes them in its own order.
        let slot = (topic.to_string(), partition);
        let known = self.leaders.lock().await.get(&slot).copied();
        if let Some(id) = known {
            let address = self.brokers.lock().await.get(&id).cloned();
            if let Some(address) = address {
                return Ok(address);
            }
        }
        self.refresh(topic).await?;
        let id = self.leaders.lock().await.get(&slot).copied();
        let Some(id) = id else {
            return Err(Delivery::Unavailable(format!("{}: {topic}/{partition} has no leader now", self.name())));
        };
        let address = self.brokers.lock().await.get(&id).cloned();
        address.ok_or_else(|| Delivery::Unavailable(format!("{}: leader {id} of {topic}/{partition} is not among the brokers", self.name())))
    }

    /// Asks a bootstrap broker for `topic`'s partitions and the brokers.
    async fn refresh(&self, topic: &str) -> Result<(), Delivery> {
        let mut last = None;
        for address in &self.bootstrap {
            let connection = match self.connect(address).await {
                Ok(c) => c,
                Err(failure) => {
                    last = Some(failure);
                    continue;
                }
            };
            let request = MetadataRequest { topics: Some(vec![MetadataRequestTopic { name: String_(topic.to_string()) }]), allow_auto_topic_creation: None };
            match tokio::time::timeout(self.timeout, connection.request(request)).await {
                Ok(Ok(answer)) => {
                    // The brokers first, so a leader read is always among them.
                    {
                        let mut brokers = self.brokers.lock().await;
                        for b in &answer.brokers {
                            brokers.insert(b.node_id.0, format!("{}:{}", b.host.0, b.port.0));
                        }
                    }
                    let mut leaders = self.leaders.lock().await;
                    for t in answer.topics.iter().filter(|t| t.name.0 == topic) {
                        for p in &t.partitions {
                            leaders.insert((topic.to_string(), p.partition_index.0), p.leader_id.0);
                        }
                    }
                    return Ok(());
                }
                Ok(Err(e)) => {
                    self.connections.lock().await.remove(address);
                    last = Some(Delivery::Down(format!("{}: {address}: {e}", self.name())));
                }
                Err(_) => last = Some(Delivery::Down(format!("{}: {address} did not answer within {:?}", self.name(), self.timeout))),
            }
        }
        Err(last.unwrap_or_else(|| Delivery::Down(format!("{}: no broker", self.name()))))
    }

    /// A connection to `address`, made once and kept.
    async fn connect(&self, address: &str) -> Result<Connection, Delivery> {
        let known = self.connections.lock().await.get(address).cloned();
        if let Some(c) = known {
            return Ok(c);
        }
        let down = |why: String| Delivery::Down(format!("{}: cannot connect to {address}: {why}", self.name()));
        let stream = match tokio::time::timeout(self.timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(down(e.to_string())),
            Err(_) => return Err(down(format!("no answer within {:?}", self.timeout))),
        };
        let _ = stream.set_nodelay(true);
        let mut messenger = Messenger::new(BufStream::new(stream), MAX_MESSAGE, Arc::from("dlqf"));
        match tokio::time::timeout(self.timeout, messenger.sync_versions()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(down(e.to_string())),
            Err(_) => return Err(down(format!("no answer within {:?}", self.timeout))),
        }
        // Made without the lock held (a slow broker holds up no other); the first one kept wins.
        let connection = Arc::new(messenger);
        Ok(self.connections.lock().await.entry(address.to_string()).or_insert(connection).clone())
    }
}

/// Whose failure a broker's error code is: a record it refuses is the message's; a topic that
/// is not there, or not ours to write, is the target's setup; the rest may pass.
pub fn protocol_failure(e: ProtocolError, why: String) -> Delivery {
    match e {
        ProtocolError::MessageTooLarge | ProtocolError::CorruptMessage | ProtocolError::InvalidRecord | ProtocolError::RecordListTooLarge | ProtocolError::InvalidTopicException => {
            Delivery::Rejected(why)
        }
        ProtocolError::UnknownTopicOrPartition | ProtocolError::TopicAuthorizationFailed | ProtocolError::ClusterAuthorizationFailed | ProtocolError::SaslAuthenticationFailed => {
            Delivery::Down(why)
        }
        _ => Delivery::Unavailable(why),
    }
}

/// A produce request of one batch, acknowledged by all in-sync replicas.
fn produce_request(topic: &str, partition: i32, records: Vec<Planned>, timeout: Duration) -> BatchRequest {
    let batch = record_batch(&records, chrono::Utc::now().timestamp_millis());
    BatchRequest { topic: topic.to_string(), partition, acks: -1, timeout_ms: timeout.as_millis().min(i32::MAX as u128) as i32, batch }
}
