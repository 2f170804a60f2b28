"""A real Kafka-protocol broker for the tests: librdkafka's mock cluster, started inside this
process by confluent-kafka, with records read back by confluent-kafka's consumer.

usage: kafka.py serve TOPIC...            start 3 brokers, create TOPICs (4 partitions each by a
                                         marker record), print "BOOTSTRAP host:port,…", and
                                         run until stdin closes
       kafka.py read BOOTSTRAP TOPIC     print every record but the markers as JSON lines
       kafka.py read-raw BOOTSTRAP TOPIC the same, bytes as base64 (null for a null key or
                                         value) and headers as [name, base64|null] in order
       kafka.py partitions BOOTSTRAP KEY...
                                         the partition librdkafka's murmur2_random (Java's
                                         default) picks for each key, out of 4
"""
import json
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

cmd = sys.argv[1]
if cmd == "serve":
    producer = Producer({"test.mock.num.brokers": 3, "log_level": 0})
    for topic in sys.argv[2:]:
        producer.produce(topic, b"marker", headers={"marker": b"1"})
    producer.flush(10)
    brokers = producer.list_topics(timeout=10).brokers.values()
    print("BOOTSTRAP " + ",".join(f"{b.host}:{b.port}" for b in brokers), flush=True)
    sys.stdin.read()
elif cmd in ("read", "read-raw"):
    import base64
    raw = cmd == "read-raw"
    b64 = lambda b: None if b is None else base64.b64encode(b).decode()
    bootstrap, topic = sys.argv[2], sys.argv[3]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dlqf-test-reader", "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {}
    for p in partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        if high > low:
            ends[p] = high
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    while ends:
        msg = consumer.poll(10)
        if msg is None:
            sys.exit(f"timed out with partitions {sorted(ends)} unread")
        if msg.error():
            sys.exit(str(msg.error()))
        if msg.offset() + 1 >= ends.get(msg.partition(), 0):
            ends.pop(msg.partition(), None)
        headers = dict(msg.headers() or [])
        if "marker" in headers:
            continue
        if raw:
            print(json.dumps({"partition": msg.partition(), "key": b64(msg.key()), "value": b64(msg.value()),
                              "headers": [[k, b64(v)] for k, v in (msg.headers() or [])]}), flush=True)
            continue
        print(json.dumps({
            "partition": msg.partition(),
            "key": None if msg.key() is None else msg.key().decode(),
            "value": msg.value().decode(),
            "headers": {k: v.decode() for k, v in headers.items()},
        }), flush=True)
elif cmd == "partitions":
    bootstrap, keys = sys.argv[2], sys.argv[3:]
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    chosen = {}
    for key in keys:
        producer.produce("partition-check", b"x", key=key.encode(), on_delivery=lambda err, m, key=key: chosen.__setitem__(key, m.partition()))
    producer.flush(10)
    print(json.dumps(chosen))
else:
    sys.exit(f"unknown command {cmd}")
