"""Independent computation of a vision `rank` report with DuckDB, for cross-checking dlqf.

Validation of rows is done here in plain Python (json module, datetime.fromisoformat), the
grouping, normalisation and ordering in DuckDB SQL. Nothing is shared with dlqf's code.

usage: expected_rank.py INPUT.(jsonl|parquet)  -> JSON on stdout
"""
import datetime
import json
import os
import sys
import tempfile

import duckdb

SIG = ["stage", "reject_reason", "registry_revision"]
WS = "' ' || chr(9) || chr(10) || chr(13)"


# The seed's ErrorClassifier message patterns, tried in its order (a vision reason has no
# exception type, so only the patterns can match).
POISON_PATTERNS = ["out of memory", "recursion", "stack overflow", "segmentation fault"]
TRANSIENT_PATTERNS = ["timeout", "connection refused", "temporarily unavailable", "try again", "rate limit", "503", "504"]


def category(reason):
    if any(p in reason.lower() for p in POISON_PATTERNS):
        return "poison"
    if any(p in reason.lower() for p in TRANSIENT_PATTERNS):
        return "transient"
    return "unknown"


def valid_time(value):
    if not isinstance(value, str):
        return False
    try:
        datetime.datetime.fromisoformat(value.strip().replace("z", "Z"))
        return True
    except ValueError:
        return False


def valid_attempts(value):
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return True
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, str):
        try:
            int(value.strip())
            return True
        except ValueError:
            return False
    return False


def valid_row(row):
    if not isinstance(row, dict):
        return False
    for field in SIG:
        if not isinstance(row.get(field), (str, int, float)) or isinstance(row.get(field), bool):
            return False
    if not isinstance(row.get("capture_id"), (str, int)) or isinstance(row.get("capture_id"), bool):
        return False
    return valid_time(row.get("capture_timestamp")) and valid_attempts(row.get("attempts"))


def fmt(ts):
    ts = ts.astimezone(datetime.timezone.utc)
    base = ts.strftime("%Y-%m-%dT%H:%M:%S")
    if ts.microsecond == 0:
        return base + "Z"
    if ts.microsecond % 1000 == 0:
        return "%s.%03dZ" % (base, ts.microsecond // 1000)
    return "%s.%06dZ" % (base, ts.microsecond)


def main():
    path = sys.argv[1]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    if path.endswith(".parquet"):
        con.execute(f"CREATE VIEW raw AS SELECT * FROM read_parquet('{path}')")
        not_null = " AND ".join(f"{c} IS NOT NULL" for c in SIG + ["capture_id"])
        con.execute(
            f"CREATE VIEW dlq AS SELECT * FROM raw WHERE {not_null} "
            "AND TRY_CAST(capture_timestamp AS TIMESTAMPTZ) IS NOT NULL"
        )
        rejected = con.execute("SELECT count(*) FROM raw").fetchone()[0] - con.execute("SELECT count(*) FROM dlq").fetchone()[0]
    else:
        rejected = 0
        tmp = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        with open(path, "rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                except ValueError:
                    rejected += 1
                    continue
                if not valid_row(row):
                    rejected += 1
                    continue
                clean = {c: str(row[c]) for c in SIG + ["capture_id", "capture_timestamp"]}
                tmp.write(json.dumps(clean) + "\n")
        tmp.close()
        columns = ", ".join(f"'{c}': 'VARCHAR'" for c in SIG + ["capture_id", "capture_timestamp"])
        con.execute(f"CREATE VIEW dlq AS SELECT * FROM read_json('{tmp.name}', format='newline_delimited', columns={{{columns}}})")

    rows = con.execute(
        f"""
        WITH norm AS (
            SELECT lower(trim(stage, {WS})) AS s, lower(trim(reject_reason, {WS})) AS r,
                   trim(registry_revision, {WS}) AS v, capture_id AS id,
                   CAST(capture_timestamp AS TIMESTAMPTZ) AS ts
            FROM dlq
        ), ordered AS (
            SELECT *, row_number() OVER (PARTITION BY s, r, v ORDER BY ts, id) AS n FROM norm
        )
        SELECT s, r, v, count(*) AS c, min(ts), max(ts), max(CASE WHEN n = 1 THEN id END)
        FROM ordered GROUP BY s, r, v ORDER BY c DESC, s, r, v
        """
    ).fetchall()
    total = sum(r[3] for r in rows)
    buckets = [
        {
            "rank": i + 1,
            "signature": dict(zip(SIG, r[:3])),
            "count": r[3],
            "share": round(r[3] / total, 4),
            "example_id": r[6],
            "first_seen": fmt(r[4]),
            "last_seen": fmt(r[5]),
            "category": category(r[1]),
        }
        for i, r in enumerate(rows)
    ]
    print(json.dumps({"total": total, "rejected": rejected, "buckets": buckets}))
    if not path.endswith(".parquet"):
        os.unlink(tmp.name)


if __name__ == "__main__":
    main()
