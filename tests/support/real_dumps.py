"""Dead-letter archives laid out as real systems write them, from their public documentation,
each record labelled with its true cause, for the tests of dlqf's built-in profiles.

usage: real_dumps.py LAYOUT DIR N SEED

LAYOUT is one of kcat, s3-json, s3-parquet, lambda, sqs, pubsub, servicebus, spring-kafka,
rabbitmq, sidekiq, eventbridge, eventgrid, nservicebus, masstransit. Writes the
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
- Spring Kafka: spring-kafka KafkaHeaders.java, DeadLetterPublishingRecoverer.java (binary
  big-endian partition/offset/timestamp headers; kafka_dlt-exception-* and, for keys,
  kafka_dlt-key-exception-*; @RetryableTopic's kafka_original-*/kafka_exception-* spellings).
- RabbitMQ: rabbitmq-server deps/rabbit/src/mc_amqpl.erl and the dlx guide (x-death most
  recent first, x-first-death-*), the management API's get answer; Spring AMQP's
  RepublishMessageRecoverer (x-exception-*, x-original-*).
- Sidekiq: lib/sidekiq/job_retry.rb, api.rb, Changes.md 8.0 (error_backtrace as base64 of
  zlib of a JSON array; float seconds up to 7.x, integer milliseconds from 8.0).
- EventBridge: the user guide's "rule-dlq" message attributes on an SQS dead-letter queue.
- Event Grid: azure-docs event-grid/delivery-and-retry.md (blob paths, dead-letter fields,
  both schemas).
- NServiceBus: Recoverability/Faults/FaultMetadataExtractor.cs, FaultsHeaderKeys.cs,
  DateTimeOffsetHelper.cs; MassTransit: MessageHeaders.cs, SendContextExtensions.cs.
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


JAVA_WRAPPER = "org.springframework.kafka.listener.ListenerExecutionFailedException"
LISTENER = "Listener method 'public void com.shop.orders.OrderListener.onOrder(org.apache.kafka.clients.consumer.ConsumerRecord<java.lang.String, com.shop.orders.Order>)' threw exception"


def spring_failure(i):
    """A listener's failure: (cause, root class, root message, trace), the trace as
    printStackTrace writes a ListenerExecutionFailedException and its causes."""
    cause = rng.choice(["validation", "duplicate", "timeout", "npe", "key"])
    frames = "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeRecordListener(KafkaMessageListenerContainer.java:2876)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)\n"
    if cause == "validation":
        root, msg = "com.shop.orders.InvalidOrderException", f"Order ord-{rng.randrange(10**6)} has no items"
        inner = f"Caused by: {root}: {msg}\n\tat com.shop.orders.OrderValidator.validate(OrderValidator.java:42)\n\tat com.shop.orders.OrderListener.onOrder(OrderListener.java:31)\n\t... 9 more\n"
    elif cause == "duplicate":
        root, msg = "java.sql.SQLIntegrityConstraintViolationException", f"Duplicate entry 'ord-{rng.randrange(10**6)}' for key 'orders.PRIMARY'"
        inner = ("Caused by: org.springframework.dao.DataIntegrityViolationException: could not execute statement; SQL [n/a]; constraint [orders.PRIMARY]\n"
                 "\tat com.shop.orders.OrderRepository.save(OrderRepository.java:58)\n\t... 12 more\n"
                 f"Caused by: {root}: {msg}\n\tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:118)\n\tat com.shop.orders.OrderRepository.save(OrderRepository.java:58)\n\t... 20 more\n")
    elif cause == "timeout":
        root, msg = "java.net.SocketTimeoutException", "Read timed out"
        inner = (f"Caused by: org.springframework.web.client.ResourceAccessException: I/O error on POST request for \"http://payments:8080/charge/{rng.randrange(10**6)}\": Read timed out\n"
                 "\tat com.shop.orders.PaymentClient.charge(PaymentClient.java:77)\n\t... 10 more\n"
                 f"Caused by: {root}: {msg}\n\tat java.base/java.net.SocketInputStream.read(SocketInputStream.java:183)\n\tat com.shop.orders.PaymentClient.charge(PaymentClient.java:77)\n\t... 30 more\n")
    elif cause == "npe":
        root, msg = "java.lang.NullPointerException", 'Cannot invoke "com.shop.orders.Customer.getId()" because "customer" is null'
        inner = f"Caused by: {root}: {msg}\n\tat com.shop.orders.OrderService.assign(OrderService.java:77)\n\tat com.shop.orders.OrderListener.onOrder(OrderListener.java:33)\n\t... 9 more\n"
    else:
        root, msg = "com.fasterxml.jackson.core.JsonParseException", f"Unexpected character ('{rng.choice('xyq')}' (code {rng.randrange(60, 120)})): was expecting double-quote to start field name"
        inner = f"Caused by: {root}: {msg}\n\tat com.fasterxml.jackson.core.JsonParser._constructError(JsonParser.java:2477)\n\t... 15 more\n"
    return cause, root, msg, f"{JAVA_WRAPPER}: {LISTENER}\n{frames}{inner}"


def spring_kafka():
    """kcat -J of orders-dlt: the recoverer's binary and text headers, the application's own."""
    lines = []
    for i in range(n):
        cause, root, msg, trace = spring_failure(i)
        topic = rng.choice(["orders", "payments"])
        partition, offset = rng.randrange(6), 10**5 + 37 * i + rng.randrange(30)
        ts = int(when(i).timestamp() * 1000)
        original_ts = ts - rng.randrange(1000, 60000)
        key = None if i % 9 == 8 else f"ord-{i}".encode()
        value = json.dumps({"orderId": f"ord-{i}", "total": rng.randrange(1, 999)}).encode()
        app = [("traceparent", f"00-{hexid(32)}-{hexid(16)}-01".encode()), ("__TypeId__", b"com.shop.orders.Order")]
        if i % 6 == 0:
            app = app[1:]
        retryable = i % 4 == 3 and cause != "key"
        pre = "kafka_original-" if retryable else "kafka_dlt-original-"
        exc = "kafka_exception-" if retryable else ("kafka_dlt-key-exception-" if cause == "key" else "kafka_dlt-exception-")
        wrapper = "org.springframework.kafka.support.serializer.DeserializationException" if cause == "key" else JAVA_WRAPPER
        message = f"failed to deserialize; nested exception is {root}: {msg}" if cause == "key" else f"{LISTENER}; {msg}"
        recoverer = [
            (pre + "topic", topic.encode()), (pre + "partition", partition.to_bytes(4, "big")), (pre + "offset", offset.to_bytes(8, "big")),
            (pre + "timestamp", original_ts.to_bytes(8, "big")), (pre + "timestamp-type", b"CreateTime"), (pre + "consumer-group", b"orders-service"),
            (exc + "fqcn", wrapper.encode()), (exc + "message", message.encode()), (exc + "stacktrace", trace.encode()),
        ]
        # The root cause's class: from 3.0.7, in every dead letter of this archive's later half.
        if i >= n // 3:
            recoverer.insert(7, (exc + "cause-fqcn", root.encode()))
        elif cause != "key":
            # Before it, only the wrapper's class: the stack trace tells the causes apart.
            pass
        headers = app + recoverer
        rid = f"{topic}/{partition}/{offset}"
        truth["ids"][rid] = f"{topic}/{cause}"
        truth["records"][rid] = {"topic": topic, "key": None if key is None else b64(key), "value": b64(value),
                                 "headers": [[k, b64(v)] for k, v in app], "partition": partition, "offset": offset}
        parts = [b'"topic":"orders-dlt"', b'"partition":0', b'"offset":%d' % i, b'"tstype":"create"', b'"ts":%d' % ts, b'"broker":1']
        flat = []
        for k, v in headers:
            flat += [yajl_string(k.encode()), yajl_string(v)]
        parts.append(b'"headers":[' + b",".join(flat) + b"]")
        parts.append(b'"key":' + (b"null" if key is None else yajl_string(key)))
        parts.append(b'"payload":' + yajl_string(value))
        lines.append(b"{" + b",".join(parts) + b"}")
    with open(os.path.join(out, "orders-dlt.kcat.jsonl"), "wb") as f:
        f.write(b"\n".join(lines) + b"\n")


def amqp_message(exchange, routing_key, payload, headers, props, encoding="string"):
    """One message as RabbitMQ's management API answers POST /api/queues/{vhost}/{q}/get."""
    body = b64(payload) if encoding == "base64" else payload.decode()
    return {"payload_bytes": len(payload), "redelivered": False, "exchange": exchange, "routing_key": routing_key, "message_count": 0,
            "properties": dict(props, headers=headers), "payload": body, "payload_encoding": encoding}


