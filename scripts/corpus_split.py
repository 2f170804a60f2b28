"""What catalog_corpus.py and resx_corpus.py share: placeholders filled by a catalog's own
value maker, entries split into dev and holdout halves by a hash of their name, and each
half's messages written as Loghub-style CSVs, one subset a folder.
"""
import csv
import hashlib
import os


def half(name):
    """`dev` or `holdout`, by the first byte of the SHA-256 of the entry's name."""
    return "holdout" if hashlib.sha256(name.encode()).digest()[0] % 2 else "dev"


def fill(message, placeholder, value, rng):
    """`message` with each `placeholder` match replaced by value(its first group, whether a
    quote stands before it, rng)."""
    def one(m):
        before = message[max(0, m.start() - 1):m.start()]
        return value(m.group(1), before in "'\"`", rng)
    return placeholder.sub(one, message)


def write(rows, out, prefix, subsets):
    """Each half's rows ((content, template, …) tuples) as OUT/<half>/<subset>/<prefix>-<half>-
    <subset>.csv with LineId, Content and EventTemplate columns, for each (subset, keep)."""
    for name, lines in rows.items():
        for subset, keep in subsets:
            folder = os.path.join(out, name, subset)
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"{prefix}-{name}-{subset}.csv"), "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["LineId", "Content", "EventTemplate"])
                for n, r in enumerate(r for r in lines if keep(r)):
                    w.writerow([n + 1, r[0], r[1]])
