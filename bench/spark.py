"""rstore on Spark beside the paths users take today, side by side in one run.

1M entries (``--entries``) of the usual three fields (``user``, ``action``, ``page``; the
values vary: 5 actions, 100 pages, 90k users) in one stream ``bench``, with the same explicit
IDs everywhere, held at once by an rstore store, Parquet files of the same rows and schema
(4 files, written by pyarrow), a valkey-server (loaded with redis-py pipelines of 1000) and
valkey's ``dump.rdb`` of it.  The query is ``groupBy(fields["action"]).count()``, collected.

* full read with a noop sink: ``format("rstore").load(store)`` against the Parquet files
  (target >= 0.5x);
* ``groupBy(action).count()``: the store against the Parquet files (>= 0.35x);
* the same query end to end: the store against valkey + redis-py XRANGE pages of 1000 ->
  pandas -> ``createDataFrame`` -> the query (>= 8x);
* the same query on valkey's ``dump.rdb`` against the same valkey path (>= 6x);
* DataFrame -> stream, every row: ``write.format("rstore")`` into an empty store against
  ``foreachPartition`` + redis-py pipelines of 1000 XADD into valkey (>= 3x);
* the query over a directory of 4 dumps (written by ``Store.save``): a standalone cluster
  (master + 2 workers of 1 core, started with pyspark's launcher) against ``local[2]`` on the
  same files (reported).

Ratios are peer time / rstore time (>1: rstore is faster).  Each side gets one warm-up run,
then ``--repeat`` timed runs, sides alternating; the best time of each side is reported (and
its median).  Every answer is checked against the counts the generator knows.  The Spark
session is ``local[2]`` (UI off, 2 shuffle partitions, 2 GiB driver), started before any
timing: session start-up is in no figure.  Nothing is pinned to a CPU.

    python bench/spark.py                     # 1M entries, 3 timed runs per side (~6 min)
    python bench/spark.py --entries 100000 --repeat 2 --json /tmp/spark.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import redis
from common import STREAM, Valkey, exit_on_sigterm, write_json

import rstore

sys.path.append(str(Path(__file__).resolve().parent.parent / "fixtures"))
from spark_cluster import SparkCluster, cluster_missing
from valkey_server import HOST

ACTIONS = ("view", "click", "scroll", "add_to_cart", "purchase")
BASE_MS = 1_700_000_000_000
PER_MS = 10  # entries per millisecond: IDs BASE_MS+i//10 - i%10
DUMP_FILES = 4
SCHEMA = "stream string, id string, ms bigint, seq bigint, fields map<string,string>"
PAGE = list[tuple[str, dict[str, str]]]  # an XRANGE page, decoded
TARGETS = {"full": 0.5, "group": 0.35, "e2e": 8.0, "dump": 6.0, "write": 3.0}


# ----------------------------------------------------------------------------- the data


def fields_of(i: int) -> dict[str, str]:
    """Entry ``i``'s fields: the usual three, with varying values."""
    return {
        "user": str(10000 + (i * 7919) % 90000),
        "action": ACTIONS[(i + i // 7) % len(ACTIONS)],
        "page": f"/products/{i % 100}",
    }


def id_of(i: int) -> str:
    return f"{BASE_MS + i // PER_MS}-{i % PER_MS}"


def expected_counts(n: int) -> dict[str, int]:
    return dict(Counter(fields_of(i)["action"] for i in range(n)))


def load_valkey(client: redis.Redis, n: int, stream: str = STREAM, first: int = 0) -> None:
    pipe = client.pipeline(transaction=False)
    for i in range(first, first + n):
        pipe.xadd(stream, fields_of(i), id=id_of(i))  # type: ignore[arg-type]
        if (i + 1) % 1000 == 0:
            pipe.execute()
    pipe.execute()


def load_store(store: rstore.Store, n: int, stream: str, first: int = 0) -> None:
    for lo in range(first, first + n, 1000):
        with store.pipeline() as pipe:
            for i in range(lo, min(lo + 1000, first + n)):
                pipe.xadd(stream, fields_of(i), id=id_of(i))
            pipe.execute()


def write_parquet(directory: str, n: int, files: int = 4) -> None:
    """The same rows as the store, in the schema the rstore source reads, as ``files`` files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kv = pa.map_(pa.string(), pa.string())
    os.makedirs(directory)
    step = -(-n // files)
    for f, lo in enumerate(range(0, n, step)):
        idx = range(lo, min(lo + step, n))
        keys: list[str] = []
        values: list[str] = []
        for i in idx:
            for k, v in fields_of(i).items():
                keys.append(k)
                values.append(v)
        offsets = pa.array(range(0, 3 * len(idx) + 1, 3), pa.int32())
        table = pa.table(
            {
                "stream": pa.array([STREAM] * len(idx), pa.string()),
                "id": pa.array([id_of(i) for i in idx], pa.string()),
                "ms": pa.array([BASE_MS + i // PER_MS for i in idx], pa.int64()),
                "seq": pa.array([i % PER_MS for i in idx], pa.int64()),
                "fields": pa.MapArray.from_arrays(
                    offsets, pa.array(keys, pa.string()), pa.array(values, pa.string()), type=kv
                ),
            }
        )
        pq.write_table(table, os.path.join(directory, f"part-{f}.parquet"))


# ----------------------------------------------------------------------------- Spark


def new_session(master: str, work: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", HOST)
    jvm = "-XX:+UseSerialGC"
    builder = (
        SparkSession.builder.master(master)
        .appName("rstore-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.executor.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
        .config("spark.local.dir", os.path.join(work, "spark-local"))
        .config("spark.driver.extraJavaOptions", jvm)
        .config("spark.executor.extraJavaOptions", jvm)
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    from rstore.spark import register

    register(session)
    return session


def group_counts(df: Any) -> dict[str, int]:
    """The query: ``groupBy(fields["action"]).count()``, collected."""
    rows = df.groupBy(df.fields["action"].alias("action")).count().collect()
    return {r["action"]: int(r["count"]) for r in rows}


def valkey_path(spark: Any, port: int) -> dict[str, int]:
    """What users do today: XRANGE pages of 1000 through redis-py, into pandas, into Spark."""
    import pandas as pd

    client = redis.Redis(host=HOST, port=port, protocol=2, decode_responses=True)
    streams: list[str] = []
    ids: list[str] = []
    ms: list[int] = []
    seq: list[int] = []
    fields: list[dict[str, str]] = []
    start = "-"
    try:
        while True:
            page = cast(PAGE, client.xrange(STREAM, min=start, count=1000))
            for entry_id, entry_fields in page:
                a, _, b = entry_id.partition("-")
                streams.append(STREAM)
                ids.append(entry_id)
                ms.append(int(a))
                seq.append(int(b))
                fields.append(entry_fields)
            if len(page) < 1000:
                break
            start = "(" + page[-1][0]
    finally:
        client.close()
    pdf = pd.DataFrame({"stream": streams, "id": ids, "ms": ms, "seq": seq, "fields": fields})
    return group_counts(spark.createDataFrame(pdf, schema=SCHEMA))


def foreach_partition_writer(port: int) -> Callable[[Iterator[Any]], None]:
    """The function users pass to ``foreachPartition``: pipelines of 1000 XADD into valkey."""

    def write(rows: Iterator[Any]) -> None:
        import redis as redis_in_executor

        client = redis_in_executor.Redis(host=HOST, port=port, protocol=2)
        pipe = client.pipeline(transaction=False)
        for n, row in enumerate(rows, 1):
            pipe.xadd(row["stream"], row["fields"])
            if n % 1000 == 0:
                pipe.execute()
        pipe.execute()
        client.close()

    return write


# ----------------------------------------------------------------------------- timing


def timed(
    sides: dict[str, Callable[[], object]],
    repeat: int,
    check: Callable[[str, object], None],
    before: Callable[[str], None] | None = None,
) -> dict[str, list[float]]:
    """One warm-up run per side, then ``repeat`` timed runs, the order flipping each round.
    ``before(side)`` runs untimed before every run; ``check`` sees every answer."""
    names = list(sides)
    out: dict[str, list[float]] = {name: [] for name in names}
    for rnd in range(repeat + 1):
        for name in names if rnd % 2 == 0 else reversed(names):
            if before is not None:
                before(name)
            t0 = time.perf_counter()
            answer = sides[name]()
            took = time.perf_counter() - t0
            check(name, answer)
            if rnd > 0:
                out[name].append(took)
    return out


def row(
    workload: str, times: dict[str, list[float]], mine: str, peer: str, target: float | None
) -> dict[str, Any]:
    best = {side: min(ts) for side, ts in times.items()}
    return {
        "workload": workload,
        "rstore_side": mine,
        "peer_side": peer,
        "rstore_s": best[mine],
        "peer_s": best[peer],
        "rstore_median_s": statistics.median(times[mine]),
        "peer_median_s": statistics.median(times[peer]),
        "ratio": best[peer] / best[mine],
        "target": target,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| workload | rstore side | peer | rstore best (median) | peer best (median) "
        "| peer / rstore | target | met? |",
        "|---|---|---|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        target = r["target"]
        met = "—" if target is None else ("yes" if r["ratio"] >= target else "**no**")
        lines.append(
            f"| {r['workload']} | {r['rstore_side']} | {r['peer_side']} "
            f"| {r['rstore_s']:.2f} s ({r['rstore_median_s']:.2f}) "
            f"| {r['peer_s']:.2f} s ({r['peer_median_s']:.2f}) | {r['ratio']:.2f}x "
            f"| {'reported' if target is None else f'≥ {target:g}x'} | {met} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the run


def run(n: int, repeat: int, work: str, cluster: bool) -> dict[str, Any]:
    expected = expected_counts(n)

    def check_counts(side: str, answer: object) -> None:
        if answer != expected:
            raise RuntimeError(f"{side} answered {answer!r}, expected {expected!r}")

    t0 = time.perf_counter()
    store_path = os.path.join(work, "store")
    parquet = os.path.join(work, "parquet")
    dumps = os.path.join(work, "dumps")
    os.makedirs(dumps)
    rows: list[dict[str, Any]] = []
    with Valkey("no", base_dir=work, appendonly=False) as valkey:
        client = valkey.client()
        load_valkey(client, n)
        client.save()
        dump = os.path.join(work, "valkey.rdb")
        shutil.copy(os.path.join(valkey.dir, "dump.rdb"), dump)
        with rstore.Store(store_path, sync=False) as store:
            store.restore_file(dump)
        per_file = -(-n // DUMP_FILES)
        for k, lo in enumerate(range(0, n, per_file)):
            with rstore.Store(os.path.join(work, f"part-{k}"), sync=False) as part:
                load_store(part, min(per_file, n - lo), f"{STREAM}:{k}", first=lo)
                part.save(os.path.join(dumps, f"part-{k}.rdb"))
            shutil.rmtree(os.path.join(work, f"part-{k}"))
        write_parquet(parquet, n)
        print(f"# data ready in {time.perf_counter() - t0:.1f} s", flush=True)

        spark = new_session("local[2]", work)
        try:

            def rstore_df() -> Any:
                return spark.read.format("rstore").load(store_path)

            def noop(df: Any) -> int:
                df.write.format("noop").mode("overwrite").save()
                return n

            def check_n(side: str, answer: object) -> None:
                if answer != n:
                    raise RuntimeError(f"{side}: {answer!r} rows, expected {n}")

            full = timed(
                {
                    "store": lambda: noop(rstore_df()),
                    "parquet": lambda: noop(spark.read.parquet(parquet)),
                },
                repeat,
                check_n,
            )
            rows.append(row("full read, noop sink", full, "store", "parquet", TARGETS["full"]))
            print(table(rows[-1:]), flush=True)
            group = timed(
                {
                    "store": lambda: group_counts(rstore_df()),
                    "parquet": lambda: group_counts(spark.read.parquet(parquet)),
                },
                repeat,
                check_counts,
            )
            rows.append(row("groupBy(action).count()", group, "store", "parquet", TARGETS["group"]))
            print(table(rows[-1:]), flush=True)
            e2e = timed(
                {
                    "store": lambda: group_counts(rstore_df()),
                    "dump": lambda: group_counts(spark.read.format("rstore").load(dump)),
                    "valkey": lambda: valkey_path(spark, valkey.port),
                },
                max(1, repeat - 1),  # the valkey path takes ~20 s a run at 1M entries
                check_counts,
            )
            rows.append(
                row("the query, end to end", e2e, "store", "valkey", TARGETS["e2e"])
                | {"peer_side": "valkey XRANGE -> pandas -> createDataFrame"}
            )
            rows.append(
                row("the query on a dump, end to end", e2e, "dump", "valkey", TARGETS["dump"])
                | {"peer_side": "valkey XRANGE -> pandas -> createDataFrame"}
            )
            print(table(rows[-2:]), flush=True)

            source = spark.read.parquet(parquet).select("stream", "fields").cache()
            source.count()
            targets: dict[str, str] = {}

            def fresh(side: str) -> None:
                if side == "store":
                    target = tempfile.mkdtemp(prefix="bench-spark-write-", dir=work)
                    targets["store"] = os.path.join(target, "s")
                else:
                    client.delete(STREAM)

            def write_store() -> int:
                source.write.format("rstore").mode("append").save(targets["store"])
                with rstore.Store(targets["store"], readonly=True) as written:
                    return int(written.xlen(STREAM))

            def write_valkey() -> int:
                source.foreachPartition(foreach_partition_writer(valkey.port))
                return int(client.xlen(STREAM))

            written = timed(
                {"store": write_store, "valkey": write_valkey}, repeat, check_n, before=fresh
            )
            source.unpersist()
            rows.append(
                row(
                    f"DataFrame -> stream, {n:,} rows", written, "store", "valkey", TARGETS["write"]
                )
                | {"peer_side": "foreachPartition + redis-py pipelines of 1000 XADD"}
            )
            print(table(rows[-1:]), flush=True)

            def dumps_query() -> dict[str, int]:
                return group_counts(spark.read.format("rstore").load(dumps))

            local = timed({"local[2]": dumps_query}, repeat, check_counts)
        finally:
            spark.stop()
    if cluster:
        missing = cluster_missing()
        if missing:
            print(f"# no cluster row: {missing}")
        else:
            with SparkCluster(workers=2, cores=1, memory="1500m", temp_parent=work) as c:
                spark = new_session(c.url, work)
                try:
                    remote = timed({"cluster": dumps_query}, repeat, check_counts)
                finally:
                    spark.stop()
            rows.append(
                row(
                    f"a directory of {DUMP_FILES} dumps, the query",
                    {**local, **remote},
                    "cluster",
                    "local[2]",
                    None,
                )
                | {"rstore_side": "standalone cluster, 2 workers x 1 core"}
            )
            print(table(rows[-1:]), flush=True)
    return {"entries": n, "repeat": repeat, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="default: %(default)s")
    parser.add_argument(
        "--repeat", type=int, default=3, metavar="N", help="timed runs per side (default: 3)"
    )
    parser.add_argument("--dir", default=None, help="parent of the temporary files")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write results here")
    parser.add_argument("--no-cluster", action="store_true", help="skip the standalone cluster")
    args = parser.parse_args(argv)
    if args.entries < DUMP_FILES or args.repeat < 1:
        parser.error("--entries must be at least 4 and --repeat at least 1")
    work = tempfile.mkdtemp(prefix="bench-spark-", dir=args.dir)
    load_before = os.getloadavg()
    try:
        report = run(args.entries, args.repeat, work, cluster=not args.no_cluster)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["load_average"] = {"start": load_before, "end": os.getloadavg()}
    print()
    print(
        f"{args.entries:,} entries; best of {args.repeat} timed runs after a warm-up "
        f"(the end-to-end rows: of {max(1, args.repeat - 1)}); rstore {rstore.__file__}; "
        f"load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in load_before)} at the "
        f"start, {', '.join(f'{x:.2f}' for x in report['load_average']['end'])} at the end"
    )
    print()
    print(table(report["rows"]))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