def write_gets(name, messages):
    """The answers as rabbitmqadmin -f raw_json get saves them: arrays of up to 100, compact or
    indented (every other file)."""
    for k in range(0, len(messages), 100):
        with open(os.path.join(out, f"{name}-{k // 100:04d}.json"), "w") as f:
            json.dump(messages[k:k + 100], f, indent=2 if k % 200 == 0 else None)


def rabbitmq():
    """Dead letters of a dead-letter exchange: x-death (most recent first) and x-first-death-*;
    Spring AMQP's RepublishMessageRecoverer adds x-exception-* and x-original-*."""
    messages = []
    for i in range(n):
        t = int(when(i).timestamp())
        queue, exchange, rk = rng.choice([("orders", "shop", "orders.created"), ("billing", "shop", "billing.charge")])
        reason = rng.choice(["rejected", "expired", "maxlen", "delivery_limit", "spring"])
        count = rng.randrange(1, 6)
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        payload = json.dumps({"id": i, "queue": queue}).encode()
        encoding = "string"
        if i % 10 == 7:
            payload, encoding = bytes([0x82, 0xa2, 0x69, 0x64, 0xcd]) + i.to_bytes(2, "big"), "base64"  # msgpack
        props = {"delivery_mode": 2, "content_type": "application/json", "message_id": mid, "timestamp": t - 30, "priority": 0}
        headers = {"tenant": rng.choice(["eu", "us"]), "attempt-source": "web"}
        if i % 4 == 2:
            # An application's table of typed values: a double stays a double, a long a long.
            headers["x-app-flags"] = {"weight": 0.5, "ratio": 2.0, "n": 1 << 40, "tags": ["a", "b"], "on": True}
        if reason == "spring":
            # Spring AMQP republished the failed message to the DLQ itself: no x-death.
            exc = rng.choice([("java.lang.IllegalArgumentException", f"Order {i} has no customer"), ("org.springframework.dao.QueryTimeoutException", "Query timed out")])
            headers.update({"x-exception-message": exc[1], "x-exception-stacktrace": f"{exc[0]}: {exc[1]}\n\tat com.shop.billing.Handler.handle(Handler.java:{rng.randrange(10, 90)})\n",
                            "x-original-exchange": exchange, "x-original-routingKey": rk})
            label = queue + ":spring:" + exc[0]
            deaths = None
        else:
            deaths = [{"count": count, "reason": reason, "queue": queue, "time": t, "exchange": exchange, "routing-keys": [rk]}]
            if i % 3 == 0:
                # Dead-lettered before from a retry queue (most recent first: the first death last).
                deaths.append({"count": 1, "reason": "expired", "queue": queue + ".retry", "time": t - 60, "exchange": "retry", "routing-keys": [rk], "original-expiration": "5000"})
                first = deaths[-1]
            elif i % 3 == 1 and reason == "rejected":
                # Rejected, parked in a retry queue under the DLX's routing key, expired back and
                # rejected again: the first death's table, updated last, moved to the front
                # (mc_amqpl.erl sorts by last death; `time` stays each table's first).
                deaths = [dict(deaths[0], count=2, time=t - 120),
                          {"count": 1, "reason": "expired", "queue": queue + ".retry", "time": t - 60, "exchange": "retry", "routing-keys": [queue + ".retry"], "original-expiration": "5000"}]
                first = deaths[0]
            else:
                first = deaths[0]
            headers.update({"x-death": deaths, "x-first-death-exchange": first["exchange"], "x-first-death-queue": first["queue"], "x-first-death-reason": first["reason"]})
            label = first["queue"] + ":" + first["reason"]
        truth["ids"][mid] = label
        first_exchange = headers.get("x-first-death-exchange", headers.get("x-original-exchange"))
        first_rk = next(d for d in deaths if (d["queue"], d["reason"]) == (first["queue"], first["reason"]))["routing-keys"][0] if deaths else headers["x-original-routingKey"]
        kept = {k: v for k, v in headers.items() if not k.startswith(("x-death", "x-first-death-", "x-last-death-", "x-exception-", "x-original-"))}
        truth["records"][mid] = {"topic": first_exchange, "key": b64(first_rk.encode()), "value": b64(payload), "properties": dict(props, headers=kept)}
        messages.append(amqp_message(queue + ".dlx", queue, payload, headers, props, encoding))
    write_gets("orders-dlq", messages)


