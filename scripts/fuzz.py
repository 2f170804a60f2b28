#!/usr/bin/env python3
"""A mutation runner over the dlqf binary: hostile versions of every input kind it reads.

usage: fuzz.py --dlqf BIN [--seconds N] [--seed S] [--out DIR] [--limit-gib G] [--timeout T]
       fuzz.py --dlqf BIN --replay DIR      rerun saved cases (the regression corpus)

Seeds are made by dlqf itself (gen, plan, rank --format state): JSON-lines and Parquet dumps, a
manifest and a state; and by tests/support/real_dumps.py: the frameworks' and brokers' dumps
(Spring Kafka, RabbitMQ, Sidekiq, …), read with their built-in profiles. Each mutant is a byte-level change (bit flips, truncation, a spliced
chunk, a number replaced by an extreme one, a large varint over a Parquet footer or into a
page header, a page header claiming gigabytes with the file otherwise consistent, one field of
a footer's column chunk or of a page header set to what a crafted file claims: offsets -1, 0
or past the file, sizes 0, a version 2 page's level lengths past the page) or a JSON-level one (a value replaced by an extreme,
odd or wrongly typed one, a duplicated key, a base64 value's bytes changed under it); manifest and state mutants are re-sealed half of
the time, so they reach the code behind the seal. Each command runs with a time limit and a cap
on address space. A case is a finding when dlqf panics (exit 101), dies of a signal (an abort,
a segfault, out of memory), outlives the limit, or exits 0 on an unsealed change to a manifest
or state. Findings are saved as DIR/<kind>-<n>/{input,cmd.json,why.txt}.

Standard library only, so it runs wherever the tests run.
"""
import argparse
import base64
import copy
import hashlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parquet_thrift as thrift  # noqa: E402

EXTREMES = [0, -1, 1, 2**31, 2**31 - 1, -(2**31), 2**32, 2**40, 2**53, 2**63 - 1, -(2**63), 2**64, 10**12,
            9.2e15, -9.2e15, 1e308, -1e308, 0.5, "", "é" * 40, "\u0000", "x" * 100000, None, True, [], {}, [[[[[]]]]]]
NUMBERS = [b"0", b"-1", b"2147483648", b"-2147483649", b"1099511627776", b"9223372036854775807",
           b"-9223372036854775808", b"18446744073709551616", b"1e308", b"9200000000000000", b"-9200000000000000"]


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def reseal_manifest(data):
    """Recomputes entries_sha256 and manifest_sha256 of a manifest's bytes (first-wins keys)."""
    head, sep, rest = data.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        return data
    if not isinstance(header, dict):
        return data
    header["entries_sha256"] = hashlib.sha256(rest).hexdigest()
    sealed = {k: v for k, v in header.items() if k != "manifest_sha256"}
    header["manifest_sha256"] = hashlib.sha256(canonical(sealed)).hexdigest()
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode() + sep + rest


def reseal_state(data):
    """Recomputes each state's sha256: its header written with sha256 empty, then its lines."""
    lines = data.split(b"\n")
    out, i = [], 0
    while i < len(lines):
        try:
            header = json.loads(lines[i])
            count = int(header.get("signatures", 0)) if isinstance(header, dict) else 0
        except (ValueError, TypeError, AttributeError, OverflowError):
            out.append(lines[i])
            i += 1
            continue
        count = max(0, min(count, len(lines) - i - 1))
        body = lines[i + 1:i + 1 + count]
        header["sha256"] = ""
        h = hashlib.sha256(json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
        for line in body:
            h.update(line + b"\n")
        header["sha256"] = h.hexdigest()
        out.append(json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode())
        out.extend(body)
        i += 1 + count
    return b"\n".join(out)


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            yield from paths(v, prefix + (i,))


def set_path(value, path, new):
    if not path:
        return new
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


def mutate_json_line(line, rng):
    try:
        value = json.loads(line)
    except ValueError:
        return None
    choice = rng.random()
    if choice < 0.15 and isinstance(value, dict) and value:
        # A duplicated key, with another value, first or last.
        key = rng.choice(list(value))
        dup = json.dumps(key, ensure_ascii=False) + ":" + json.dumps(rng.choice(EXTREMES), ensure_ascii=False)
        text = json.dumps(value, ensure_ascii=False)
        return ("{" + dup + "," + text[1:] if rng.random() < 0.5 else text[:-1] + "," + dup + "}").encode()
    all_paths = list(paths(value))
    path = rng.choice(all_paths[1:] or all_paths)
    new = rng.choice(EXTREMES)
    if choice < 0.3:
        # Same type, odd content: a string with a multibyte character at a chosen byte.
        new = "a" * rng.randrange(0, 40) + "é€𝄞" + "b" * rng.randrange(0, 40)
    try:
        value = set_path(value, path, new)
    except (TypeError, KeyError, IndexError):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ": ") if rng.random() < 0.3 else (",", ":")).encode()


