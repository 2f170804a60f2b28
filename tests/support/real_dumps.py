"""Dead-letter archives laid out as real systems write them, from their public documentation,
each record labelled with its true cause, for the tests of dlqf's built-in profiles.

usage: real_dumps.py LAYOUT DIR N SEED

LAYOUT is one of kcat, s3-json, s3-parquet, lambda, sqs, pubsub, servicebus. Writes the
dump under DIR and DIR/truth.json: {"ids": {id: cause}, "records": {id: {...}}} where the id is
the one dlqf's profile gives a record, and `records` keeps what replay must send back (base64
key, value and headers) for the Kafka layouts.

Sources of the layouts:
- kcat -J: edenhill/kcat json.c (yajl without UTF-8 validation: control characters as
  \\u00XX, bytes above 0x7f raw; headers as a flat [name, value, ...] array, absent when none).
- Kafka Connect dead letters: apache/kafka DeadLetterQueueReporter.java (__connect.errors.*
  headers, UTF-8 text, partition and offset in decimal, the stack trace as printStackTrace).
- Confluent S3 sink, store.kafka.keys/headers=true: KeyValueHeaderRecordWriterProvider.java,
  RecordViews.java (values, .keys and .headers files; headers as {"headers":[{key,value}]};
  ByteArrayConverter bytes as base64; Parquet headers as list<struct<key,value>>).
- Lambda on-failure destination records: Lambda developer guide, "Capturing records of Lambda
  asynchronous invocations".
- SQS: `aws sqs receive-message --attribute-names All --message-attribute-names All`
  (awscli examples), a Lambda dead-letter queue's RequestID/ErrorCode/ErrorMessage attributes.
- Pub/Sub: `gcloud pubsub subscriptions pull --format=json` (a sorted, indented JSON array of
  {ackId, deliveryAttempt, message{attributes, data, messageId, publishTime}}).
- Service Bus: the REST API's BrokerProperties names with HTTP-date times, and the JavaScript
  SDK's ServiceBusReceivedMessage names.
"""
import base64
import datetime as dt
import json
import os
import random
import sys
import uuid

layout, out, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
os.makedirs(out, exist_ok=True)
START = dt.datetime(2026, 11, 28, 7, 0, 0, tzinfo=dt.timezone.utc)
truth = {"ids": {}, "records": {}}


def b64(data):
    return base64.b64encode(data).decode()


def when(i):
    return START + dt.timedelta(seconds=i * 7 + rng.randrange(5))


def hexid(k):
    return "".join(rng.choice("0123456789abcdef") for _ in range(k))