def sidekiq():
    """The dead set as `redis-cli --raw ZRANGE dead 0 -1` prints it: a job a line; Sidekiq 7's
    float epoch seconds in the first half, Sidekiq 8's integer milliseconds in the second."""
    import zlib
    with open(os.path.join(out, "dead.jsonl"), "w") as f:
        for i in range(n):
            t = when(i).timestamp()
            sidekiq8 = i >= n // 2
            stamp = (lambda x: int(x * 1000)) if sidekiq8 else (lambda x: round(x, 6))
            cause = rng.choice(["declined", "timeout", "notfound", "nomethod"])
            klass = {"declined": "ChargeJob", "timeout": "ChargeJob", "notfound": "ShipmentJob", "nomethod": "ShipmentJob"}[cause]
            error_class, message, frames = {
                "declined": ("Stripe::CardError", "Your card was declined.", ["/app/app/services/billing/charge.rb:41:in `call'", "/app/app/jobs/charge_job.rb:9:in `perform'"]),
                "timeout": ("Net::ReadTimeout", "Net::ReadTimeout with #<TCPSocket:(closed)>", ["/usr/local/lib/ruby/3.3.0/net/protocol.rb:229:in `rbuf_fill'", "/app/app/clients/payments_client.rb:18:in `post'", "/app/app/jobs/charge_job.rb:9:in `perform'"]),
                "notfound": ("ActiveRecord::RecordNotFound", f"Couldn't find Order with 'id'={rng.randrange(10**6)}", ["/usr/local/bundle/gems/activerecord-7.1.3/lib/active_record/core.rb:253:in `find'", "/app/app/jobs/shipment_job.rb:6:in `perform'"]),
                "nomethod": ("NoMethodError", f"undefined method `address' for nil", ["/app/app/models/shipment.rb:22:in `label'", "/app/app/jobs/shipment_job.rb:11:in `perform'"]),
            }[cause]
            frames = frames + ["/usr/local/bundle/gems/sidekiq-7.2.4/lib/sidekiq/processor.rb:202:in `execute_job'"]
            if sidekiq8:
                # Ruby 3.4 quotes a label with ' and names its class.
                frames = [fr.replace("`", "'").replace("in 'perform'", f"in '{klass}#perform'") for fr in frames]
            jid = hexid(24)
            job = {"retry": True, "queue": rng.choice(["default", "critical"]), "class": klass, "args": [i, "eu"], "jid": jid,
                   "created_at": stamp(t - 3600), "enqueued_at": stamp(t - 60), "error_message": message, "error_class": error_class,
                   "failed_at": stamp(t), "retry_count": 25, "retried_at": stamp(t - 10),
                   "error_backtrace": b64(zlib.compress(json.dumps(frames).encode()))}
            truth["ids"][jid] = cause
            truth["records"][jid] = {"queue": job["queue"], "job": job}
            f.write(json.dumps(job) + "\n")


