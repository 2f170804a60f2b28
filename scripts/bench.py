#!/usr/bin/env python3
"""`make bench`: dlqf rank against DuckDB on the same 10M-row vision dumps, side by side.

Generates the dumps once (Parquet and JSON-lines, with `dlqf gen`; the Parquet also as DuckDB
and pyarrow write it), then runs each engine
alternately, measuring wall time and peak RSS of the whole process (GNU time), and prints a
Markdown table of medians. DuckDB runs the same ranking (grouped on the raw tuple first, then
normalised, its fastest form) with 2 threads; `wc -l` shows the cost of just reading the bytes.
Then plan, show, replay, scale and S3 rows, and the nightly job from partial states (a 28-day
trend from 28 daily states against the same trend re-reading the 28 daily dumps).
"""
import argparse
import json
import random
import re
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

DUCKDB = r"""
import sys, duckdb
path = sys.argv[1]
con = duckdb.connect()
con.execute("SET threads=%s" % sys.argv[2])
cols = "{'capture_id':'VARCHAR','stage':'VARCHAR','reject_reason':'VARCHAR','registry_revision':'VARCHAR','capture_timestamp':'VARCHAR'}"
src = ("read_parquet('%s')" % path) if path.endswith(".parquet") else \
      ("read_json('%s', format='newline_delimited', columns=%s)" % (path, cols))
ws = "' ' || chr(9) || chr(10) || chr(13)"
q = f'''
WITH raw AS (
  SELECT stage, reject_reason, registry_revision, count(*) AS c,
         min({{'t': CAST(capture_timestamp AS TIMESTAMPTZ), 'id': capture_id}}) AS first,
         max(CAST(capture_timestamp AS TIMESTAMPTZ)) AS last
  FROM {src} GROUP BY ALL)
SELECT lower(trim(stage, {ws})) s, lower(trim(reject_reason, {ws})) r, trim(registry_revision, {ws}) v,
       sum(c) c, min(first) first, max(last) last
FROM raw GROUP BY ALL ORDER BY c DESC, s, r, v'''
rows = con.execute(q).fetchall()
print(len(rows), sum(r[3] for r in rows))
"""


QUERY_DUCKDB = r"""
import json, sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
if len(sys.argv) > 3:
    con.execute("SET threads=%s" % sys.argv[3])
path = sys.argv[1]
src = ("read_parquet('%s')" % path) if path.endswith(".parquet") else ("read_json('%s', format='newline_delimited')" % path)
con.execute("CREATE VIEW dlq AS SELECT * FROM %s" % src)
print(json.dumps([list(row) for row in con.execute(sys.argv[2]).fetchall()]))
"""


# GNU time, for a command's peak RSS: the `ru_maxrss` wait4 gives for a child of this process
# is at least this process's own (Linux keeps the peak of the memory a process leaves at exec,
# and a child starts on a copy of, or with vfork on, the bench's), so a run smaller than the
# bench read as the bench (172 MiB for a 18 MiB merge of states). time's child starts on
# time's few MiB instead.
GNU_TIME = "/usr/bin/time"


def measure(cmd, check=True):
    """Wall seconds, peak RSS in MiB and stdout of one run; a failed run ends the bench unless
    check is False (then its stderr is shown and its output returned as it is)."""
    with tempfile.NamedTemporaryFile(mode="r") as report:
        start = time.perf_counter()
        proc = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", report.name] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = proc.stdout.read()
        err = proc.stderr.read()
        status = proc.wait()
        wall = time.perf_counter() - start
        # The last line is the KiB; a failed command's status comes on a line before it.
        peak_kib = int(report.read().split()[-1])
    if status != 0:
        message = f"failed: {' '.join(cmd)}\n{err.decode(errors='replace')}"
        if check:
            sys.exit(message)
        print(message, file=sys.stderr)
    return wall, peak_kib / 1024.0, out


def ensure(path, dlqf, rows, fmt):
    stamp = path + f".rows-{rows}"
    if os.path.exists(path) and os.path.exists(stamp):
        return
    print(f"generating {path} ({rows} rows) …", file=sys.stderr)
    subprocess.run([dlqf, "gen", "--rows", str(rows), "--seed", "42", "--format", fmt, "-o", path], check=True)
    open(stamp, "w").close()


# The same rows as DuckDB and pyarrow write Parquet with their defaults: snappy pages, 122,880
# and 1,048,576 rows a group (`dlqf gen` writes zstd, 262,144 rows a group).
REWRITE = r"""
import sys, duckdb, pyarrow.parquet as pq
source, writer, target = sys.argv[1:]
if writer == "duckdb":
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"COPY (SELECT * FROM read_parquet('{source}')) TO '{target}' (FORMAT parquet)")
else:
    pq.write_table(pq.read_table(source), target)
"""


def rewritten(parquet, writer):
    """The dump's Parquet as `writer` (duckdb or pyarrow) writes it, written once."""
    path = parquet.replace(".parquet", f"-{writer}.parquet")
    stamp = path + ".done"
    if not (os.path.exists(path) and os.path.exists(stamp)):
        print(f"writing {path} …", file=sys.stderr)
        subprocess.run([sys.executable, "-c", REWRITE, parquet, writer, path], check=True)
        open(stamp, "w").close()
    return path


