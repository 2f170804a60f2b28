"""RabbitMQ fixtures for the replay tests, through pika (an independent AMQP client).

usage: amqp.py setup URL EXCHANGE:TYPE:ROUTING_KEY:QUEUE ...   declare durable exchanges and
                                                               queues (emptied) and bind them
                                                               (an empty EXCHANGE: a queue
                                                               alone, for the default exchange)
       amqp.py refuse URL EXCHANGE QUEUE [N]   QUEUE made anew, bound to the fanout EXCHANGE,
                                       full after N messages (x-max-length N, default 0,
                                       reject-publish): the broker then refuses every message
                                       (nacks it, still routing it to the exchange's other
                                       queues), as in an outage
       amqp.py accept URL EXCHANGE QUEUE   QUEUE made anew without a limit
       amqp.py read URL QUEUE          print every message as a JSON line (and take it off):
                                       exchange, routing_key, body (base64), properties (the
                                       headers with their types as JSON gives them)
"""
import base64
import json
import struct
import sys

import pika
import pika.data

# pika reads a table's float ('f') and double ('d') as whole numbers (int(0.5) == 0): read
# them as the floats they are, so that a test sees what was sent.
_decode_value = pika.data.decode_value


def _decode_floats(encoded, offset):
    kind = encoded[offset:offset + 1]
    if kind == b"d":
        return struct.unpack_from(">d", encoded, offset + 1)[0], offset + 9
    if kind == b"f":
        return struct.unpack_from(">f", encoded, offset + 1)[0], offset + 5
    return _decode_value(encoded, offset)


pika.data.decode_value = _decode_floats

cmd, url = sys.argv[1], sys.argv[2]


def plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
if cmd == "setup":
    for spec in sys.argv[3:]:
        exchange, kind, routing_key, queue = spec.split(":")
        channel.queue_declare(queue=queue, durable=True)
        channel.queue_purge(queue=queue)
        if exchange:
            channel.exchange_declare(exchange=exchange, exchange_type=kind, durable=True)
            channel.queue_bind(queue=queue, exchange=exchange, routing_key=routing_key)
elif cmd in ("refuse", "accept"):
    exchange, queue = sys.argv[3], sys.argv[4]
    channel.queue_delete(queue=queue)
    after = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    limit = {"x-max-length": after, "x-overflow": "reject-publish"} if cmd == "refuse" else None
    channel.queue_declare(queue=queue, durable=True, arguments=limit)
    channel.exchange_declare(exchange=exchange, exchange_type="fanout", durable=True)
    channel.queue_bind(queue=queue, exchange=exchange)
elif cmd == "read":
    while True:
        method, props, body = channel.basic_get(queue=sys.argv[3], auto_ack=True)
        if method is None:
            break
        properties = {k: v for k, v in {
            "content_type": props.content_type, "content_encoding": props.content_encoding, "delivery_mode": props.delivery_mode,
            "priority": props.priority, "correlation_id": props.correlation_id, "reply_to": props.reply_to, "expiration": props.expiration,
            "message_id": props.message_id, "timestamp": props.timestamp, "type": props.type, "app_id": props.app_id,
            "headers": plain(props.headers) if props.headers is not None else None,
        }.items() if v is not None}
        print(json.dumps({"exchange": method.exchange, "routing_key": method.routing_key, "body": base64.b64encode(body).decode(), "properties": properties}), flush=True)
else:
    sys.exit(f"unknown command {cmd}")
connection.close()
