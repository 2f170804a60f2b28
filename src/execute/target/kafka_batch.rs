//! The bytes of a produce request carrying records exactly as planned: a record batch (magic
//! 2, uncompressed, CRC-32C) whose headers keep their order, repeats and null values (rskafka's
//! protocol types write every header value as bytes).

use std::io::Write;

use rskafka::protocol::api_key::ApiKey;
use rskafka::protocol::api_version::{ApiVersion, ApiVersionRange};
use rskafka::protocol::messages::{ProduceResponse, RequestBody, WriteVersionedError, WriteVersionedType};
use rskafka::protocol::primitives::Int16;
use rskafka::protocol::traits::WriteError;

use super::kafka_produce::Planned;

/// A produce request of one batch for one partition (versions 3 to 7 write it alike).
pub struct BatchRequest {
    pub topic: String,
    pub partition: i32,
    /// -1: acknowledged by every in-sync replica.
    pub acks: i16,
    pub timeout_ms: i32,
    /// A record batch, as `record_batch` writes it.
    pub batch: Vec<u8>,
}

impl RequestBody for BatchRequest {
    type ResponseBody = ProduceResponse;
    const API_KEY: ApiKey = ApiKey::Produce;
    /// From version 3, the first to carry record batches of magic 2 (KIP-98).
    const API_VERSION_RANGE: ApiVersionRange = ApiVersionRange::new(ApiVersion(Int16(3)), ApiVersion(Int16(7)));
    const FIRST_TAGGED_FIELD_IN_REQUEST_VERSION: ApiVersion = ApiVersion(Int16(9));
}

impl<W: Write> WriteVersionedType<W> for BatchRequest {
    fn write_versioned(&self, writer: &mut W, _version: ApiVersion) -> Result<(), WriteVersionedError> {
        let mut out = Vec::with_capacity(self.batch.len() + self.topic.len() + 32);
        // No transactional id (a null string), acks, timeout.
        out.extend_from_slice(&(-1i16).to_be_bytes());
        out.extend_from_slice(&self.acks.to_be_bytes());
        out.extend_from_slice(&self.timeout_ms.to_be_bytes());
        // One topic, one partition, the batch as bytes.
        out.extend_from_slice(&1i32.to_be_bytes());
        let name = i16::try_from(self.topic.len()).map_err(WriteError::from)?;
        out.extend_from_slice(&name.to_be_bytes());
        out.extend_from_slice(self.topic.as_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
        out.extend_from_slice(&self.partition.to_be_bytes());
        let len = i32::try_from(self.batch.len()).map_err(WriteError::from)?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&self.batch);
        writer.write_all(&out).map_err(WriteError::from)?;
        Ok(())
    }
}

/// A record batch of `records`, every one stamped `timestamp` (milliseconds since the epoch).
pub fn record_batch(records: &[Planned], timestamp: i64) -> Vec<u8> {
    // The part the CRC covers: attributes to the records.
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes()); // attributes: no compression, create time
    body.extend_from_slice(&(records.len() as i32 - 1).to_be_bytes()); // last offset delta
    body.extend_from_slice(&timestamp.to_be_bytes()); // first timestamp
    body.extend_from_slice(&timestamp.to_be_bytes()); // max timestamp
    body.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    body.extend_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    body.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    body.extend_from_slice(&(records.len() as i32).to_be_bytes());
    let mut record = Vec::new();
    for (i, r) in records.iter().enumerate() {
        record.clear();
        record.push(0); // attributes
        varint(&mut record, 0); // timestamp delta
        varint(&mut record, i as i64); // offset delta
        bytes(&mut record, r.key.as_deref());
        bytes(&mut record, r.value.as_deref());
        varint(&mut record, r.headers.len() as i64);
        for (name, value) in &r.headers {
            bytes(&mut record, Some(name.as_bytes()));
            bytes(&mut record, value.as_deref());
        }
        varint(&mut body, record.len() as i64);
        body.extend_from_slice(&record);
    }
    let mut batch = Vec::with_capacity(body.len() + 21);
    batch.extend_from_slice(&0i64.to_be_bytes()); // base offset
    batch.extend_from_slice(&(body.len() as i32 + 9).to_be_bytes()); // length after this field
    batch.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
    batch.push(2); // magic
    batch.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    batch.extend_from_slice(&body);
    batch
}

