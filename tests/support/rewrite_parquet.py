"""Rewrites a Parquet file with pyarrow, in the encodings other writers produce, for reading
the same rows through every decoding path.

usage: rewrite_parquet.py IN.parquet OUT.parquet [--plain] [--page-version 1.0|2.0]
           [--dictionary-page-limit BYTES] [--data-page-size BYTES] [--compression C]
           [--row-group-rows N] [--native-times ms|us|ns]
"""
import argparse
import datetime
import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

parser = argparse.ArgumentParser()
parser.add_argument("source")
parser.add_argument("target")
parser.add_argument("--plain", action="store_true", help="no dictionary encoding at all")
parser.add_argument("--page-version", default="1.0")
parser.add_argument("--dictionary-page-limit", type=int, default=1 << 20,
                    help="a dictionary larger than this falls back to plain pages mid-chunk")
parser.add_argument("--data-page-size", type=int, default=1 << 20)
parser.add_argument("--compression", default="zstd")
parser.add_argument("--row-group-rows", type=int, default=None)
parser.add_argument("--native-times", choices=["ms", "us", "ns"],
                    help="capture_timestamp as a native UTC timestamp column (unreadable: null)")
args = parser.parse_args()

table = pq.read_table(args.source)
if args.native_times:
    def instant(text):
        try:
            return datetime.datetime.fromisoformat(text.strip())
        except (AttributeError, ValueError):
            return None

    times = [instant(t) for t in table.column("capture_timestamp").to_pylist()]
    column = pa.array(times, type=pa.timestamp(args.native_times, tz="UTC"))
    table = table.set_column(table.schema.get_field_index("capture_timestamp"), "capture_timestamp", column)
pq.write_table(
    table,
    args.target,
    use_dictionary=not args.plain,
    data_page_version=args.page_version,
    dictionary_pagesize_limit=args.dictionary_page_limit,
    data_page_size=args.data_page_size,
    compression=args.compression,
    row_group_size=args.row_group_rows,
)
# Say what the first row group's chunks hold, so a test can check the file is what it meant:
# per column, the dictionary page's size (0: none) and the size its distinct values take
# in PLAIN form; a dictionary page smaller than that (uncompressed) left values to plain pages.
meta = pq.ParquetFile(args.target).metadata
first = pq.ParquetFile(args.target).read_row_group(0)
chunks = {}
for c in range(meta.num_columns):
    column = meta.row_group(0).column(c)
    dictionary = column.data_page_offset - column.dictionary_page_offset if column.has_dictionary_page else 0
    values = pc.unique(first.column(column.path_in_schema)).drop_null()
    distinct = sum(4 + len(str(v).encode()) for v in values.to_pylist())
    chunks[column.path_in_schema] = {"dictionary_bytes": dictionary, "distinct_bytes": distinct}
print(json.dumps(chunks))