def cache_as_read_from_disk(path):
    """Drops the file's pages from the page cache and reads it once: the cache then holds it as
    it holds a file read from disk, whatever wrote it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 8 << 20):
            pass
    finally:
        os.close(fd)


def drop_from_cache(path):
    """Drops the file's pages from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_replay(args, work):
    """plan 10M rows (vs rank) and show its manifest (vs sha256sum), then execute a 100k-entry
    manifest to a loopback HTTP stage."""
    rows = []
    jsonl = os.path.join(args.data, f"vision-{args.rows}.jsonl")
    policy = os.path.join(work, "policy.toml")
    with open(policy, "w") as f:
        f.write("clear_all = true\nmax_attempts = 1000\n")
    manifest = os.path.join(work, "manifest.jsonl")
    # plan of each format against its own rank and one SHA-256 pass over the manifest
    # (OpenSSL's, which uses the CPU's SHA extensions; coreutils' sha256sum does not): the
    # goal is plan <= rank + 1.5x that pass. Medians of alternating runs; RSS the maximum.
    base = [args.dlqf, "--threads", str(args.threads)]
    for label, dump in [("JSON-lines", jsonl), ("Parquet", os.path.join(args.data, f"vision-{args.rows}.parquet"))]:
        plans, ranks, shas = [], [], []
        for _ in range(args.runs):
            # A new manifest each time: replacing the last one would add the filesystem's time
            # to free 5 GB (seconds on ext4 with discard), which is not plan's work.
            if os.path.exists(manifest):
                os.remove(manifest)
            plans.append(measure(base + ["plan", dump, "--policy", policy, "-o", manifest, "--no-progress"]))
            ranks.append(measure(base + ["rank", dump, "--format", "json", "--no-progress"]))
            # The pass over the file once it is in the page cache: plan writes past the cache,
            # and openssl's first read would also time the kernel filling it (8 s against 5).
            measure(["openssl", "dgst", "-sha256", manifest])
            shas.append(measure(["openssl", "dgst", "-sha256", manifest]))
        plan_s, rank_s, sha_s = (statistics.median(w for w, _, _ in runs) for runs in (plans, ranks, shas))
        plan_rss = max(m for _, m, _ in plans)
        goal = rank_s + 1.5 * sha_s
        rows.append(f"| plan {args.rows:,} rows ({label}) | {plan_s:.2f} s | {plan_rss:.0f} MiB | rank {rank_s:.2f} s + 1.5 x SHA-256 pass {sha_s:.2f} s = {goal:.2f} s | {plan_s / goal:.2f}x the goal |")
    # show verifies and summarises the manifest in one pass: against one SHA-256 pass over it.
    size = os.path.getsize(manifest) / 1e9
    shows, shas = [], []
    for _ in range(args.runs):
        shows.append(measure([args.dlqf, "show", manifest]))
        shas.append(measure(["openssl", "dgst", "-sha256", manifest]))
    show_s, sha_s = (statistics.median(w for w, _, _ in runs) for runs in (shows, shas))
    show_rss = max(m for _, m, _ in shows)
    rows.append(f"| show the {size:.1f} GB manifest | {show_s:.2f} s | {show_rss:.0f} MiB | openssl dgst -sha256: {sha_s:.2f} s | {show_s / sha_s:.2f}x one SHA-256 pass |")
    os.remove(manifest)

    small = os.path.join(work, "vision-100k.jsonl")
    subprocess.run([args.dlqf, "gen", "--rows", "100000", "--seed", "5", "-o", small], check=True)
    subprocess.run([args.dlqf, "plan", small, "--policy", policy, "-o", manifest, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    stage = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "stage_server.py"), str(port)], stdout=subprocess.PIPE, text=True)
    assert stage.stdout.readline().strip() == "ready"
    ledger = os.path.join(work, "ledger.db")
    for f in (ledger, ledger + "-wal", ledger + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    wall, rss, out = measure([args.dlqf, "execute", manifest, "--target", f"http://127.0.0.1:{port}/replay", "--ledger", ledger,
                              "--quarantine", "file:" + os.path.join(work, "q.jsonl"), "--concurrency", "16", "--no-progress"])
    stage.terminate()
    requests, distinct = stage.stdout.readline().split()
    rows.append(f"| execute 100,000 entries, HTTP loopback, SQLite ledger, concurrency 16 | {wall:.2f} s | {rss:.0f} MiB | {100000 / wall:,.0f} replays/s | {requests} requests, {distinct} keys |")
    if not args.skip_brokers:
        rows.extend(bench_brokers(args, work))
    return rows


def bench_ordered(args, work):
    """execute --ordered against unordered: 500 keys of 2 to 6 messages each, dumped in a
    shuffled failure order, to a loopback stage answering in 5 ms, at concurrency 16."""
    rng = random.Random(11)
    records = []
    for k in range(500):
        for seq in range(rng.randint(2, 6)):
            records.append({"id": f"dl-{k}-{seq}", "original_topic": "orders", "original_partition": k % 4,
                            "original_offset": 1000 * k + 7 * seq, "original_key": f"ord-{k}",
                            "original_value": {"order_id": f"ord-{k}", "seq": seq}, "original_headers": {},
                            "error_type": "TimeoutError", "error_message": "timed out",
                            "first_failed_at": "2026-10-01T00:00:00Z", "last_failed_at": "2026-10-01T00:00:00Z",
                            "retry_count": 0, "consumer_id": "c", "consumer_version": "1"})
    rng.shuffle(records)
    dumps = os.path.join(work, "ordered-dumps")
    os.makedirs(dumps, exist_ok=True)
    half = len(records) // 2
    for name, part in (("2026-10-01.jsonl", records[:half]), ("2026-10-02.jsonl", records[half:])):
        with open(os.path.join(dumps, name), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in part)
    policy = os.path.join(work, "ordered-policy.toml")
    with open(policy, "w") as f:
        f.write("clear_all = true\n")
    manifest = os.path.join(work, "ordered-manifest.jsonl")
    subprocess.run([args.dlqf, "plan", dumps, "--profile", "envelope", "--policy", policy, "-o", manifest, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    stage = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "stage_server.py"), str(port), "5"], stdout=subprocess.PIPE, text=True)
    assert stage.stdout.readline().strip() == "ready"
    ledger = os.path.join(work, "ordered.db")
    walls = {False: [], True: []}
    try:
        for _ in range(args.runs):
            for ordered in (False, True):
                fresh_ledger(ledger)
                cmd = [args.dlqf, "execute", manifest, "--target", f"http://127.0.0.1:{port}/replay", "--ledger", ledger,
                       "--quarantine", "file:" + os.path.join(work, "oq.jsonl"), "--concurrency", "16", "--no-progress"]
                wall, _, out = measure(cmd + (["--ordered"] if ordered else []))
                assert json.loads(out)["outcomes"]["replayed"] == len(records)
                walls[ordered].append(wall)
    finally:
        stage.terminate()
    unordered, ordered = (statistics.median(walls[o]) for o in (False, True))
    return [f"| execute {len(records):,} entries of 500 keys (2-6 each, failure order), 5 ms stage, concurrency 16 | unordered {unordered:.2f} s | --ordered {ordered:.2f} s | {ordered / unordered:.2f}x (goal <= 1.5x) |"]


