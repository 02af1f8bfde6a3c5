"""The job of the cluster test, run the same way in local mode (the ``spark`` fixture) and as
the driver of a standalone cluster (``python tests/spark/cluster_job.py MASTER IN OUT JSON``).

It reads a directory of RDB dumps with ``format("rstore")``, collects every entry, counts the
events per stream and action, notes which processes did the work, and writes the entries back
as RDB files with ``option("output", "rdb")``.  The answers are plain JSON-able lists.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any


def ancestors() -> list[int]:
    """This process's PID and its ancestors' (from /proc), nearest first."""
    chain = [os.getpid()]
    while chain[-1] > 1:
        with open(f"/proc/{chain[-1]}/stat", encoding="utf-8") as f:
            chain.append(int(f.read().rsplit(")", 1)[1].split()[1]))
    return chain


def run_job(spark: Any, inputs: str, output: str) -> dict[str, Any]:
    df = spark.read.format("rstore").load(inputs)
    entries = sorted(
        [r["stream"], r["id"], sorted([k, v] for k, v in r["fields"].items())] for r in df.collect()
    )
    per_action = sorted(
        [r["stream"], r["action"], int(r["count"])]
        for r in df.groupBy("stream", df.fields["action"].alias("action")).count().collect()
    )

    # Which Python processes handled the rows, and their ancestors: in a standalone cluster an
    # executor JVM is a child of its worker, and Python workers descend from their executor.
    def where_and_how_many(rows: Iterator[Any]) -> list[list[Any]]:
        # defined here, so that Spark ships it by value: executors cannot import this module
        chain = [os.getpid()]
        while chain[-1] > 1:
            with open(f"/proc/{chain[-1]}/stat", encoding="utf-8") as f:
                chain.append(int(f.read().rsplit(")", 1)[1].split()[1]))
        return [[chain, sum(1 for _ in rows)]]

    where = df.rdd.mapPartitions(where_and_how_many)
    df.select("stream", "id", "fields").write.format("rstore").option("output", "rdb").mode(
        "append"
    ).save(output)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # not the driver
    return {
        "entries": entries,
        "per_action": per_action,
        "tasks": where.collect(),
        "driver_pid": os.getpid(),
        "executors": executors,
    }


def main(master: str, inputs: str, output: str, answer: str) -> None:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    jvm = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    spark = (
        SparkSession.builder.master(master)
        .appName("rstore-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "512m")
        .config("spark.executor.memory", "512m")
        .config("spark.driver.extraJavaOptions", jvm)
        .config("spark.executor.extraJavaOptions", jvm)
        # both executors registered before the first job, so both get tasks
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from rstore.spark import register

    register(spark)  # explicit, as in the tests' fixture: an editable install hides pyspark_rstore
    try:
        result = run_job(spark, inputs, output)
    finally:
        spark.stop()
    with open(answer, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:5])
