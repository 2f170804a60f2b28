"""Runs a SQL file on DuckDB over a Parquet file registered as view `dlq`; prints rows as JSON.

usage: duckdb_query.py QUERY.sql DUMP.parquet
"""
import json
import sys

import duckdb

con = duckdb.connect()
con.execute(f"CREATE VIEW dlq AS SELECT * FROM read_parquet('{sys.argv[2]}')")
cursor = con.execute(open(sys.argv[1], encoding="utf-8").read())
names = [d[0] for d in cursor.description]
print(json.dumps([dict(zip(names, row)) for row in cursor.fetchall()]))
