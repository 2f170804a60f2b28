"""A real Kafka-protocol broker for the tests: librdkafka's mock cluster, started inside this
process by confluent-kafka, with records read back by confluent-kafka's consumer.

usage: kafka.py serve TOPIC...            start 3 brokers, create TOPICs (4 partitions each by a
                                         marker record), print "BOOTSTRAP host:port,…", and
                                         run until stdin closes
       kafka.py serve-faulty TOPIC...     the same cluster made through librdkafka's mock API
                                         (TOPICs created with 4 partitions, no marker), which
                                         then takes commands on stdin, one a line, each
                                         answered by one line:
                                           outage          every Produce request from now on
                                                           fails with NOT_ENOUGH_REPLICAS
                                           outage-after N  the same, once N records are on
                                                           the TOPICs
                                           fail N          the next N Produce requests fail
                                           recover         Produce requests succeed again
                                           failed          Produce requests since the outage
                                                           began
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


def serve_faulty(topics):
    """A mock cluster made and steered through librdkafka's C API (rdkafka_mock.h), which the
    wheel's librdkafka exports: errors pushed for an API key answer that many requests."""
    import ctypes
    import glob
    import os
    import threading
    import time

    import confluent_kafka

    libs = os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs")
    lib = ctypes.CDLL(glob.glob(os.path.join(libs, "librdkafka*.so*"))[0])
    p = ctypes.c_void_p
    lib.rd_kafka_conf_new.restype = p
    lib.rd_kafka_conf_set.argtypes = [p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_new.restype = p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_handle_mock_cluster.restype = p
    lib.rd_kafka_handle_mock_cluster.argtypes = [p]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [p]
    lib.rd_kafka_mock_topic_create.argtypes = [p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [p, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
    lib.rd_kafka_mock_clear_request_errors.argtypes = [p, ctypes.c_int16]
    lib.rd_kafka_mock_start_request_tracking.argtypes = [p]
    lib.rd_kafka_mock_clear_requests.argtypes = [p]
    lib.rd_kafka_mock_get_requests.restype = ctypes.POINTER(p)
    lib.rd_kafka_mock_get_requests.argtypes = [p, ctypes.POINTER(ctypes.c_size_t)]
    lib.rd_kafka_mock_request_api_key.restype = ctypes.c_int16
    lib.rd_kafka_mock_request_api_key.argtypes = [p]
    lib.rd_kafka_mock_request_destroy_array.argtypes = [ctypes.POINTER(p), ctypes.c_size_t]
    PRODUCE, NOT_ENOUGH_REPLICAS, ERRORS = 0, 19, 1_000_000

    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for name, value in [(b"test.mock.num.brokers", b"3"), (b"log_level", b"0")]:
        if lib.rd_kafka_conf_set(conf, name, value, errstr, 512) != 0:
            sys.exit(errstr.value.decode())
    rk = lib.rd_kafka_new(0, conf, errstr, 512)  # RD_KAFKA_PRODUCER
    if not rk:
        sys.exit(errstr.value.decode())
    cluster = lib.rd_kafka_handle_mock_cluster(rk)
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()
    for topic in topics:
        if lib.rd_kafka_mock_topic_create(cluster, topic.encode(), 4, 3) != 0:
            sys.exit(f"cannot create {topic}")
    lock = threading.Lock()
    errors = (ctypes.c_int * ERRORS)(*([NOT_ENOUGH_REPLICAS] * ERRORS))

    def outage():
        # Tracking starts first: a request between the two counts as failed (never the reverse).
        with lock:
            lib.rd_kafka_mock_clear_requests(cluster)
            lib.rd_kafka_mock_start_request_tracking(cluster)
            lib.rd_kafka_mock_push_request_errors_array(cluster, PRODUCE, ERRORS, errors)

    def outage_after(n):
        watch = Consumer({"bootstrap.servers": bootstrap, "group.id": "dlqf-test-watch"})
        partitions = [TopicPartition(topic, p) for topic in topics for p in range(4)]
        while sum(high - low for low, high in (watch.get_watermark_offsets(tp, timeout=10) for tp in partitions)) < n:
            time.sleep(0.002)
        outage()
        watch.close()

    print("BOOTSTRAP " + bootstrap, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words == ["outage"]:
            outage()
        elif words[:1] == ["fail"]:
            with lock:
                lib.rd_kafka_mock_push_request_errors_array(cluster, PRODUCE, int(words[1]), errors)
        elif words[:1] == ["outage-after"]:
            threading.Thread(target=outage_after, args=(int(words[1]),), daemon=True).start()
        elif words == ["recover"]:
            with lock:
                lib.rd_kafka_mock_clear_request_errors(cluster, PRODUCE)
        elif words == ["failed"]:
            with lock:
                count = ctypes.c_size_t(0)
                requests = lib.rd_kafka_mock_get_requests(cluster, ctypes.byref(count))
                produce = sum(1 for i in range(count.value) if lib.rd_kafka_mock_request_api_key(requests[i]) == PRODUCE)
                lib.rd_kafka_mock_request_destroy_array(requests, count.value)
            print(produce, flush=True)
            continue
        print("OK", flush=True)


cmd = sys.argv[1]
if cmd == "serve":
    producer = Producer({"test.mock.num.brokers": 3, "log_level": 0})
    for topic in sys.argv[2:]:
        producer.produce(topic, b"marker", headers={"marker": b"1"})
    producer.flush(10)
    brokers = producer.list_topics(timeout=10).brokers.values()
    print("BOOTSTRAP " + ",".join(f"{b.host}:{b.port}" for b in brokers), flush=True)
    sys.stdin.read()
elif cmd == "serve-faulty":
    serve_faulty(sys.argv[2:])
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