def eventbridge():
    """A rule target's SQS dead-letter queue, as receive-message prints it."""
    messages = []
    for i in range(n):
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        t = when(i)
        code, text, condition = rng.choice([
            ("SDK_CLIENT_ERROR", "Unable to invoke Lambda function arn:aws:lambda:us-east-1:123456789012:function:orders-{}.", "MaximumRetryAttempts"),
            ("THROTTLING", "Throttling exception from the target.", "MaximumEventAgeInSeconds"),
            ("NO_PERMISSIONS", "Lambda function arn:aws:lambda:us-east-1:123456789012:function:orders-{} does not have a resource-based policy.", "MaximumRetryAttempts"),
        ])
        target = rng.choice(["arn:aws:lambda:us-east-1:123456789012:function:orders-sync", "arn:aws:sqs:us-east-1:123456789012:fulfilment"])
        event = {"version": "0", "id": str(uuid.uuid4()), "detail-type": "OrderPlaced", "source": "shop.orders", "account": "123456789012",
                 "time": f"{t:%Y-%m-%dT%H:%M:%S}Z", "region": "us-east-1", "resources": [], "detail": {"orderId": f"ord-{i}"}}
        attrs = {"RULE_ARN": {"StringValue": "arn:aws:events:us-east-1:123456789012:rule/orders-placed", "DataType": "String"},
                 "TARGET_ARN": {"StringValue": target, "DataType": "String"},
                 "ERROR_CODE": {"StringValue": code, "DataType": "String"},
                 "ERROR_MESSAGE": {"StringValue": text.format(rng.randrange(100)), "DataType": "String"},
                 "EXHAUSTED_RETRY_CONDITION": {"StringValue": condition, "DataType": "String"},
                 "RETRY_ATTEMPTS": {"StringValue": str(rng.randrange(0, 185)), "DataType": "String"}}
        ms = int(t.timestamp() * 1000)
        messages.append({"MessageId": mid, "ReceiptHandle": b64(os.urandom(24)), "MD5OfBody": hexid(32), "Body": json.dumps(event),
                         "Attributes": {"SenderId": "AIDAIAZKMSNQ7TEXAMPLE", "ApproximateFirstReceiveTimestamp": str(ms + 3), "ApproximateReceiveCount": "1", "SentTimestamp": str(ms)},
                         "MD5OfMessageAttributes": hexid(32), "MessageAttributes": attrs})
        truth["ids"][mid] = f"{target}/{code}"
        truth["records"][mid] = {"value": b64(json.dumps(event).encode())}
    for k in range(0, n, 10):
        with open(os.path.join(out, f"receive-{k // 10:05d}.json"), "w") as f:
            json.dump({"Messages": messages[k:k + 10]}, f, indent=4 if k % 20 == 0 else None)