def mutate_bytes(data, rng):
    data = bytearray(data)
    if not data:
        return bytes(data)
    kind = rng.random()
    if kind < 0.35:
        for _ in range(rng.randrange(1, 9)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind < 0.5:
        data = data[:rng.randrange(len(data))]
    elif kind < 0.6:
        a = rng.randrange(len(data))
        b = min(len(data), a + rng.randrange(1, 4096))
        at = rng.randrange(len(data))
        data[at:at] = data[a:b]
    elif kind < 0.75:
        # Overwrite 4 or 8 bytes with an extreme little-endian integer (Parquet's Thrift and page
        # headers are varints; their footer length is 4 bytes LE).
        width = rng.choice([4, 8])
        value = rng.choice([0, 2**31 - 1, 2**31, 2**32 - 1, 2**40, 2**63 - 1]) % (1 << (8 * width))
        at = rng.randrange(max(1, len(data) - width))
        data[at:at + width] = value.to_bytes(width, "little")
    else:
        digits = [i for i in range(len(data)) if 48 <= data[i] <= 57]
        if digits:
            i = rng.choice(digits)
            j = i
            while j < len(data) and 48 <= data[j] <= 57:
                j += 1
            data[i:j] = rng.choice(NUMBERS)
    return bytes(data)


def large_varint(rng):
    """A zigzag varint (Thrift compact) of a size or count no real file has."""
    return thrift.varint(rng.choice([2**31 - 1, 2**31, 2**33, 2**40, 10**12, 2**62]) << 1)


def mutate_footer(data, rng):
    """A large zigzag varint written over a Parquet file's Thrift footer (its sizes, counts and
    offsets are varints): what a damaged or crafted footer claims."""
    if len(data) < 12 or data[-4:] != b"PAR1":
        return data
    length = int.from_bytes(data[-8:-4], "little")
    start = max(4, len(data) - 8 - length)
    if start >= len(data) - 8:
        return data
    varint = large_varint(rng)
    at = rng.randrange(start, len(data) - 8)
    out = bytearray(data)
    out[at:at + len(varint)] = varint
    return bytes(out[:len(data) - 8]) + data[-8:]


def mutate_page_header(data, rng):
    """A large varint written into a Parquet page header: each starts with its type (Thrift
    compact: 0x15, then 0 data, 4 dictionary or 6 data v2) and its sizes (0x15 again)."""
    starts = [m.start() for m in re.finditer(rb"\x15[\x00\x04\x06]\x15", data)]
    if not starts:
        return data
    at = rng.choice(starts) + rng.randrange(2, 24)
    varint = large_varint(rng)
    out = bytearray(data)
    out[at:at + len(varint)] = varint
    return bytes(out)


def pages_of(data):
    """Every page of a Parquet file (`parquet_thrift.layout`), none when its footer or a page
    header cannot be read."""
    try:
        return thrift.layout(data)[1]
    except (IndexError, ValueError, TypeError, KeyError):
        return []


def mutate_page_size(data, rng):
    """A page header claiming a large uncompressed size with the file otherwise consistent
    (`parquet_thrift.with_page_header`): every later page and the footer still line up, so
    the header is what a reader trusts."""
    pages = pages_of(data)
    if not pages:
        return data
    page = rng.choice(pages)
    header = copy.deepcopy(page[1])
    thrift.set_field(header, [2], rng.choice([2**31 - 1, 2**30, 2**28, 2**24]), thrift.I32)
    return thrift.with_page_header(data, page, header) or data


# A column chunk's ColumnMetaData fields (parquet.thrift): total sizes, num_values, and the
# data, index and dictionary page offsets.
CHUNK_FIELDS = {5: "num_values", 6: "total_uncompressed_size", 7: "total_compressed_size", 9: "data_page_offset",
                10: "index_page_offset", 11: "dictionary_page_offset"}


def mutate_chunk_field(data, rng):
    """One field of one column chunk in a footer set to -1, 0, past the file or huge: a
    crafted footer, every other byte consistent."""
    try:
        footer = thrift.footer_of(data)
        groups = thrift.field(footer, 4)[1]
        g = rng.randrange(len(groups))
        c = rng.randrange(len(thrift.field(groups[g], 1)[1]))
    except (IndexError, ValueError, TypeError):
        return data
    fid = rng.choice(sorted(CHUNK_FIELDS))
    value = rng.choice([-1, 0, len(data), len(data) + rng.randrange(1, 1 << 20), 2**31 - 1, 2**62])
    thrift.set_field(footer, [4, g, 1, c, 3, fid], value)
    return thrift.with_footer(data, footer)


def mutate_page_field(data, rng):
    """One field of one page header set as a crafted file would: its uncompressed size 0, a
    count -1 or huge, a version 2 page's level lengths past the page or on a column without
    them; the page's body shortened or padded so every offset still holds."""
    pages = pages_of(data)
    if not pages:
        return data
    page = rng.choice(pages)
    header = copy.deepcopy(page[1])
    v2 = thrift.field(header, 8)
    body = page[3]
    choices = [([2], 0), ([2], rng.choice([1, 3, body + 1]))]
    sub = 8 if v2 is not None else 5 if thrift.field(header, 5) is not None else 7 if thrift.field(header, 7) is not None else None
    if sub is not None:
        choices += [([sub, 1], rng.choice([-1, 0, 2**31 - 1]))]
    if v2 is not None:
        choices += [([8, 3], rng.choice([-1, 0, 2**31 - 1]))]
        choices += [([8, f], rng.choice([1, 1000, body, body + 1, -1])) for f in (5, 6)]
    path, value = rng.choice(choices)
    try:
        thrift.set_field(header, path, value, thrift.I32)
    except StopIteration:
        return data
    return thrift.with_page_header(data, page, header) or data


def mutate_base64(data, rng):
    """A base64 value (a Sidekiq backtrace's zlib, a broker payload) decoded, changed as bytes
    and encoded again, so the change reaches the inflater or the payload's reader."""
    blobs = list(re.finditer(rb"[A-Za-z0-9+/]{24,}={0,2}", data))
    if not blobs:
        return None
    m = rng.choice(blobs)
    try:
        raw = base64.b64decode(m.group(0), validate=True)
    except ValueError:
        return None
    return data[:m.start()] + base64.b64encode(mutate_bytes(raw, rng)) + data[m.end():]


def mutate(kind, data, rng):
    if kind == "parquet" and rng.random() < 0.2:
        return mutate_chunk_field(data, rng), False
    if kind == "parquet" and rng.random() < 0.25:
        return mutate_page_field(data, rng), False
    if kind == "parquet" and rng.random() < 0.25:
        return mutate_footer(data, rng), False
    if kind == "parquet" and rng.random() < 0.3:
        return mutate_page_header(data, rng), False
    if kind == "parquet" and rng.random() < 0.3:
        return mutate_page_size(data, rng), False
    if kind == "framework" and rng.random() < 0.3:
        blob = mutate_base64(data, rng)
        if blob is not None:
            return blob, False
    if kind in ("jsonl", "manifest", "state", "framework") and rng.random() < 0.6:
        lines = data.split(b"\n")
        for _ in range(5):
            i = rng.randrange(len(lines))
            new = mutate_json_line(lines[i], rng)
            if new is not None:
                lines[i] = new
                break
        data = b"\n".join(lines)
    else:
        data = mutate_bytes(data, rng)
    resealed = False
    if kind == "manifest" and rng.random() < 0.5:
        data, resealed = reseal_manifest(data), True
    if kind == "state" and rng.random() < 0.5:
        data, resealed = reseal_state(data), True
    return data, resealed


def commands(kind, path, work):
    """The commands that read a mutant of this kind."""
    out = os.path.join(work, "out")
    if kind in ("jsonl", "parquet"):
        profile = ["--profile", "envelope"] if "envelope" in path else []
        listed = [["rank", path, "--format", "json"] + profile,
                  ["trend", path, "--format", "json"] + profile,
                  ["health", path, "--format", "json"] + profile,
                  ["plan", path, "-o", out + ".manifest"] + profile,
                  ["redact", path, "--key-file", os.path.join(work, "redact.key"), "-o", out + ".redacted"] + profile]
        if kind == "parquet":
            # polars' own reader (query), a state, and a later dump read against a manifest.
            listed += [["query", path, "--execute", "SELECT * FROM dlq"],
                       ["rank", path, "--format", "state", "-o", out + ".state"] + profile]
            if os.path.exists(os.path.join(work, "m.manifest")):
                listed.append(["returned", os.path.join(work, "m.manifest"), path, "--format", "json"])
        return listed
    if kind == "framework":
        # fw/PROFILE/...: a frameworks' or brokers' dump read with its built-in profile.
        profile = ["--profile", path.split(os.sep + "fw" + os.sep, 1)[1].split(os.sep)[0]]
        return [["rank", path, "--format", "json"] + profile, ["plan", path, "-o", out + ".manifest"] + profile,
                ["redact", path, "--key-file", os.path.join(work, "redact.key"), "-o", out + ".redacted"] + profile]
    if kind == "manifest":
        return [["show", path],
                ["execute", path, "--dry-run", "--target", "file:" + out, "--ledger", out + ".db", "--quarantine", "file:" + out + ".q"]]
    return [["rank", path, "--format", "json"], ["trend", path, "--format", "json"], ["health", path, "--format", "json"],
            ["diff", path, path, "--format", "json"]]


def run(dlqf, args, timeout, limit, cwd):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        p = subprocess.run([dlqf, "--threads", "2"] + args, cwd=cwd, capture_output=True, timeout=timeout, preexec_fn=cap)
    except subprocess.TimeoutExpired:
        return None, "hang"
    return p.returncode, p.stderr.decode("utf-8", "replace")


def same_content(kind, original, mutant):
    """Whether a manifest or state mutant says what the original says: header lines equal as
    JSON (spacing is not content), every other line equal byte for byte."""
    a, b = original.split(b"\n"), mutant.split(b"\n")
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        try:
            vx, vy = json.loads(x), json.loads(y)
        except ValueError:
            return False
        is_header = isinstance(vx, dict) and ("manifest" in vx or "state" in vx)
        if not is_header or vx != vy:
            return False
    return True


def verdict(code, stderr, kind, changed_unsealed, cmd):
    if code is None:
        return "hang: more than the time limit"
    if code < 0:
        return f"killed by signal {-code}: {stderr[-2000:]}"
    if code == 101 or "panicked at" in stderr:
        return f"panic: {stderr[-2000:]}"
    if code not in (0, 1, 2, 3, 4):
        return f"exit {code}: {stderr[-2000:]}"
    if code == 0 and changed_unsealed and cmd[0] in ("show", "rank", "execute"):
        return "an unsealed change was accepted"
    return None


FRAMEWORK_LAYOUTS = ["spring-kafka", "rabbitmq", "sidekiq", "eventbridge", "eventgrid", "nservicebus", "masstransit"]


def seeds(dlqf, work):
    def do(*args):
        subprocess.run([dlqf] + list(args), cwd=work, check=True, capture_output=True)
    with open(os.path.join(work, "redact.key"), "w") as f:
        f.write("a fuzzing key of more than sixteen bytes\n")
    do("gen", "--rows", "300", "--seed", "5", "-o", "vision.jsonl")
    do("gen", "--profile", "envelope", "--rows", "200", "--seed", "5", "-o", "envelope.jsonl")
    do("gen", "--rows", "2000", "--seed", "6", "-o", "vision.parquet")
    with open(os.path.join(work, "policy.toml"), "w") as f:
        f.write("clear_all = true\n")
    do("plan", "vision.jsonl", "--policy", "policy.toml", "-o", "m.manifest")
    do("rank", "vision.jsonl", "--format", "state", "-o", "s.state")
    do("rank", "envelope.jsonl", "--profile", "envelope", "--format", "state", "-o", "e.state")
    # The frameworks' and brokers' layouts, as the tests write them (standard library only),
    # each file kept at its path: Event Grid's subscription is a folder of it.
    framework = []
    writer = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "support", "real_dumps.py")
    for layout in FRAMEWORK_LAYOUTS:
        folder = os.path.join(work, "fw", layout)
        subprocess.run([sys.executable, writer, layout, folder, "24", "5"], check=True, capture_output=True)
        files = sorted(os.path.relpath(os.path.join(root, f), work) for root, _, names in os.walk(folder) for f in names)
        framework += files[:2]  # (two of each, so that each layout is drawn as often)
    parquet = ["vision.parquet"]
    # Version 2 data pages, as pyarrow writes them, where a Python with pyarrow is at hand
    # (the tests' venv).
    for python in (sys.executable, os.path.expanduser("~/.cache/dlqf-venv/bin/python")):
        convert = "import pyarrow.parquet as pq, sys; pq.write_table(pq.read_table(sys.argv[1]), sys.argv[2], data_page_version='2.0', compression=sys.argv[3])"
        made = [subprocess.run([python, "-c", convert, "vision.parquet", f"vision-v2-{codec}.parquet", codec], cwd=work, capture_output=True).returncode == 0
                for codec in ("none", "zstd")] if os.path.exists(python) else [False]
        if all(made):
            parquet += ["vision-v2-none.parquet", "vision-v2-zstd.parquet"]
            break
    else:
        print("no pyarrow: Parquet seeds without version 2 pages", file=sys.stderr)
    return {"jsonl": ["vision.jsonl", "envelope.jsonl"], "parquet": parquet, "manifest": ["m.manifest"],
            "state": ["s.state", "e.state"], "framework": sorted(framework)}



