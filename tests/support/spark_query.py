"""Runs SQL files on Spark SQL (local mode) over a Parquet file registered as view `dlq`;
prints a JSON array holding each file's rows (an array of row objects), in the order given.

usage: spark_query.py DUMP.parquet QUERY.sql...
"""
import json
import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
from pyspark.sql import SparkSession  # noqa: E402

spark = (
    SparkSession.builder.master("local[2]")
    .appName("dlqf-test")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
spark.read.parquet(sys.argv[1]).createOrReplaceTempView("dlq")
results = []
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as f:
        results.append([row.asDict() for row in spark.sql(f.read()).collect()])
print(json.dumps(results))
spark.stop()