# Kafka Connect: the exception class header and the stack trace whose root cause is the cause.
def connect_failure(topic):
    cause = rng.choice(["magic", "schema", "json", "field", "duplicate"])
    if cause == "magic":
        cls = "org.apache.kafka.connect.errors.DataException"
        msg = f"Failed to deserialize data for topic {topic} to Avro: "
        trace = (f"{cls}: {msg}\n\tat io.confluent.connect.avro.AvroConverter.toConnectData(AvroConverter.java:148)\n"
                 "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.convertValue(WorkerSinkTask.java:545)\n"
                 "Caused by: org.apache.kafka.common.errors.SerializationException: Unknown magic byte!\n"
                 "\tat io.confluent.kafka.serializers.AbstractKafkaSchemaSerDe.getByteBuffer(AbstractKafkaSchemaSerDe.java:250)\n\t... 13 more\n")
    elif cause == "schema":
        cls = "org.apache.kafka.connect.errors.DataException"
        msg = f"Failed to deserialize data for topic {topic} to Avro: "
        sid = rng.randrange(10000, 99999)
        trace = (f"{cls}: {msg}\n\tat io.confluent.connect.avro.AvroConverter.toConnectData(AvroConverter.java:148)\n"
                 f"Caused by: org.apache.kafka.common.errors.SerializationException: Error retrieving Avro value schema for id {sid}\n"
                 "\tat io.confluent.kafka.serializers.AbstractKafkaAvroDeserializer.deserialize(AbstractKafkaAvroDeserializer.java:209)\n\t... 13 more\n"
                 f"Caused by: io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema {sid} not found; error code: 40403\n"
                 "\tat io.confluent.kafka.schemaregistry.client.rest.RestService.sendHttpRequest(RestService.java:236)\n\t... 18 more\n")
    elif cause == "json":
        cls = "org.apache.kafka.connect.errors.DataException"
        msg = f"Converting byte[] to Kafka Connect data failed due to serialization error of topic {topic}: "
        ch = rng.choice("xyzq#")
        trace = (f"{cls}: {msg}\n\tat org.apache.kafka.connect.json.JsonConverter.toConnectData(JsonConverter.java:324)\n"
                 f"Caused by: org.apache.kafka.common.errors.SerializationException: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('{ch}' (code {ord(ch)})): expected a valid value\n"
                 "\tat org.apache.kafka.connect.json.JsonDeserializer.deserialize(JsonDeserializer.java:66)\n\t... 17 more\n")
    elif cause == "field":
        cls = "org.apache.kafka.connect.errors.DataException"
        field = rng.choice(["customer_id", "total", "sku"])
        msg = f"Field '{field}' not found in schema"
        trace = f"{cls}: {msg}\n\tat org.apache.kafka.connect.transforms.ReplaceField.apply(ReplaceField.java:180)\n"
    else:
        cls = "org.apache.kafka.connect.errors.ConnectException"
        msg = "Exiting WorkerSinkTask due to unrecoverable exception."
        trace = (f"{cls}: {msg}\n\tat org.apache.kafka.connect.runtime.WorkerSinkTask.deliverMessages(WorkerSinkTask.java:618)\n"
                 f"Caused by: java.sql.BatchUpdateException: Duplicate entry 'ord-{rng.randrange(10**6)}' for key 'PRIMARY'\n\tat com.mysql.cj.jdbc.StatementImpl.executeBatch(StatementImpl.java:800)\n\t... 10 more\n")
    stage = {"magic": "VALUE_CONVERTER", "schema": "VALUE_CONVERTER", "json": "VALUE_CONVERTER", "field": "TRANSFORMATION", "duplicate": "TASK_PUT"}[cause]
    return cause, cls, msg, trace, stage


def connect_record(i, topic="payments", dlq="dlq-payments"):
    """One Kafka Connect dead letter: original key, value, headers and the reporter's."""
    cause, cls, msg, trace, stage = connect_failure(topic)
    partition, offset = rng.randrange(4), 1000 + i
    key = None if i % 11 == 10 else f"ord-{i}".encode()
    if i % 13 == 12:
        value = None  # a tombstone
    elif cause in ("magic", "schema"):
        value = b"\x00" + rng.randrange(1, 2**31).to_bytes(4, "big") + bytes(rng.randrange(256) for _ in range(rng.randrange(8, 40)))
    else:
        value = json.dumps({"order_id": f"ord-{i}", "total": rng.randrange(1, 999)}).encode()
    original = [("traceparent", f"00-{hexid(32)}-{hexid(16)}-01".encode()), ("content-type", b"application/avro")]
    if i % 5 == 0:
        original = []
    elif i % 7 == 0:
        # A header given twice, and one whose value is null (kcat prints it as null).
        original += [("retry", b"1"), ("x-empty", None), ("retry", b"2")]
    errors = [
        ("__connect.errors.topic", topic), ("__connect.errors.partition", str(partition)), ("__connect.errors.offset", str(offset)),
        ("__connect.errors.connector.name", "payments-sink"), ("__connect.errors.task.id", "0"), ("__connect.errors.stage", stage),
        ("__connect.errors.class.name", "org.apache.kafka.connect.json.JsonConverter"),
        ("__connect.errors.exception.class.name", cls), ("__connect.errors.exception.message", msg),
        ("__connect.errors.exception.stacktrace", trace),
    ]
    headers = original + [(k, v.encode()) for k, v in errors]
    rid = f"{topic}/{partition}/{offset}"
    truth["ids"][rid] = cause
    truth["records"][rid] = {
        "topic": topic,
        "key": None if key is None else b64(key),
        "value": None if value is None else b64(value),
        "headers": [[k, None if v is None else b64(v)] for k, v in original],
    }
    return dict(dlq=dlq, key=key, value=value, headers=headers, ts=int(when(i).timestamp() * 1000), offset=i)


