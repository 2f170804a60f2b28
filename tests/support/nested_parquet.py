"""Writes JSON lines as Parquet with nested columns, as pyarrow infers them, plus a map column.

usage: nested_parquet.py IN.jsonl OUT.parquet MAPFIELD

Objects become structs, arrays lists; MAPFIELD (an object of text in every line) is written as a
Parquet MAP<string, string> instead of a struct.
"""
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq

rows = [json.loads(l) for l in open(sys.argv[1])]
map_field = sys.argv[3]
maps = [list(r.pop(map_field).items()) for r in rows]
table = pa.Table.from_pylist(rows)
table = table.append_column(map_field, pa.array(maps, pa.map_(pa.string(), pa.string())))
pq.write_table(table, sys.argv[2])
