"""Recomputes each manifest entry's idempotency key with the seed's own function.

The seed (vision-dlq-forensics) defines
    raw = f"{dl.capture_id}|{dl.stage.lower()}|{dl.registry_revision}"
    hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]
Prints one line per entry: the manifest's key and the seed's key.
usage: seed_keys.py MANIFEST [REPLAY_REVISION]
"""
import hashlib
import json
import sys

replay_revision = sys.argv[2] if len(sys.argv) > 2 else None
with open(sys.argv[1], encoding="utf-8") as f:
    next(f)
    for line in f:
        entry = json.loads(line)
        dl = entry["record"]
        revision = replay_revision if replay_revision else dl["registry_revision"]
        raw = f"{dl['capture_id']}|{dl['stage'].lower()}|{revision}"
        print(entry["key"], hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16])