def replay(args):
    failures = 0
    for case in sorted(os.listdir(args.replay)):
        folder = os.path.join(args.replay, case)
        spec = json.load(open(os.path.join(folder, "cmd.json")))
        with tempfile.TemporaryDirectory() as work:
            name = os.path.join(work, spec["name"])
            os.makedirs(os.path.dirname(name), exist_ok=True)
            shutil.copy(os.path.join(folder, "input"), name)
            for cmd in commands(spec["kind"], name, work):
                code, stderr = run(args.dlqf, cmd, args.timeout, args.limit_gib << 30, work)
                why = verdict(code, stderr, spec["kind"], False, cmd)
                if why:
                    failures += 1
                    print(f"{case}: {' '.join(cmd[:1])}: {why[:500]}")
    print(f"{len(os.listdir(args.replay))} saved cases, {failures} failures")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlqf", required=True)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--out", default="fuzz-findings")
    ap.add_argument("--limit-gib", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--kinds", default="jsonl,parquet,manifest,state,framework")
    ap.add_argument("--replay")
    args = ap.parse_args()
    args.dlqf = os.path.abspath(args.dlqf)
    if args.replay:
        return replay(args)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    base = tempfile.mkdtemp()
    # A copy, so that rebuilding the binary meanwhile does not disturb the run.
    shutil.copy(args.dlqf, os.path.join(base, "dlqf"))
    args.dlqf = os.path.join(base, "dlqf")
    originals = seeds(args.dlqf, base)
    kinds = args.kinds.split(",")
    deadline = time.time() + args.seconds
    tried = found = 0
    print(f"seed {args.seed}; findings go to {args.out}")
    while time.time() < deadline:
        kind = rng.choice(kinds)
        name = rng.choice(originals[kind])
        data = open(os.path.join(base, name), "rb").read()
        mutant, resealed = mutate(kind, data, rng)
        if mutant == data:
            continue
        tried += 1
        work = tempfile.mkdtemp()
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "wb").write(mutant)
        if kind == "parquet":
            shutil.copy(os.path.join(base, "m.manifest"), os.path.join(work, "m.manifest"))
        for cmd in commands(kind, path, work):
            code, stderr = run(args.dlqf, cmd, args.timeout, args.limit_gib << 30, work)
            changed = kind in ("manifest", "state") and not resealed and not same_content(kind, data, mutant)
            why = verdict(code, stderr, kind, changed, cmd)
            if why:
                found += 1
                case = os.path.join(args.out, f"{kind}-{args.seed}-{tried}")
                os.makedirs(case, exist_ok=True)
                open(os.path.join(case, "input"), "wb").write(mutant)
                json.dump({"kind": kind, "name": name, "cmd": cmd[0]}, open(os.path.join(case, "cmd.json"), "w"))
                open(os.path.join(case, "why.txt"), "w").write(why)
                print(f"{kind} {name} {cmd[0]}: {why.splitlines()[0][:200] if why else ''}", flush=True)
                break
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    print(f"{tried} mutants, {found} findings")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
