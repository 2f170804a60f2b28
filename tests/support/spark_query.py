"""Runs a SQL file on Spark SQL (local mode) over a Parquet file registered as view `dlq`;
prints rows as JSON.

usage: spark_query.py QUERY.sql DUMP.parquet
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
spark.read.parquet(sys.argv[2]).createOrReplaceTempView("dlq")
with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
rows = [row.asDict() for row in spark.sql(text).collect()]
print(json.dumps(rows))
spark.stop()
