#!/usr/bin/env python3
"""A labelled corpus of error messages from .NET resource catalogs, for grouping_accuracy.py,
shaped as real traffic is: templates occurring 1 to 30 times (skewed), values of one to
several words.

usage: resx_corpus.py RESX... OUT_DIR [--seed S]

Each RESX is a .NET resource file (`<data name="…"><value>…</value></data>`), such as Entity
Framework Core's `src/*/Properties/*Strings.resx` (`dotnet/efcore`; not in this repository),
whose messages have composite-format placeholders (`{0}`, `{entityType}`, `{1:N0}`). Each message with a
placeholder is one template, labelled with its text; it occurs a skewed number of times (most
once or a few times, a few up to 30), each occurrence with its placeholders filled as their
names say: a number for a count, size or time (`{rowCount}`, `{elapsed}`), true or false for a
flag (`{isCyclic}`), a name inside quotes, and outside them a value of one to several words
(type names such as `timestamp with time zone`, reasons such as `the connection was closed`,
member chains, names).
Templates are split in two by a hash of their name: `dev` (the half to look at while working)
and `holdout` (looked at once, at the end); each template's occurrences alternate between
`learn` and `test`, so templates are learned on one half of each template's messages and
measured on the other.

Writes OUT_DIR/{dev,holdout}/{all,learn,test}/<Name>.csv with Content and EventTemplate columns.
"""
import argparse
import html
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_split  # noqa: E402

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*|\d+)(?::[^}]*)?\}")

NAMES = ["Order", "Customer", "Invoice", "OrderLine", "Payment", "Shipment", "Product", "Cart", "Refund", "Tenant",
         "Address", "AuditEntry", "Session", "LedgerEntry", "Subscription"]
MEMBERS = ["Id", "CustomerId", "CreatedAt", "Total", "Status", "Email", "Lines", "ShippingAddress", "RowVersion", "TenantId"]
PHRASES = [
    "timestamp with time zone", "double precision", "character varying(255)", "nvarchar(max)", "decimal(18,2)", "bigint",
    "the connection was closed", "a timeout expired", "the transaction was rolled back", "the operation was canceled",
    "deadlock detected", "out of memory", "access denied", "no such table", "the query returned no rows",
    "o => o.Customer.Address", "c => c.Orders", "x => x.Lines.Count", "System.Int32", "System.String",
    "Microsoft.EntityFrameworkCore.SqlServer", "Npgsql.EntityFrameworkCore.PostgreSQL", "SQL Server", "SQLite",
    "Cosmos DB", "in memory", "owned entity type", "shadow property", "primary key", "foreign key", "unique index",
]


NUMERIC = re.compile(r"count|rows|number|elapsed|seconds|milliseconds|min|max|start|increment|length|size|index|timeout|port|line|position|version", re.I)


def value(name, quoted, rng):
    """A value for a placeholder, as its name says: a number for a count or a time, true or
    false for a flag, a name inside quotes; outside, one to several words."""
    if NUMERIC.search(name):
        return str(rng.choice([rng.randint(0, 9), rng.randint(10, 999), rng.randint(1000, 10**6)]))
    if re.match(r"(is|has|can|should)[A-Z]", name):
        return rng.choice(["True", "False"])
    if quoted:
        pick = rng.random()
        if pick < 0.5:
            return rng.choice(NAMES)
        if pick < 0.8:
            return f"{rng.choice(NAMES)}.{rng.choice(MEMBERS)}"
        return rng.choice(MEMBERS)
    pick = rng.random()
    if pick < 0.25:
        return rng.choice(NAMES)
    if pick < 0.35:
        return str(rng.choice([rng.randint(0, 9), rng.randint(10, 999), rng.randint(1000, 10**6)]))
    if pick < 0.45:
        return f"{rng.choice(NAMES)}.{rng.choice(MEMBERS)}"
    return rng.choice(PHRASES)


def entries(path):
    """(name, message) of each resource whose message has a placeholder."""
    text = open(path, encoding="utf-8-sig", errors="replace").read()
    for m in re.finditer(r'<data name="([^"]+)"[^>]*>\s*<value>(.*?)</value>', text, re.S):
        message = " ".join(html.unescape(m.group(2)).split())
        if PLACEHOLDER.search(message) and len(message.split()) >= 3:
            yield f"{os.path.basename(path)}:{m.group(1)}", message


def occurrences(rng):
    """How often a template occurs: 1 to 30, most seldom (a power law)."""
    return min(30, int(1 / (1 - rng.random()) ** 1.1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    *resx, out = args.paths
    rng = random.Random(args.seed)
    rows = {"dev": [], "holdout": []}
    seen = set()
    for path in resx:
        for name, message in entries(path):
            # Resources that share a message are one template.
            if message in seen:
                continue
            seen.add(message)
            half = corpus_split.half(name)
            for i in range(occurrences(rng)):
                rows[half].append((corpus_split.fill(message, PLACEHOLDER, value, rng), message, i))
    corpus_split.write(rows, out, "Resx", [("all", lambda r: True), ("learn", lambda r: r[2] % 2 == 1), ("test", lambda r: r[2] % 2 == 0)])
    for half, lines in rows.items():
        print(f"{half}: {len(lines)} messages, {len({r[1] for r in lines})} templates")


if __name__ == "__main__":
    main()