def fresh_ledger(path):
    for f in (path, path + "-wal", path + "-shm"):
        if os.path.exists(f):
            os.remove(f)


def bench_brokers(args, work):
    """execute 100k envelope entries to the loopback Kafka broker (librdkafka's mock cluster)
    and 1,000 to SQS on moto, both with the SQLite ledger."""
    rows = []
    support = os.path.join(os.path.dirname(__file__), "..", "tests", "support")
    envelope = os.path.join(work, "envelope-100k.jsonl")
    manifest = os.path.join(work, "envelope.jsonl")
    subprocess.run([args.dlqf, "gen", "--profile", "envelope", "--rows", "100000", "--seed", "5", "-o", envelope], check=True)
    policy = os.path.join(work, "policy.toml")
    subprocess.run([args.dlqf, "plan", envelope, "--profile", "envelope", "--policy", policy, "-o", manifest, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    with open(manifest) as f:
        topics = sorted({json.loads(line)["record"]["original_topic"] for i, line in enumerate(f) if i > 0})
    broker = subprocess.Popen([sys.executable, os.path.join(support, "kafka.py"), "serve", *topics], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        bootstrap = broker.stdout.readline().split()[1]
        ledger = os.path.join(work, "kafka.db")
        fresh_ledger(ledger)
        for concurrency in (256, 2048):
            fresh_ledger(ledger)
            wall, rss, out = measure([args.dlqf, "execute", manifest, "--target", f"kafka://{bootstrap}", "--ledger", ledger,
                                      "--quarantine", "file:" + os.path.join(work, "kq.jsonl"), "--concurrency", str(concurrency), "--no-progress"])
            replayed = json.loads(out)["outcomes"]["replayed"]
            rows.append(f"| execute 100,000 entries to Kafka (mock cluster on loopback), SQLite ledger, concurrency {concurrency} | {wall:.2f} s | {rss:.0f} MiB | {100000 / wall:,.0f} replays/s | {replayed} replayed |")
    finally:
        broker.stdin.close()
        broker.wait()

    # moto answers SQS slowly (tens of milliseconds per batch): a thousand entries measure it.
    small = os.path.join(work, "envelope-1k.jsonl")
    subprocess.run([args.dlqf, "gen", "--profile", "envelope", "--rows", "1000", "--seed", "5", "-o", small], check=True)
    subprocess.run([args.dlqf, "plan", small, "--profile", "envelope", "--policy", policy, "-o", manifest, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    with open(manifest) as f:
        entries = sum(1 for _ in f) - 1
    moto, s3 = start_moto()
    try:
        import boto3
        sqs = boto3.client("sqs", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
        url = sqs.create_queue(QueueName="bench-replay")["QueueUrl"]
        ledger = os.path.join(work, "sqs.db")
        fresh_ledger(ledger)
        wall, rss, out = measure([args.dlqf, "execute", manifest, "--target", "sqs://bench-replay", "--ledger", ledger,
                                  "--quarantine", "file:" + os.path.join(work, "sq.jsonl"), "--concurrency", "16",
                                  "--timeout", "60", "--no-progress"], check=False)
        replayed = json.loads(out)["outcomes"]["replayed"] if out.strip() else 0
        queued = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"]
        rows.append(f"| execute {entries:,} entries to SQS (moto on loopback), SQLite ledger, concurrency 16 | {wall:.2f} s | {rss:.0f} MiB | {entries / wall:,.0f} replays/s | {replayed} replayed, {queued} queued |")
    finally:
        moto.terminate()
    return rows


def start_moto():
    """moto on a free loopback port, its endpoint and test credentials exported to dlqf; returns
    the process and an S3 client with the bucket "bench" created."""
    import boto3
    port = free_port()
    moto = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ALLOW_HTTP="true")
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    wait_until_serving(moto, "moto_server", lambda: s3.create_bucket(Bucket="bench"))
    return moto, s3


def start_s3rver(args, work):
    """s3rver (from npm) on a free loopback port, storing under `work`, its endpoint exported to
    dlqf; returns the process and an S3 client with the bucket "bench"."""
    import boto3
    port = free_port()
    data = os.path.join(work, "s3rver")
    os.makedirs(data, exist_ok=True)
    # Its continuation tokens use a cipher OpenSSL 3 keeps in the legacy provider.
    env = dict(os.environ, NODE_OPTIONS="--openssl-legacy-provider")
    log = open(os.path.join(work, "s3rver.log"), "wb")
    server = subprocess.Popen([args.s3rver, "-d", data, "-a", "127.0.0.1", "-p", str(port), "--silent", "--configure-bucket", "bench"],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    os.environ.update(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ALLOW_HTTP="true")
    # Credentials given explicitly: boto3's default session keeps the first ones it resolved
    # (moto's, when the broker rows ran first), and s3rver refuses them.
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
    wait_until_serving(server, "s3rver", lambda: s3.head_bucket(Bucket="bench"), log.name)
    return server, s3


def wait_until_serving(server, name, probe, log=None):
    """Retries `probe` for up to 30 s while `server` starts (node takes its time on a loaded
    machine); ends the bench if it never answers."""
    for _ in range(300):
        try:
            probe()
            return
        except Exception:
            time.sleep(0.1)
    server.terminate()
    said = open(log, errors="replace").read()[-2000:] if log else ""
    sys.exit(f"bench: {name} did not start (exit status {server.poll()})\n{said}")


def bench_scale(args):
    """rank over 100M Parquet rows (ten hard links of the 10M-row file: same bytes, ten inputs)
    against the 10M-row run, and rank of the 10M-row file from a loopback S3 server."""
    rows = []
    parquet = os.path.join(args.data, f"vision-{args.rows}.parquet")
    many = os.path.join(args.data, "x10")
    os.makedirs(many, exist_ok=True)
    for i in range(10):
        link = os.path.join(many, f"part-{i}.parquet")
        if not os.path.exists(link):
            os.link(parquet, link)
    ones, tens = [], []
    for _ in range(args.runs):
        ones.append(measure([args.dlqf, "--threads", str(args.threads), "rank", parquet, "--format", "json", "--no-progress"]))
        tens.append(measure([args.dlqf, "--threads", str(args.threads), "rank", many, "--format", "json", "--no-progress"]))
    one, one_rss = statistics.median(r[0] for r in ones), max(r[1] for r in ones)
    ten, ten_rss, out = statistics.median(r[0] for r in tens), max(r[1] for r in tens), tens[0][2]
    total = json.loads(out)["total"]
    rows.append(f"| rank {total:,} Parquet rows (10 files) | {ten:.2f} s | {ten_rss:.0f} MiB | {ten / one:.2f}x the 10M-row time ({one:.2f} s, {one_rss:.0f} MiB) |")

    # The S3 rows run on s3rver, which serves a ranged GET from the byte range on disk as S3
    # does; moto and s3s-fs read the whole object for every ranged GET (about 0.3 s and 1.6 s
    # per request for this 500 MB object), so they would time the server, not the reader.
    work = tempfile.mkdtemp(dir=args.data)
    server, s3 = start_s3rver(args, work)
    try:
        s3.upload_file(parquet, "bench", "dlq/vision.parquet")
        wall, rss, _ = measure([args.dlqf, "--threads", str(args.threads), "rank", "s3://bench/dlq/", "--format", "json", "--no-progress"])
        rows.append(f"| rank the 10M-row Parquet from S3 (s3rver on loopback) | {wall:.2f} s | {rss:.0f} MiB | {wall / one:.2f}x local |")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work)
    return rows


BOTO3_FETCH = r"""
import sys, time, boto3, concurrent.futures as cf
from botocore.config import Config
endpoint, bucket, prefix = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, config=Config(max_pool_connections=32))
start = time.perf_counter()
keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix) for o in page.get("Contents", [])]
with cf.ThreadPoolExecutor(32) as pool:
    size = sum(pool.map(lambda key: len(s3.get_object(Bucket=bucket, Key=key)["Body"].read()), keys))
print(len(keys), size, time.perf_counter() - start)
"""


def bench_many_objects(args):
    """What a Kafka Connect S3 sink that flushes often writes: 2,000 small JSON-lines objects
    on a loopback s3s-fs, ranked, beside a plain concurrent client (boto3, 32 threads) that only
    lists and fetches them, both in one run; and the same rows as one object (same report)."""
    work = tempfile.mkdtemp(dir=args.data)
    store = os.path.join(work, "store")
    small = os.path.join(args.data, "vision-200k.jsonl")
    if not os.path.exists(small):
        subprocess.run([args.dlqf, "gen", "--rows", "200000", "--seed", "6", "-o", small], check=True)
    with open(small, "rb") as f:
        lines = f.readlines()
    os.makedirs(os.path.join(store, "bench", "many"))
    os.makedirs(os.path.join(store, "bench", "one"))
    shutil.copy(small, os.path.join(store, "bench", "one", "vision.jsonl"))
    per = -(-len(lines) // 2000)
    for i in range(2000):
        with open(os.path.join(store, "bench", "many", f"part-{i:05d}.jsonl"), "wb") as f:
            f.write(b"".join(lines[i * per:(i + 1) * per]))
    port = free_port()
    key, secret = "dlqf-bench", "dlqf-bench-secret"
    server = subprocess.Popen([args.s3s_fs, "--host", "127.0.0.1", "--port", str(port), "--access-key", key, "--secret-key", secret, store],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret, AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true")
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        rank = lambda prefix: [args.dlqf, "--threads", str(args.threads), "rank", f"s3://bench/{prefix}/", "--format", "json", "--no-progress"]
        ours, theirs, one = [], [], []
        for _ in range(args.runs):
            ours.append(measure(rank("many")))
            out = subprocess.run([sys.executable, "-c", BOTO3_FETCH, endpoint, "bench", "many/"], check=True, capture_output=True, text=True).stdout.split()
            theirs.append(float(out[2]))
            one.append(measure(rank("one")))
        d, rss = statistics.median(w for w, _, _ in ours), max(m for _, m, _ in ours)
        b = statistics.median(theirs)
        check = "same report as one object" if ours[0][2] == one[0][2] else "DIFFERENT report from one object"
        return [f"| rank 200,000 JSON-lines rows in 2,000 S3 objects (s3s-fs on loopback) | {d:.2f} s | {rss:.0f} MiB | boto3, 32 threads, list and get only: {b:.2f} s ({d / b:.2f}x); one object: {statistics.median(w for w, _, _ in one):.2f} s; {check} |"]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.terminate()
        server.wait()
        shutil.rmtree(work)


def bench_nightly(args):
    """The nightly incremental job: 28 daily JSON-lines partitions of 1M rows each. A 28-day
    trend (and a 7-day ranking) re-reading every partition, against the same reports merged
    from the 28 daily states; each night summarises only its own partition."""
    import datetime
    root = os.path.join(args.data, "nightly")
    days = [(datetime.date(2026, 10, 1) + datetime.timedelta(days=i)).isoformat() for i in range(28)]
    nights = []
    for i, day in enumerate(days):
        dump = os.path.join(root, "dumps", f"dt={day}", "part-0.jsonl")
        state = os.path.join(root, "states", f"dt={day}", "day.state")
        if not os.path.exists(dump + ".done"):
            os.makedirs(os.path.dirname(dump), exist_ok=True)
            print(f"generating {dump} (1,000,000 rows) …", file=sys.stderr)
            subprocess.run([args.dlqf, "gen", "--rows", "1000000", "--seed", str(100 + i), "--start", day, "--days", "1", "-o", dump], check=True)
            open(dump + ".done", "w").close()
        os.makedirs(os.path.dirname(state), exist_ok=True)
        wall, rss, _ = measure([args.dlqf, "--threads", str(args.threads), "rank", os.path.dirname(dump), "-o", state, "--no-progress"])
        nights.append((wall, rss))
    base = [args.dlqf, "--threads", str(args.threads)]
    rows = [f"| one night: `rank dt=DAY/ -o day.state` (1M rows) | {statistics.median(w for w, _ in nights):.2f} s | {max(m for _, m in nights):.0f} MiB | median of 28 nights |"]
    for label, command in [
        ("28-day `trend --every day`", ["trend", "--every", "day", "--format", "json", "--no-progress"]),
        ("7-day `rank --since`", ["rank", "--since", days[-7], "--format", "json", "--no-progress"]),
    ]:
        dumps, states = [], []
        for _ in range(args.runs):
            dumps.append(measure(base + command + [os.path.join(root, "dumps")]))
            states.append(measure(base + command + [os.path.join(root, "states")]))
        d, st = statistics.median(r[0] for r in dumps), statistics.median(r[0] for r in states)
        same = "same bytes" if dumps[0][2] == states[0][2] else "DIFFERENT reports"
        rows.append(f"| {label} from the 28 dumps | {d:.2f} s | {max(r[1] for r in dumps):.0f} MiB | |")
        rows.append(f"| {label} from the 28 states | {st:.3f} s | {max(r[1] for r in states):.0f} MiB | {d / st:.0f}x faster; {same} |")
    return rows


# A kcat -J line of a Kafka Connect dead letter (see tests/support/real_dumps.py for the
# layout's sources): the cause in __connect.errors.* headers, one in twenty payloads binary.
KCAT_CAUSES = [
    ("org.apache.kafka.connect.errors.DataException", "Failed to deserialize data for topic payments to Avro: ",
     "Caused by: org.apache.kafka.common.errors.SerializationException: Unknown magic byte!"),
    ("org.apache.kafka.connect.errors.DataException", "Failed to deserialize data for topic payments to Avro: ",
     "Caused by: io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema {n} not found; error code: 40403"),
    ("org.apache.kafka.connect.errors.DataException", "Converting byte[] to Kafka Connect data failed due to serialization error of topic orders: ",
     "Caused by: org.apache.kafka.common.errors.SerializationException: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('x' (code 120))"),
    ("org.apache.kafka.connect.errors.ConnectException", "Exiting WorkerSinkTask due to unrecoverable exception.",
     "Caused by: java.sql.BatchUpdateException: Duplicate entry 'ord-{n}' for key 'PRIMARY'"),
]


def kcat_dumps(path_nested, path_flat, rows):
    """The same rows as kcat writes them (headers a flat [name, value, ...] array) and flat
    (each header a top-level field), written once."""
    stamp = path_flat + f".rows-{rows}"
    if os.path.exists(path_nested) and os.path.exists(stamp):
        return
    print(f"generating {path_nested} and its flat twin ({rows} rows) …", file=sys.stderr)
    with open(path_nested, "wb") as nested, open(path_flat, "wb") as flat:
        for i in range(rows):
            cls, message, cause = KCAT_CAUSES[(i * 7919) % len(KCAT_CAUSES)]
            cause = cause.format(n=10000 + i % 977)
            trace = f"{cls}: {message}\\n\\tat org.apache.kafka.connect.runtime.WorkerSinkTask.convertAndTransformRecord(WorkerSinkTask.java:{500 + i % 50})\\n{cause}\\n\\t... 13 more\\n"
            headers = [("traceparent", f"00-{i:032x}-{i:016x}-01"), ("__connect.errors.topic", "payments"), ("__connect.errors.partition", str(i % 12)),
                       ("__connect.errors.offset", str(1_000_000 + i)), ("__connect.errors.connector.name", "payments-sink"), ("__connect.errors.task.id", "0"),
                       ("__connect.errors.stage", "VALUE_CONVERTER"), ("__connect.errors.class.name", "io.confluent.connect.avro.AvroConverter"),
                       ("__connect.errors.exception.class.name", cls), ("__connect.errors.exception.message", message), ("__connect.errors.exception.stacktrace", trace)]
            payload = (b'"\\u0000\\u0000\\u0000\\u0007\x9c\x81' + str(i).encode() + b'\xfe"') if i % 20 == 0 else (b'"{\\"order_id\\":\\"ord-' + str(i).encode() + b'\\",\\"total\\":' + str(i % 997).encode() + b'}"')
            head = f'{{"topic":"dlq-payments","partition":{i % 3},"offset":{i},"tstype":"create","ts":{1795849200000 + i * 37},"broker":1,'.encode()
            tail = f'"key":"ord-{i}","payload":'.encode() + payload + b"}\n"
            nested.write(head + b'"headers":[' + ",".join(f'"{k}","{v}"' for k, v in headers).encode() + b"]," + tail)
            flat.write(head + b"".join(f'"{k.replace("__connect.errors.", "errors_").replace(".", "_")}":"{v}",'.encode() for k, v in headers) + tail)
    open(stamp, "w").close()


YAJL_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x0C: b"\\f", 0x08: b"\\b"}
YAJL_SPECIAL = re.compile(rb'["\\\x00-\x1f]')


def yajl_string(data):
    """A JSON string as kcat's yajl writes bytes: the few escapes it makes, the rest raw."""
    return b'"' + YAJL_SPECIAL.sub(lambda m: YAJL_ESCAPES.get(m.group()[0]) or b"\\u00%02X" % m.group()[0], data) + b'"'


def spring_dump(path, rows):
    """The same failures as kcat_dumps' as Spring's DeadLetterPublishingRecoverer writes them
    (see profiles/spring-kafka.toml): original partition, offset and timestamp as 4- and 8-byte
    big-endian binary headers, the cause in a wrapper's stack trace; written once."""
    stamp = path + f".rows-{rows}"
    if os.path.exists(path) and os.path.exists(stamp):
        return
    print(f"generating {path} ({rows} rows) …", file=sys.stderr)
    wrapper = "org.springframework.kafka.listener.ListenerExecutionFailedException"
    with open(path, "wb") as out:
        for i in range(rows):
            cls, message, cause = KCAT_CAUSES[(i * 7919) % len(KCAT_CAUSES)]
            cause = cause.format(n=10000 + i % 977)
            root = cause.removeprefix("Caused by: ").split(": ", 1)[0]
            trace = (f"{wrapper}: Listener method 'listen' threw exception; {message}\n\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeRecordListener(KafkaMessageListenerContainer.java:{2800 + i % 50})\n"
                     f"\tat java.base/java.lang.Thread.run(Thread.java:1583)\n{cause}\n\tat com.shop.orders.OrderListener.listen(OrderListener.java:{40 + i % 9})\n\t... 13 more\n")
            headers = [(b"traceparent", f"00-{i:032x}-{i:016x}-01".encode()), (b"__TypeId__", b"com.shop.orders.Order"),
                       (b"kafka_dlt-original-topic", b"orders"), (b"kafka_dlt-original-partition", (i % 12).to_bytes(4, "big")),
                       (b"kafka_dlt-original-offset", (1_000_000 + i).to_bytes(8, "big")), (b"kafka_dlt-original-timestamp", (1795849100000 + i * 37).to_bytes(8, "big")),
                       (b"kafka_dlt-original-timestamp-type", b"CreateTime"), (b"kafka_dlt-original-consumer-group", b"orders-service"),
                       (b"kafka_dlt-exception-fqcn", wrapper.encode()), (b"kafka_dlt-exception-cause-fqcn", root.encode()),
                       (b"kafka_dlt-exception-message", f"Listener method 'listen' threw exception; {message}".encode()), (b"kafka_dlt-exception-stacktrace", trace.encode())]
            payload = b'{"order_id":"ord-' + str(i).encode() + b'","total":' + str(i % 997).encode() + b"}"
            head = f'{{"topic":"orders-dlt","partition":{i % 3},"offset":{i},"tstype":"create","ts":{1795849200000 + i * 37},"broker":1,'.encode()
            flat = b",".join(yajl_string(k) + b"," + yajl_string(v) for k, v in headers)
            out.write(head + b'"headers":[' + flat + b'],"key":"ord-' + str(i).encode() + b'","payload":' + yajl_string(payload) + b"}\n")
    open(stamp, "w").close()


KCAT_FLAT_PROFILE = """
name = "kafka-connect-flat"
id = ["errors_topic", "errors_partition", "errors_offset"]
id_type = "scalar"
time = "ts"
time_format = "epoch_ms"
[[signature]]
name = "exception"
field = "errors_exception_class_name"
required = false
[[signature]]
name = "root_cause"
field = "errors_exception_stacktrace"
normalize = "root_cause"
required = false
"""

# The exception class alone, nested and flat: what reading a header costs, no normaliser per row.
KCAT_CLASS_PROFILES = {
    "nested": 'name = "k"\nid = "offset"\nid_type = "scalar"\ntime = "ts"\ntime_format = "epoch_ms"\n[[signature]]\nname = "exception"\nfield = \'headers."__connect.errors.exception.class.name"\'\n',
    "flat": 'name = "k"\nid = "offset"\nid_type = "scalar"\ntime = "ts"\ntime_format = "epoch_ms"\n[[signature]]\nname = "exception"\nfield = "errors_exception_class_name"\n',
}


def bench_nested(args):
    """rank over a kcat-shaped dump (the cause in headers) against the same rows flat: the
    goal is at most 1.5x. Both with the kafka-connect signature (a root cause per row), and with
    the exception class alone (reading only)."""
    nested = os.path.join(args.data, f"kcat-{args.rows}.jsonl")
    flat = os.path.join(args.data, f"kcat-flat-{args.rows}.jsonl")
    kcat_dumps(nested, flat, args.rows)
    for path in (nested, flat):
        cache_as_read_from_disk(path)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.data) as work:
        profiles = {"flat": os.path.join(work, "flat.toml"), "class-nested": os.path.join(work, "cn.toml"), "class-flat": os.path.join(work, "cf.toml")}
        for name, text in [("flat", KCAT_FLAT_PROFILE), ("class-nested", KCAT_CLASS_PROFILES["nested"]), ("class-flat", KCAT_CLASS_PROFILES["flat"])]:
            with open(profiles[name], "w") as f:
                f.write(text)
        base = [args.dlqf, "--threads", str(args.threads), "rank", "--format", "json", "--no-progress"]
        for label, a, b in [
            ("kafka-connect signature (exception class, root cause per row)", base + [nested, "--profile", "kafka-connect"], base + [flat, "--profile", profiles["flat"]]),
            ("exception class alone", base + [nested, "--profile", profiles["class-nested"]], base + [flat, "--profile", profiles["class-flat"]]),
        ]:
            runs = {"nested": [], "flat": []}
            outputs = {}
            for _ in range(args.runs):
                for name, cmd in [("nested", a), ("flat", b)]:
                    wall, rss, out = measure(cmd)
                    runs[name].append((wall, rss))
                    outputs[name] = json.loads(out)
            same = [x["count"] for x in outputs["nested"]["buckets"]] == [x["count"] for x in outputs["flat"]["buckets"]]
            med = {n: statistics.median(w for w, _ in r) for n, r in runs.items()}
            rss = {n: max(m for _, m in r) for n, r in runs.items()}
            rows.append(f"| {label} | {med['nested']:.2f} s, {rss['nested']:.0f} MiB | {med['flat']:.2f} s, {rss['flat']:.0f} MiB | {med['nested'] / med['flat']:.2f}x (goal 1.5x) | {'same buckets' if same else 'DIFFERENT buckets'} |")
    return rows


def bench_learned(args, base, envelope):
    """rank of the 2M-row envelope dump with templates learned from it (`templates learn`,
    timed too) against the rules alone, alternating runs: the goal is at most 1.1x."""
    with tempfile.TemporaryDirectory(dir=args.data) as work:
        learned = os.path.join(work, "templates.toml")
        wall, rss, _ = measure(base + ["templates", "learn", "--profile", "envelope", envelope, "-o", learned, "--no-progress"])
        rows = [f"| templates learn --profile envelope, 2M rows | {wall:.2f} s | {rss:.0f} MiB |"]
        cmd = base + ["rank", "--profile", "envelope", envelope, "--format", "json", "--no-progress"]
        runs = {"rules": [], "learned": []}
        for _ in range(args.runs):
            runs["rules"].append(measure(cmd))
            runs["learned"].append(measure(cmd + ["--templates", learned]))
        med = {n: statistics.median(w for w, _, _ in r) for n, r in runs.items()}
        rss = max(m for _, m, _ in runs["learned"])
        rows.append(f"| rank --profile envelope --templates (learned), 2M rows | {med['learned']:.2f} s ({med['learned'] / med['rules']:.2f}x the rules alone, goal 1.1x) | {rss:.0f} MiB |")
        return rows


def bench_redact(args, base, envelope):
    """redact of the 2M-row envelope dump against rank of it, alternating runs: the goal is
    at least half of rank's throughput. The redacted dump must rank to the same counts."""
    with tempfile.TemporaryDirectory(dir=args.data) as work:
        key = os.path.join(work, "key")
        with open(key, "w") as f:
            f.write("a bench key of more than sixteen bytes\n")
        rank = base + ["rank", "--profile", "envelope", envelope, "--format", "json", "--no-progress"]
        runs = {"rank": [], "redact": []}
        for i in range(args.runs):
            out = os.path.join(work, f"out-{i}")
            runs["rank"].append(measure(rank))
            runs["redact"].append(measure(base + ["redact", envelope, "--profile", "envelope", "--key-file", key, "-o", out]))
            if i > 0:
                shutil.rmtree(out)
        redacted = json.loads(measure(base + ["rank", "--profile", "envelope", os.path.join(work, "out-0"), "--format", "json", "--no-progress"])[2])
        original = json.loads(runs["rank"][0][2])
        counts = [sorted(b["count"] for b in r["buckets"]) for r in (original, redacted)]
        same = "same bucket counts" if counts[0] == counts[1] and original["total"] == redacted["total"] else "DIFFERENT bucket counts"
        med = {n: statistics.median(w for w, _, _ in r) for n, r in runs.items()}
        rss = max(m for _, m, _ in runs["redact"])
        return [f"| redact --profile envelope, 2M JSON-lines rows | {med['redact']:.2f} s ({med['rank'] / med['redact']:.2f} of rank's throughput, goal 0.5; {same}) | {rss:.0f} MiB |"]


def memory_available():
    """Bytes the kernel could give without swapping (page cache it may drop included)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def bench_spring(args):
    """rank over Spring DLT kcat rows (binary big-endian headers decoded per row, the cause in
    a wrapper's stack trace) against the Kafka Connect kcat rows of the same failures: the goal
    is at most 1.2x. The runs alternate when both files fit in the page cache together; where
    they do not (10M rows are 15.6 and 11.5 GB), alternating runs would each read part of its
    file from disk, so each file's runs then come together, after the other file is dropped
    from the cache and this one read into it."""
    nested = os.path.join(args.data, f"kcat-{args.rows}.jsonl")
    spring = os.path.join(args.data, f"spring-{args.rows}.jsonl")
    kcat_dumps(nested, os.path.join(args.data, f"kcat-flat-{args.rows}.jsonl"), args.rows)
    spring_dump(spring, args.rows)
    base = [args.dlqf, "--threads", str(args.threads), "rank", "--format", "json", "--no-progress"]
    cmds = {"spring": (spring, base + [spring, "--profile", "spring-kafka"]), "connect": (nested, base + [nested, "--profile", "kafka-connect"])}
    runs, outputs = {"spring": [], "connect": []}, {}
    together = os.path.getsize(nested) + os.path.getsize(spring) < 0.8 * memory_available()
    if together:
        for path, _ in cmds.values():
            cache_as_read_from_disk(path)
        order = [name for _ in range(args.runs) for name in cmds]
        how = "alternating runs"
    else:
        order = [name for name in cmds for _ in range(args.runs)]
        how = f"each file's {args.runs} runs together, from the page cache (both files outgrow it)"
    for i, name in enumerate(order):
        path, cmd = cmds[name]
        if not together and (i == 0 or order[i - 1] != name):
            # The other file's pages dropped first: this one then stays whole in the cache,
            # in the large folios a read from disk leaves (see `cache_as_read_from_disk`).
            for other, _ in cmds.values():
                if other != path:
                    drop_from_cache(other)
            cache_as_read_from_disk(path)
        wall, rss, out = measure(cmd)
        runs[name].append((wall, rss))
        outputs[name] = json.loads(out)
    counts = {n: sorted(b["count"] for b in o["buckets"]) for n, o in outputs.items()}
    same = "same bucket counts" if counts["spring"] == counts["connect"] else f"DIFFERENT bucket counts {counts}"
    med = {n: statistics.median(w for w, _ in r) for n, r in runs.items()}
    rss = {n: max(m for _, m in r) for n, r in runs.items()}
    return [f"| {args.rows:,} rows | {med['spring']:.2f} s, {rss['spring']:.0f} MiB | {med['connect']:.2f} s, {rss['connect']:.0f} MiB | {med['spring'] / med['connect']:.2f}x (goal 1.2x) | {same}; {how} |"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlqf", required=True)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=os.path.expanduser("~/.cache/dlqf-bench"))
    ap.add_argument("--s3rver", default=os.path.expanduser("~/.cache/dlqf-s3rver/node_modules/.bin/s3rver"))
    ap.add_argument("--s3s-fs", default=os.path.expanduser("~/.cargo/bin/s3s-fs"))
    ap.add_argument("--skip-rank", action="store_true")
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-brokers", action="store_true")
    ap.add_argument("--skip-nightly", action="store_true")
    ap.add_argument("--skip-nested", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(GNU_TIME):
        sys.exit(f"{GNU_TIME} (GNU time, Debian's `time` package) measures peak RSS: `make bench` installs it")
    os.makedirs(args.data, exist_ok=True)
    parquet = os.path.join(args.data, f"vision-{args.rows}.parquet")
    jsonl = os.path.join(args.data, f"vision-{args.rows}.jsonl")
    ensure(parquet, args.dlqf, args.rows, "parquet")
    ensure(jsonl, args.dlqf, args.rows, "jsonl")

    rows = []
    # The page cache holds a file read from disk in large folios, and a file just copied with
    # `cp` (or written a few KiB at a time) in 4 KiB pages: mapping the latter costs a fault
    # every 64 KiB. Both are measured, the dumps first put in the cache as read from disk
    # (what wrote them, and when, would otherwise decide).
    copied = os.path.join(args.data, f"vision-{args.rows}-copied.jsonl")
    written_by = [] if args.skip_rank else [(f"Parquet as {name} writes it", rewritten(parquet, writer)) for name, writer in [("DuckDB", "duckdb"), ("pyarrow", "pyarrow")]]
    if not args.skip_rank:
        for dump in [parquet, jsonl] + [path for _, path in written_by]:
            cache_as_read_from_disk(dump)
        subprocess.run(["cp", jsonl, copied], check=True)
        # Its 3.9 GB on disk before anything is timed, not written back during the runs.
        fd = os.open(copied, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    inputs = [("Parquet", parquet)] + written_by + [("JSON-lines", jsonl), ("JSON-lines, just copied with cp", copied)]
    for label, path in [] if args.skip_rank else inputs:
        engines = {
            "dlqf": [args.dlqf, "--threads", str(args.threads), "rank", path, "--format", "json", "--no-progress"],
            "duckdb": [sys.executable, "-c", DUCKDB, path, str(args.threads)],
        }
        if label.startswith("JSON-lines"):
            engines["wc -l"] = ["wc", "-l", path]
        results = {name: [] for name in engines}
        for _ in range(args.runs):
            for name, cmd in engines.items():
                wall, rss, _ = measure(cmd)
                results[name].append((wall, rss))
        med = {n: (statistics.median(w for w, _ in r), max(m for _, m in r)) for n, r in results.items()}
        size = os.path.getsize(path) / 2**20
        rows.append((label, size, med))

    print(f"\n{args.rows:,} rows, {args.threads} threads, median of {args.runs} alternating runs; peak RSS is the max over runs\n")
    print("| input | size | dlqf | dlqf RSS | DuckDB | DuckDB RSS | dlqf / DuckDB | wc -l |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, size, med in rows:
        d, k = med["dlqf"], med["duckdb"]
        wc = f"{med['wc -l'][0]:.2f} s" if "wc -l" in med else ""
        print(f"| {label} | {size:,.0f} MiB | {d[0]:.2f} s | {d[1]:.0f} MiB | {k[0]:.2f} s | {k[1]:.0f} MiB | {d[0] / k[0]:.2f}x | {wc} |")
    if not args.skip_rank:
        # The other analyses over the same Parquet: one scan each, like rank.
        print("\n| analysis (Parquet unless said) | wall | peak RSS |")
        print("|---|---:|---:|")
        base = [args.dlqf, "--threads", str(args.threads)]
        envelope = os.path.join(args.data, "envelope-2m.jsonl")
        if not os.path.exists(envelope + ".done"):
            subprocess.run([args.dlqf, "gen", "--profile", "envelope", "--rows", "2000000", "--seed", "5", "-o", envelope], check=True)
            open(envelope + ".done", "w").close()
        for label, cmd in [
            ("trend --every day", ["trend", parquet, "--format", "json", "--no-progress"]),
            ("health", ["health", parquet, "--format", "json", "--no-progress"]),
            ("rank --format html (rank + trend in one scan)", ["rank", parquet, "--format", "html", "--no-progress"]),
            ("rank --profile envelope, 2M JSON-lines rows (message templates per row)", ["rank", "--profile", "envelope", envelope, "--format", "json", "--no-progress"]),
        ]:
            runs = [measure(base + cmd) for _ in range(args.runs)]
            print(f"| {label} | {statistics.median(w for w, _, _ in runs):.2f} s | {max(m for _, m, _ in runs):.0f} MiB |")
        for row in bench_learned(args, base, envelope):
            print(row)
        for row in bench_redact(args, base, envelope):
            print(row)
        # SQL over the raw records: a one-column group-by, beside DuckDB running the same SQL
        # over the same file (its own type detection, as a user would), alternating runs.
        sql = "SELECT stage, count(*) AS n FROM dlq GROUP BY stage ORDER BY stage"
        print("\n| query: one-column group-by | dlqf | dlqf RSS | DuckDB | DuckDB RSS | dlqf / DuckDB | check |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for label, path in [("JSON-lines", jsonl), ("Parquet", parquet)]:
            engines = {
                "dlqf": base + ["query", path, "-e", sql, "--format", "json", "--no-progress"],
                "duckdb": [sys.executable, "-c", QUERY_DUCKDB, path, sql, str(args.threads)],
            }
            results = {name: [] for name in engines}
            for _ in range(args.runs):
                for name, cmd in engines.items():
                    results[name].append(measure(cmd))
            ours = sorted([r["stage"], r["n"]] for r in json.loads(results["dlqf"][0][2]))
            theirs = sorted(json.loads(results["duckdb"][0][2]))
            same = "same rows" if ours == theirs else f"DIFFERENT rows ({len(ours)} vs {len(theirs)})"
            (d, dm), (k, km) = [(statistics.median(w for w, _, _ in results[n]), max(m for _, m, _ in results[n])) for n in ("dlqf", "duckdb")]
            print(f"| {label} | {d:.2f} s | {dm:.0f} MiB | {k:.2f} s | {km:.0f} MiB | {d / k:.2f}x | {same} |")
    if not args.skip_replay:
        with tempfile.TemporaryDirectory(dir=args.data) as work:
            print("\n| replay | wall | peak RSS | rate / comparison | check |")
            print("|---|---:|---:|---:|---|")
            for row in bench_replay(args, work):
                print(row)
            print("\n| ordered replay | unordered | ordered | ratio |")
            print("|---|---:|---:|---:|")
            for row in bench_ordered(args, work):
                print(row)
    if not args.skip_scale:
        print("\n| scale | wall | peak RSS | comparison |")
        print("|---|---:|---:|---|")
        for row in bench_scale(args) + bench_many_objects(args):
            print(row)
    if not args.skip_nightly:
        print("\n| nightly, from states | wall | peak RSS | comparison |")
        print("|---|---:|---:|---|")
        for row in bench_nightly(args):
            print(row)
    if not args.skip_nested:
        print(f"\n| rank, {args.rows:,} kcat-shaped rows | nested (kcat -J) | flat twin | nested / flat | check |")
        print("|---|---:|---:|---:|---|")
        for row in bench_nested(args):
            print(row)
        print("\n| rank, Kafka dead letters | Spring DLT, kcat -J (spring-kafka) | Kafka Connect, kcat -J (kafka-connect) | Spring / Connect | check |")
        print("|---|---:|---:|---:|---|")
        for row in bench_spring(args):
            print(row)
    if os.path.exists(copied):
        os.remove(copied)


if __name__ == "__main__":
    main()