def eventgrid():
    """Dead-letter blobs as Event Grid stores them: <container>/<SUBSCRIPTION>/YYYY/M/D/H/<guid>.json
    (no zero padding), each a JSON array; Event Grid schema, and CloudEvents' lower-case names."""
    by_blob = {}
    for i in range(n):
        t = when(i)
        sub = rng.choice(["ORDERS-WEBHOOK", "BILLING-FUNCTION"])
        reason, outcome, status = rng.choice([("MaxDeliveryAttemptsExceeded", "GenericError", 500), ("MaxDeliveryAttemptsExceeded", "Unauthorized", 401),
                                               ("TimeToLiveExceeded", "TimedOut", 0)])
        eid = str(uuid.UUID(int=rng.getrandbits(128)))
        publish = f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}{rng.randrange(10)}Z"
        last = f"{t + dt.timedelta(minutes=rng.randrange(1, 600)):%Y-%m-%dT%H:%M:%S}.{rng.randrange(10**7):07d}Z"
        if i % 2:
            event = {"id": eid, "eventTime": f"{t:%Y-%m-%dT%H:%M:%S}Z", "eventType": "Shop.OrderPlaced", "dataVersion": "1", "metadataVersion": "1",
                     "topic": "/subscriptions/0000/resourceGroups/shop/providers/Microsoft.EventGrid/topics/orders", "subject": f"orders/{i}",
                     "data": {"orderId": f"ord-{i}"}, "deadLetterReason": reason, "deliveryAttempts": 30, "lastDeliveryOutcome": outcome,
                     "publishTime": publish, "lastDeliveryAttemptTime": last}
            if status:
                event["lastHttpStatusCode"] = status
        else:
            event = {"id": eid, "source": "/shop/orders", "type": "Shop.OrderPlaced", "specversion": "1.0", "time": f"{t:%Y-%m-%dT%H:%M:%S}Z",
                     "data": {"orderId": f"ord-{i}"}, "deadletterreason": reason, "deliveryattempts": 30, "lastdeliveryoutcome": outcome,
                     "publishtime": publish, "lastdeliveryattempttime": last}
            if status:
                event["lasthttpstatuscode"] = status
            if i % 4 == 2:
                # Binary data: CloudEvents carries it as data_base64, with no `data`.
                del event["data"]
                event["data_base64"] = base64.b64encode(bytes([0x82, 0xa2, 0x69, 0x64, i % 256])).decode()
        truth["ids"][eid] = f"{sub}/{reason}/{outcome}"
        # Replayed as published: without what dead-lettering added (delivery-and-retry.md).
        added = {"deadLetterReason", "deliveryAttempts", "lastDeliveryOutcome", "lastHttpStatusCode", "publishTime", "lastDeliveryAttemptTime"}
        published = {k: v for k, v in event.items() if k not in added and k not in {a.lower() for a in added}}
        truth["records"][eid] = {"value": b64(json.dumps(published, separators=(",", ":")).encode())}
        hour = t.replace(minute=0, second=0, microsecond=0)
        folder = os.path.join(out, "deadletters", sub, str(t.year), str(t.month), str(t.day), str(t.hour))
        by_blob.setdefault((folder, hour, i // 7), []).append(event)
    for (folder, _, k), events in by_blob.items():
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{uuid.UUID(int=rng.getrandbits(128))}.json"), "w") as f:
            json.dump(events, f)


def dotnet_trace(outer, message, inner=None, frames=()):
    """Exception.ToString(): `Type: message ---> Inner: message`, frames, end markers."""
    head = f"{outer}: {message}"
    if inner:
        head += f"\n ---> {inner[0]}: {inner[1]}"
    lines = [head] + [f"   at {fr}" for fr in frames]
    if inner:
        lines.append("   --- End of inner exception stack trace ---")
        lines.append("   at NServiceBus.Pipeline.Behavior.Invoke(IIncomingLogicalMessageContext context)")
    return "\r\n".join(lines)


def nservicebus():
    """An NServiceBus endpoint's `error` queue on the RabbitMQ transport, through the management API."""
    messages = []
    for i in range(n):
        t = when(i)
        queue = rng.choice(["Sales", "Billing"])
        cause = rng.choice(["sql", "validation", "http"])
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        if cause == "sql":
            outer, msg, inner = "System.Data.SqlClient.SqlException", f"Transaction (Process ID {rng.randrange(50, 99)}) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction.", None
            frames = [f"{queue}.OrderSaga.Handle(PlaceOrder message, IMessageHandlerContext context) in C:\\src\\{queue}\\OrderSaga.cs:line {rng.randrange(20, 80)}"]
        elif cause == "validation":
            outer, msg, inner = "System.InvalidOperationException", f"Order {i} has no lines", None
            frames = [f"{queue}.PlaceOrderHandler.Handle(PlaceOrder message, IMessageHandlerContext context) in C:\\src\\{queue}\\PlaceOrderHandler.cs:line 31"]
        else:
            outer, msg = "System.Net.Http.HttpRequestException", "Response status code does not indicate success: 503 (Service Unavailable)."
            inner = None
            frames = ["System.Net.Http.HttpResponseMessage.EnsureSuccessStatusCode()", f"{queue}.Gateway.Charge(Decimal amount) in C:\\src\\{queue}\\Gateway.cs:line 12"]
        stamp = f"{t:%Y-%m-%d %H:%M:%S}:{t.microsecond:06d} Z"
        headers = {"NServiceBus.MessageId": mid, "NServiceBus.MessageIntent": "Send", "NServiceBus.ConversationId": str(uuid.uuid4()),
                   "NServiceBus.EnclosedMessageTypes": f"{queue}.Messages.PlaceOrder, {queue}.Messages, Version=1.0.0.0",
                   "NServiceBus.ContentType": "application/json", "NServiceBus.TimeSent": stamp,
                   "NServiceBus.FailedQ": queue, "NServiceBus.ProcessingEndpoint": queue, "NServiceBus.TimeOfFailure": stamp,
                   "NServiceBus.ExceptionInfo.ExceptionType": outer, "NServiceBus.ExceptionInfo.HelpLink": None,
                   "NServiceBus.ExceptionInfo.Message": msg, "NServiceBus.ExceptionInfo.Source": queue,
                   "NServiceBus.ExceptionInfo.StackTrace": dotnet_trace(outer, msg, inner, frames)}
        payload = json.dumps({"OrderId": i, "Lines": []}).encode()
        props = {"delivery_mode": 2, "message_id": mid, "type": f"{queue}.Messages.PlaceOrder"}
        truth["ids"][mid] = f"{queue}/{cause}"
        kept = {k: v for k, v in headers.items() if not k.startswith(("NServiceBus.ExceptionInfo.", "NServiceBus.FailedQ", "NServiceBus.TimeOfFailure", "NServiceBus.ProcessingEndpoint"))}
        truth["records"][mid] = {"key": b64(queue.encode()), "value": b64(payload), "properties": dict(props, headers=kept)}
        messages.append(amqp_message("", "error", payload, headers, props))
    write_gets("error", messages)


def masstransit():
    """A MassTransit receive endpoint's `<queue>_error` queue, through the management API: the
    fault headers, and the body as MassTransit's JSON envelope."""
    messages = []
    for i in range(n):
        t = when(i)
        queue = rng.choice(["orders", "payments"])
        cause = rng.choice(["timeout", "argument", "dbupdate"])
        exc, msg = {"timeout": ("System.TimeoutException", f"The operation has timed out after {rng.randrange(5, 60)}s."),
                    "argument": ("System.ArgumentException", f"Customer {rng.randrange(10**5)} is unknown (Parameter 'customerId')"),
                    "dbupdate": ("Microsoft.EntityFrameworkCore.DbUpdateException", "An error occurred while saving the entity changes. See the inner exception for details.")}[cause]
        trace = dotnet_trace(exc, msg, None, [f"Shop.{queue.title()}.SubmitOrderConsumer.Consume(ConsumeContext`1 context) in /src/{queue}/SubmitOrderConsumer.cs:line {rng.randrange(20, 60)}"])
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        stamp = f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}{rng.randrange(10)}Z"
        envelope = {"messageId": mid, "conversationId": str(uuid.uuid4()), "sourceAddress": "rabbitmq://broker/shop/web", "destinationAddress": f"rabbitmq://broker/shop/{queue}",
                    "messageType": [f"urn:message:Shop.Contracts:SubmitOrder"], "message": {"orderId": i}, "sentTime": f"{t:%Y-%m-%dT%H:%M:%S}.0000000Z", "headers": {}, "host": {"machineName": "web-1"}}
        headers = {"MT-Reason": "fault", "MT-Fault-ExceptionType": exc, "MT-Fault-Message": msg, "MT-Fault-StackTrace": trace, "MT-Fault-Timestamp": stamp,
                   "MT-Fault-InputAddress": f"rabbitmq://broker/shop/{queue}", "MT-Fault-ConsumerType": f"Shop.{queue.title()}.SubmitOrderConsumer",
                   "MT-Fault-MessageType": "Shop.Contracts.SubmitOrder", "MT-Host-MachineName": "worker-2", "Content-Type": "application/vnd.masstransit+json"}
        if i % 3:
            headers["MT-Fault-RetryCount"] = rng.randrange(1, 5)
        payload = json.dumps(envelope).encode()
        props = {"delivery_mode": 2, "message_id": mid, "content_type": "application/vnd.masstransit+json"}
        truth["ids"][mid] = f"{queue}/{cause}"
        kept = {k: v for k, v in headers.items() if not k.startswith(("MT-Fault-", "MT-Reason", "MT-Host-"))}
        truth["records"][mid] = {"topic": queue, "value": b64(payload), "properties": dict(props, headers=kept)}
        messages.append(amqp_message(queue + "_error", "", payload, headers, props))
    write_gets(f"error-queues", messages)


{"kcat": kcat, "s3-json": s3_json, "s3-parquet": s3_parquet, "lambda": lambda_records, "sqs": sqs, "pubsub": pubsub, "servicebus": servicebus,
 "spring-kafka": spring_kafka, "rabbitmq": rabbitmq, "sidekiq": sidekiq, "eventbridge": eventbridge, "eventgrid": eventgrid,
 "nservicebus": nservicebus, "masstransit": masstransit}[layout]()
with open(out.rstrip("/") + ".truth.json", "w") as f:
    json.dump(truth, f)