/// A zigzag varint, as record batches write lengths and deltas.
fn varint(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes with their length, or -1 for null.
fn bytes(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) => {
            varint(out, v.len() as i64);
            out.extend_from_slice(v);
        }
        None => varint(out, -1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rskafka::protocol::record::{ControlBatchOrRecords, Record, RecordBatch, RecordBatchCompression, RecordBatchTimestampType, RecordHeader};
    use rskafka::protocol::traits::{ReadType, WriteType};

    fn planned(i: usize, headers: Vec<(String, Option<Vec<u8>>)>) -> Planned {
        Planned { key: (i % 3 != 0).then(|| format!("k{i}").into_bytes()), value: (i % 4 != 0).then(|| vec![i as u8; i * 37]), headers }
    }

    /// Records without a null header are written byte for byte as rskafka's own record batch
    /// writer writes them (an independent implementation of the format), and read back by its
    /// reader.
    #[test]
    fn batches_are_what_rskafka_writes() {
        let records: Vec<Planned> = (0..9).map(|i| planned(i, (0..i % 4).map(|h| (format!("h{h}"), Some(vec![h as u8; h * 200]))).collect())).collect();
        let ours = record_batch(&records, 1_792_454_400_123);
        let theirs = RecordBatch {
            base_offset: 0,
            partition_leader_epoch: 0,
            last_offset_delta: 8,
            is_transactional: false,
            base_sequence: -1,
            compression: RecordBatchCompression::NoCompression,
            timestamp_type: RecordBatchTimestampType::CreateTime,
            producer_id: -1,
            producer_epoch: -1,
            first_timestamp: 1_792_454_400_123,
            max_timestamp: 1_792_454_400_123,
            records: ControlBatchOrRecords::Records(
                records
                    .iter()
                    .enumerate()
                    .map(|(i, r)| Record {
                        timestamp_delta: 0,
                        offset_delta: i as i32,
                        key: r.key.clone(),
                        value: r.value.clone(),
                        headers: r.headers.iter().map(|(k, v)| RecordHeader { key: k.clone(), value: v.clone().unwrap() }).collect(),
                    })
                    .collect(),
            ),
        };
        let mut written = Vec::new();
        theirs.write(&mut written).unwrap();
        assert_eq!(ours, written);
        assert_eq!(RecordBatch::read(&mut std::io::Cursor::new(ours)).unwrap(), theirs);
    }

    /// A null header value is written as length -1 (zigzag 0x01), in its place, the repeats of a
    /// name kept: the batch's bytes checked by hand.
    #[test]
    fn null_and_repeated_headers_keep_their_place() {
        let record = Planned {
            key: None,
            value: None,
            headers: vec![("a".into(), Some(b"1".to_vec())), ("n".into(), None), ("a".into(), Some(b"2".to_vec()))],
        };
        let batch = record_batch(&[record], 0);
        // After the 61-byte batch header: the record's length, then its fields.
        let want: &[u8] = &[
            0x22, // length 17, zigzag
            0x00, 0x00, 0x00, // attributes, timestamp delta, offset delta
            0x01, 0x01, // null key, null value
            0x06, // three headers
            0x02, b'a', 0x02, b'1', // a = 1
            0x02, b'n', 0x01, // n = null
            0x02, b'a', 0x02, b'2', // a = 2
        ];
        assert_eq!(&batch[61..], want);
        assert_eq!(u32::from_be_bytes(batch[17..21].try_into().unwrap()), crc32c::crc32c(&batch[21..]));
    }
}
