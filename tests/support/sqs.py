"""SQS fixtures on the loopback moto server (endpoint and credentials from AWS_* variables).

usage: sqs.py create NAME        create a queue (FIFO when NAME ends in .fifo)
       sqs.py receive NAME       print every message as a JSON line: body, attributes,
                                 message attributes (received, then deleted)
"""
import json
import os
import sys

import boto3

sqs = boto3.client("sqs", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ.get("AWS_REGION", "us-east-1"))
cmd, name = sys.argv[1], sys.argv[2]
if cmd == "create":
    attributes = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
    print(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
elif cmd == "receive":
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"], WaitTimeSeconds=0)
        messages = got.get("Messages", [])
        if not messages:
            break
        for m in messages:
            print(json.dumps({
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "key": m.get("MessageAttributes", {}).get("dlqf-idempotency-key", {}).get("StringValue"),
            }))
        deleted = sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
        if deleted.get("Failed"):
            sys.exit(f"cannot delete: {deleted['Failed']}")
else:
    sys.exit(f"unknown command {cmd}")