def yajl_string(data):
    """A JSON string as kcat's yajl writes bytes: escapes for the few it escapes, the rest raw."""
    out = bytearray(b'"')
    for b in data:
        esc = {0x22: b'\\"', 0x5C: b"\\\\", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x0C: b"\\f", 0x08: b"\\b"}.get(b)
        if esc:
            out += esc
        elif b < 0x20:
            out += b"\\u00%02X" % b
        else:
            out.append(b)
    return bytes(out + b'"')


def kcat():
    lines = []
    for i in range(n):
        r = connect_record(i)
        parts = [b'"topic":' + yajl_string(r["dlq"].encode()), b'"partition":0', b'"offset":%d' % r["offset"], b'"tstype":"create"', b'"ts":%d' % r["ts"], b'"broker":1']
        if r["headers"]:
            flat = []
            for k, v in r["headers"]:
                flat += [yajl_string(k.encode()), b"null" if v is None else yajl_string(v)]
            parts.append(b'"headers":[' + b",".join(flat) + b"]")
        parts.append(b'"key":' + (b"null" if r["key"] is None else yajl_string(r["key"])))
        parts.append(b'"payload":' + (b"null" if r["value"] is None else yajl_string(r["value"])))
        lines.append(b"{" + b",".join(parts) + b"}")
    with open(os.path.join(out, "dlq-payments.kcat.jsonl"), "wb") as f:
        f.write(b"\n".join(lines) + b"\n")


