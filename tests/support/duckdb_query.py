"""Runs SQL files on DuckDB over a Parquet file registered as view `dlq`; prints a JSON array
holding each file's rows (an array of row objects), in the order the files were given.

usage: duckdb_query.py DUMP.parquet QUERY.sql...
"""
import json
import sys

import duckdb

con = duckdb.connect()
con.execute(f"CREATE VIEW dlq AS SELECT * FROM read_parquet('{sys.argv[1]}')")
results = []
for path in sys.argv[2:]:
    cursor = con.execute(open(path, encoding="utf-8").read())
    names = [d[0] for d in cursor.description]
    results.append([dict(zip(names, row)) for row in cursor.fetchall()])
print(json.dumps(results))
