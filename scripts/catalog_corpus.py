#!/usr/bin/env python3
"""A labelled corpus of error messages from an error catalog, for grouping_accuracy.py.

usage: catalog_corpus.py ERRMSG_FILE OUT_DIR [--seed S] [--per-entry N]

ERRMSG_FILE is MySQL's or MariaDB's message catalog (`sql/share/errmsg-utf8.txt`, or
`share/messages_to_clients.txt`): entries `ER_NAME [SQLSTATE]` followed by one line per
language; the `eng "…"` line is the message, with printf placeholders. Each entry becomes
N messages (default 8) with its placeholders filled by realistic values (names, users, hosts,
paths, numbers, SQL keywords, dates), labelled with its format string, so that a line's true
group is its catalog message (entries sharing a message are one). Entries are split in two by a hash of their name: `dev` (the half
to look at while working) and `holdout` (never looked at until the end); and each half's
messages in two by position: `learn` (odd) and `test` (even), so templates can be learned on
one set of messages and measured on another. The subset whose every placeholder is a number
or sits in quotes is written apart (`clear`): no context is needed to see its values.

Writes OUT_DIR/{dev,holdout}/{all,learn,test,clear}/<Name>.csv with Content and
EventTemplate columns.
"""
import argparse
import os
import random
import re
import string
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_split  # noqa: E402

PLACEHOLDER = re.compile(r"%(?:[-+ #0]*)(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L|q)?([sdiucxXfgeEpMTBb])")

WORDS = ["orders", "users", "customers", "invoices", "payments", "shipments", "inventory", "ledger", "sessions", "accounts",
         "audit_log", "events", "products", "carts", "refunds", "tenants", "jobs", "queue_items", "profiles", "addresses"]
SCHEMAS = ["shop", "billing", "crm", "analytics", "warehouse", "auth", "reporting", "staging"]
USERS = ["svc_orders", "app", "reporting", "etl_loader", "root", "readonly", "svc_billing", "admin", "deploy", "grafana"]
HOSTS = ["%", "localhost", "10.0.3.7", "10.12.0.44", "db-1.internal", "app-7.prod.example.com", "172.16.4.20"]
KEYWORDS = ["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE TABLE", "ALTER TABLE", "DROP", "TRUNCATE", "GRANT", "REVOKE"]
FUNCTIONS = ["CONCAT", "JSON_EXTRACT", "DATE_FORMAT", "SUBSTRING", "COUNT", "GROUP_CONCAT", "CAST", "REGEXP_REPLACE"]
ENGINES = ["InnoDB", "MyISAM", "Aria", "MEMORY", "CSV", "ARCHIVE"]
ERRNO_TEXT = ["Permission denied", "No such file or directory", "Too many open files", "No space left on device"]


def value(kind, quoted, rng):
    """A realistic value for a placeholder of `kind` (printf conversion), inside quotes or not."""
    if kind in "diuxXlzM":
        return str(rng.choice([rng.randint(0, 9), rng.randint(10, 999), rng.randint(1000, 99999), rng.randint(10**5, 10**9)]))
    if kind in "fgeE":
        return f"{rng.uniform(0, 10000):.{rng.randint(1, 4)}f}"
    if kind == "c":
        return rng.choice(string.ascii_letters)
    if kind == "p":
        return hex(rng.randint(0x10000, 0xffffffffffff))
    # Strings: what a catalog's %s holds in practice.
    pick = rng.random()
    if pick < 0.40:
        return rng.choice(WORDS) + (f"_{rng.randint(1, 99)}" if rng.random() < 0.3 else "")
    if pick < 0.55:
        return f"{rng.choice(SCHEMAS)}.{rng.choice(WORDS)}" if not quoted else rng.choice(SCHEMAS)
    if pick < 0.65:
        return rng.choice(USERS)
    if pick < 0.72:
        return rng.choice(KEYWORDS) if not quoted else rng.choice(FUNCTIONS)
    if pick < 0.80:
        return f"/var/lib/mysql/{rng.choice(SCHEMAS)}/{rng.choice(WORDS)}.ibd"
    if pick < 0.86:
        return rng.choice(ENGINES)
    if pick < 0.93:
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    return rng.choice(HOSTS)


def is_clear(message):
    """Every placeholder a number, or a string inside quotes."""
    for m in PLACEHOLDER.finditer(message):
        before = message[max(0, m.start() - 1):m.start()]
        after = message[m.end():m.end() + 1]
        if m.group(1) in "sTB" and not (before in "'\"`" and after in "'\"`"):
            return False
    return True


def entries(path):
    """(name, English message) of each catalog entry with placeholders-or-text worth grouping."""
    name = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            head = re.match(r"^([A-Z][A-Z0-9_]+)(\s|$)", line)
            if head:
                name = head.group(1)
                continue
            eng = re.match(r'^\s+eng "(.*)"\s*$', line)
            if eng and name:
                message = eng.group(1).replace('\\"', '"').replace("\\n", " ").strip()
                if len(message.split()) >= 2:
                    yield name, message
                name = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("errmsg")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-entry", type=int, default=8)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rows = {"dev": [], "holdout": []}
    for name, message in entries(args.errmsg):
        half = corpus_split.half(name)
        clear = is_clear(message)
        for i in range(args.per_entry):
            # The label is the catalog's format string: entries that share one are one template.
            rows[half].append((corpus_split.fill(message, PLACEHOLDER, value, rng), message, i, clear))
    corpus_split.write(rows, args.out, "Catalog", [("all", lambda r: True), ("learn", lambda r: r[2] % 2 == 1), ("test", lambda r: r[2] % 2 == 0), ("clear", lambda r: r[3])])
    for half, lines in rows.items():
        print(f"{half}: {len(lines)} messages, {len({r[1] for r in lines})} entries, {len({r[1] for r in lines if r[3]})} clear")


if __name__ == "__main__":
    main()
