"""dlqf as Spark's per-partition operator: the dumps are spread over tasks, each task runs
`dlqf rank --format state` over its dumps and hands the state back as text lines, and the
driver merges every state into one with dlqf. Any dlqf report drawn from that state is the
exact report of one dlqf run over every dump, for every profile.

usage: spark-submit [--files dlqf] dlqf_states.py --out merged.state [--dlqf PATH]
                    [--partitions N] [--option=VALUE ...] DUMP|FOLDER|@LIST ...

  DUMP     a dump file or s3:// object, as dlqf reads it (on the executors)
  FOLDER   a local folder, walked on the driver (every file under it)
  @LIST    a text file with one dump per line (e.g. from `aws s3 ls --recursive`)
  --dlqf   the dlqf binary: a path present on every node, or the name of a file shipped
           with `spark-submit --files` (default: dlqf, shipped or on PATH)
  --option=VALUE   passed to every dlqf run (e.g. --profile=envelope, --classification=rules.toml)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from pyspark import SparkFiles
from pyspark.sql import SparkSession


def dumps(arguments):
    """Every dump named by the arguments, sorted, each once."""
    found = set()
    for arg in arguments:
        if arg.startswith("@"):
            with open(arg[1:], encoding="utf-8") as f:
                found.update(line.strip() for line in f if line.strip())
        elif os.path.isdir(arg):
            for root, _, names in os.walk(arg):
                found.update(os.path.join(root, n) for n in names if not n.startswith((".", "_")))
        else:
            found.add(arg)
    return sorted(found)


def binary(name):
    """The dlqf binary on this node: as given, shipped with --files, or on PATH."""
    if os.path.isabs(name) and os.path.exists(name):
        return name
    try:
        shipped = SparkFiles.get(os.path.basename(name))
        if os.path.exists(shipped):
            os.chmod(shipped, 0o755)
            return shipped
    except Exception:  # no SparkContext files on this node
        pass
    return shutil.which(name) or name


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="where the driver writes the merged state (path or s3://)")
    parser.add_argument("--dlqf", default="dlqf")
    parser.add_argument("--partitions", type=int, default=0, help="tasks (default: Spark's default parallelism)")
    args, rest = parser.parse_known_args()
    options = [a for a in rest if a.startswith("--")]
    inputs = dumps(a for a in rest if not a.startswith("--"))
    if not inputs:
        sys.exit("no dumps given")

    spark = SparkSession.builder.appName("dlqf-states").getOrCreate()
    context = spark.sparkContext
    partitions = args.partitions or context.defaultParallelism
    name = args.dlqf

    tasks = min(partitions, len(inputs))

    def summarise(index, paths):
        paths = list(paths)
        if not paths:
            return
        # Each task's state names its place, so the merge refuses a set with a task missing.
        part = f"{index + 1}/{tasks}"
        command = [binary(name), "rank", *options, "--no-progress", "--format", "state", "--part", part,
                   "-o", "-", *paths]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"dlqf failed on {len(paths)} dumps ({paths[0]} …): {run.stderr.strip()}")
        yield from run.stdout.splitlines(keepends=True)

    # Each task's state is a run of lines; collect() keeps them together, in partition order.
    # With at least as many dumps as tasks, Spark gives every task one dump or more.
    lines = context.parallelize(inputs, tasks).mapPartitionsWithIndex(summarise).collect()
    with tempfile.TemporaryDirectory() as scratch:
        states = os.path.join(scratch, "tasks.state")
        with open(states, "w", encoding="utf-8") as f:
            f.writelines(lines)
        # The merge checks every state whole and refuses a dump counted twice.
        subprocess.run([binary(name), "rank", *options, "--no-progress", states, "-o", args.out], check=True)
    spark.stop()


if __name__ == "__main__":
    main()