def s3_chunks():
    """Records in chunks of up to 100, under dt=/hour= folders as the TimeBasedPartitioner writes."""
    records = [connect_record(i) for i in range(n)]
    # The S3 sink fails a record without a key or value when keys are stored, and one with a
    # null header value (a required string): give each a key and value, and no null header.
    for r in records:
        r["key"] = r["key"] or b"none"
        r["value"] = r["value"] if r["value"] is not None else b"{}"
        r["headers"] = [(k, v) for k, v in r["headers"] if v is not None]
    for r, (rid, rec) in zip(records, truth["records"].items()):
        rec["key"], rec["value"] = b64(r["key"]), b64(r["value"])
        rec["headers"] = [[k, v] for k, v in rec["headers"] if v is not None]
    chunks = []
    for start in range(0, n, 100):
        chunk = records[start:start + 100]
        t = START + dt.timedelta(hours=start // 1000)
        folder = os.path.join(out, "topics", "dlq-payments", f"dt={t:%Y-%m-%d}", f"hour={t:%H}")
        os.makedirs(folder, exist_ok=True)
        chunks.append((os.path.join(folder, f"dlq-payments+0+{start:010d}"), chunk))
    return chunks


def s3_json():
    for stem, chunk in s3_chunks():
        with open(stem + ".json", "w") as f:
            f.writelines(json.dumps(b64(r["value"])) + "\n" for r in chunk)
        with open(stem + ".keys.json", "w") as f:
            f.writelines(json.dumps(b64(r["key"])) + "\n" for r in chunk)
        with open(stem + ".headers.json", "w") as f:
            for r in chunk:
                f.write(json.dumps({"headers": [{"key": k, "value": v.decode()} for k, v in r["headers"]]}) + "\n")


def s3_parquet():
    import pyarrow as pa
    import pyarrow.parquet as pq
    header = pa.struct([("key", pa.string()), ("value", pa.string())])
    for stem, chunk in s3_chunks():
        pq.write_table(pa.table({"value": pa.array([r["value"] for r in chunk], pa.binary())}), stem + ".snappy.parquet")
        pq.write_table(pa.table({"key": pa.array([r["key"] for r in chunk], pa.binary())}), stem + ".keys.snappy.parquet")
        headers = [[{"key": k, "value": v.decode()} for k, v in r["headers"]] for r in chunk]
        pq.write_table(pa.table({"headers": pa.array(headers, pa.list_(header))}), stem + ".headers.snappy.parquet")


def lambda_records():
    with open(os.path.join(out, "failures.jsonl"), "w") as f, open(os.path.join(out, "one-record.json"), "w") as one:
        for i in range(n):
            rid = str(uuid.UUID(int=rng.getrandbits(128)))
            t = when(i)
            cause = rng.choice(["keyerror", "keyerror_customer", "timeout", "crash", "validation", "expired"])
            count = 3
            response = None
            if cause == "keyerror":
                response = {"errorMessage": "'sku'", "errorType": "KeyError", "requestId": "", "stackTrace": ["  File \"/var/task/app.py\", line 12, in handler\n    sku = item['sku']\n"]}
            elif cause == "keyerror_customer":
                # The same error type and templated message, raised elsewhere: another cause,
                # told apart by the stack trace only.
                response = {"errorMessage": "'customer_id'", "errorType": "KeyError", "requestId": "",
                            "stackTrace": ["  File \"/var/task/app.py\", line 30, in handler\n    return load_customer(event)\n",
                                           "  File \"/var/task/customers.py\", line 7, in load_customer\n    customer = event['customer_id']\n"]}
            elif cause == "timeout":
                response = {"errorMessage": f"{t:%Y-%m-%dT%H:%M:%S.%f}Z {rid} Task timed out after 3.00 seconds", "errorType": "Sandbox.Timedout"}
            elif cause == "crash":
                response = {"errorMessage": f"RequestId: {rid} Process exited before completing request"}
            elif cause == "validation":
                response = {"errorMessage": f"order ord-{rng.randrange(10**6)} has no items", "errorType": "ValidationError", "stackTrace": ["exports.handler (/var/task/index.js:18:18)"]}
            else:
                count = 0
            record = {
                "version": "1.0", "timestamp": f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z",
                "requestContext": {"requestId": rid, "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST",
                                   "condition": "EventAgeExceeded" if cause == "expired" else "RetriesExhausted", "approximateInvokeCount": count},
                "requestPayload": {"order_id": f"ord-{i}", "items": []},
            }
            if response is not None:
                record["responseContext"] = {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
                record["responsePayload"] = response
            truth["ids"][rid] = cause
            # The last record as the S3 destination stores one: a JSON object alone in a file.
            (one if i == n - 1 else f).write(json.dumps(record, indent=4 if i == n - 1 else None) + "\n")


def sqs():
    causes = [("200", "Unable to import module 'app': No module named 'requests'"), ("200", "order {} has no items"), ("429", "Rate Exceeded."), ("500", "Connection reset by peer to 10.0.{}.7")]
    messages = []
    for i in range(n):
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        code, text = rng.choice(causes)
        t = int(when(i).timestamp() * 1000)
        messages.append({
            "Body": json.dumps({"order_id": f"ord-{i}"}), "ReceiptHandle": b64(os.urandom(24)), "MD5OfBody": hexid(32), "MD5OfMessageAttributes": hexid(32),
            "MessageId": mid,
            "Attributes": {"ApproximateFirstReceiveTimestamp": str(t + 5), "SenderId": "AIDAIAZKMSNQ7TEXAMPLE", "ApproximateReceiveCount": str(rng.randrange(1, 6)), "SentTimestamp": str(t)},
            "MessageAttributes": {
                "RequestID": {"DataType": "String", "StringValue": str(uuid.uuid4())},
                "ErrorCode": {"DataType": "Number", "StringValue": code},
                "ErrorMessage": {"DataType": "String", "StringValue": text.format(rng.randrange(1000))},
            },
        })
        truth["ids"][mid] = code + " " + text
    # As receive-message prints them: up to 10 messages a file, pretty-printed; every other
    # file as a script saves the same answer, on one line.
    for k in range(0, n, 10):
        with open(os.path.join(out, f"receive-{k // 10:05d}.json"), "w") as f:
            json.dump({"Messages": messages[k:k + 10]}, f, indent=4 if k % 20 == 0 else None)


def pubsub():
    # The subscription that gave up, and (where the publisher put them) error fields in the data.
    pulled = []
    for i in range(n):
        mid = str(rng.randrange(10**15, 10**16))
        sub, cause = rng.choice([("orders-push", "validation"), ("orders-push", "timeout"), ("billing-pull", "declined"), ("audit-export", None)])
        t = when(i)
        data = {"order_id": f"ord-{i}", "amount": rng.randrange(100)}
        if cause == "validation":
            data.update(error_type="ValidationError", error_message=f"order ord-{i} has no items")
        elif cause == "timeout":
            data.update(error_type="TimeoutError", error_message=f"timed out after {rng.randrange(100, 9000)} ms calling 10.0.{rng.randrange(255)}.7")
        elif cause == "declined":
            data["error"] = {"type": "PaymentDeclined", "message": f"card ending {rng.randrange(1000, 9999)} declined"}
        else:
            data["error"] = {"code": 5}
        pulled.append({
            "ackId": b64(os.urandom(30)), "deliveryAttempt": 5,
            "message": {
                "attributes": {"CloudPubSubDeadLetterSourceDeliveryCount": "5", "CloudPubSubDeadLetterSourceSubscription": sub,
                               "CloudPubSubDeadLetterSourceSubscriptionProject": "shop-prod",
                               "CloudPubSubDeadLetterSourceTopicPublishTime": f"{t - dt.timedelta(minutes=3):%Y-%m-%dT%H:%M:%S}.123+00:00", "origin": "checkout"},
                "data": base64.urlsafe_b64encode(json.dumps(data).encode()).decode(), "messageId": mid, "publishTime": f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}123Z",
            },
        })
        truth["ids"][mid] = f"{sub}/{cause}"
    for k in range(0, n, 1000):
        with open(os.path.join(out, f"pull-{k // 1000:03d}.json"), "w") as f:
            json.dump(pulled[k:k + 1000], f, indent=2, sort_keys=True)


def servicebus():
    causes = [("MaxDeliveryCountExceeded", "Message could not be consumed after {} delivery attempts."), ("TTLExpiredException", "The message expired and was dead lettered."),
              ("ValidationFailed", "Order ord-{} is missing a customer id")]
    with open(os.path.join(out, "deadletters.jsonl"), "w") as f:
        for i in range(n):
            reason, text = rng.choice(causes)
            t = when(i)
            mid = hexid(32)
            if i % 2:
                # The REST API's BrokerProperties names, times as HTTP-dates.
                msg = {"MessageId": mid, "SequenceNumber": i, "DeliveryCount": 10, "EnqueuedTimeUtc": t.strftime("%a, %d %b %Y %H:%M:%S GMT"),
                       "DeadLetterReason": reason, "DeadLetterErrorDescription": text.format(rng.randrange(10, 1000)), "Body": json.dumps({"order": i})}
            else:
                # The JavaScript SDK's ServiceBusReceivedMessage.
                msg = {"messageId": mid, "sequenceNumber": i, "deliveryCount": 10, "enqueuedTimeUtc": f"{t:%Y-%m-%dT%H:%M:%S}.000Z",
                       "deadLetterReason": reason, "deadLetterErrorDescription": text.format(rng.randrange(10, 1000)),
                       "body": {"order": i}, "applicationProperties": {"tenant": "eu", "DeadLetterReason": reason}}
            truth["ids"][mid] = reason
            f.write(json.dumps(msg) + "\n")


{"kcat": kcat, "s3-json": s3_json, "s3-parquet": s3_parquet, "lambda": lambda_records, "sqs": sqs, "pubsub": pubsub, "servicebus": servicebus}[layout]()
with open(out.rstrip("/") + ".truth.json", "w") as f:
    json.dump(truth, f)
