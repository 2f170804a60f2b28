"""Test fixtures in the loopback S3 server (endpoint and credentials from AWS_* variables).

usage: s3.py mkbucket BUCKET | s3.py put BUCKET KEY FILE | s3.py get BUCKET KEY
       s3.py putdir BUCKET PREFIX DIR      (every file under DIR as PREFIX/its path)
       s3.py split BUCKET PREFIX FILE N    (FILE's lines as N objects PREFIX/part-00000.jsonl, …)
"""
import os
import sys

import boto3

s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ.get("AWS_REGION", "us-east-1"))
cmd = sys.argv[1]
if cmd == "mkbucket":
    s3.create_bucket(Bucket=sys.argv[2])
elif cmd == "put":
    with open(sys.argv[4], "rb") as f:
        s3.put_object(Bucket=sys.argv[2], Key=sys.argv[3], Body=f.read())
elif cmd == "split":
    bucket, prefix, path, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    with open(path, "rb") as f:
        lines = f.readlines()
    per = -(-len(lines) // n)
    for i in range(n):
        s3.put_object(Bucket=bucket, Key=f"{prefix}/part-{i:05d}.jsonl", Body=b"".join(lines[i * per:(i + 1) * per]))
elif cmd == "putdir":
    bucket, prefix, top = sys.argv[2], sys.argv[3], sys.argv[4]
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                s3.put_object(Bucket=bucket, Key=f"{prefix}/{os.path.relpath(path, top)}", Body=f.read())
elif cmd == "get":
    sys.stdout.buffer.write(s3.get_object(Bucket=sys.argv[2], Key=sys.argv[3])["Body"].read())
else:
    sys.exit(f"unknown command {cmd}")
