"""A clickstream pipeline on Spark, on the embedded default store: one command.

    python docs/examples/clickstream_pipeline.py

1. Generates ``--events`` click events (``user``, ``action``, ``page``, ``referrer``) into the
   stream ``clicks`` of the store ``--store`` (default ``rstore-data``), spread over the last
   ``--minutes`` minutes: each entry's ID is its time (``ms-*``).
2. Spark (local mode by default, ``--master`` for a cluster) reads the stream with
   ``spark.read.format("rstore")`` and computes events per action per minute, and sessions per
   user (a session ends after ``--session-gap`` minutes without an event).
3. Writes both results back into the store as streams (``stats:actions_per_minute``,
   ``stats:sessions_per_user``, one entry per row, with ``format("rstore")``) and as Parquet
   under ``--out`` (default ``clickstream-out``).

``--dumps DIR`` runs the same job over a directory of RDB dumps instead of the store (say, files
written by ``rstore save`` or by valkey-server and copied to storage every executor sees): no
events are generated then, and the results still go to ``--store`` and ``--out``.

Exit status: 0 when the results were written; 1 when the job cannot run (no pyspark, no events
to read, Spark failed); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from typing import Any

import rstore

STREAM = "clicks"
ACTIONS = ("view", "click", "add_to_cart", "purchase")
WEIGHTS = (60, 25, 10, 5)
PAGES = ("/", "/search", *(f"/products/{n}" for n in range(40)), "/cart", "/checkout")
REFERRERS = ("direct", "search", "social", "email")
PER_MINUTE_STREAM = "stats:actions_per_minute"
SESSIONS_STREAM = "stats:sessions_per_user"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Clickstream events in an rstore store -> Spark (events per action per "
        "minute, sessions per user) -> results back into the store and to Parquet.",
        epilog="Example: %(prog)s --events 200000 --users 2000; "
        "rstore save dumps/clicks.rdb && %(prog)s --dumps dumps",
    )
    parser.add_argument("--store", default="rstore-data", help="the store (default: %(default)s)")
    parser.add_argument(
        "--events", type=int, default=100_000, help="events to generate (default: %(default)s)"
    )
    parser.add_argument("--users", type=int, default=1000, help="distinct users (default: 1000)")
    parser.add_argument(
        "--minutes", type=int, default=180, help="time the events span (default: %(default)s)"
    )
    parser.add_argument(
        "--session-gap",
        type=int,
        default=30,
        metavar="MINUTES",
        help="idle time that ends a session (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (reproducible data)")
    parser.add_argument(
        "--out", default="clickstream-out", help="Parquet output directory (default: %(default)s)"
    )
    parser.add_argument(
        "--dumps", default=None, metavar="DIR", help="read RDB dumps in DIR instead of the store"
    )
    parser.add_argument(
        "--master", default="local[*]", help="Spark master URL (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    for name in ("events", "users", "minutes", "session_gap"):
        if getattr(args, name) < (0 if name == "events" else 1):
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def generate(store: rstore.Store, events: int, users: int, minutes: int, seed: int | None) -> int:
    """Append ``events`` events to ``clicks``, stamped over the last ``minutes`` minutes (after
    the stream's last entry, if it already has some).  Returns the stream's length."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    start = now - minutes * 60_000
    if store.exists(STREAM):
        last_ms = int(str(store.xinfo_stream(STREAM)["last-generated-id"]).split("-")[0])
        start = max(start, last_ms + 1)
    span = max(1, minutes * 60_000)
    stamps = sorted(start + rng.randrange(span) for _ in range(events))
    for lo in range(0, events, 1000):
        with store.pipeline() as pipe:  # one transaction per 1000 events
            for ms in stamps[lo : lo + 1000]:
                fields = {
                    "user": f"user-{int(rng.paretovariate(1.2)) % users}",
                    "action": rng.choices(ACTIONS, WEIGHTS)[0],
                    "page": rng.choice(PAGES),
                    "referrer": rng.choice(REFERRERS),
                }
                pipe.xadd(STREAM, fields, id=f"{ms}-*")
            pipe.execute()
    return int(store.xlen(STREAM))


def session(master: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import rstore too
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(master)
        .appName("rstore-clickstream")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from rstore.spark import register

    # format("rstore") also works without this once rstore[spark] is installed; an editable
    # install (pip install -e) hides the module Spark looks for, so register explicitly.
    register(spark)
    return spark


def compute(spark: Any, source: str, gap_minutes: int) -> tuple[Any, Any]:
    """The two results, as DataFrames: events per action per minute, sessions per user."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    clicks = spark.read.format("rstore").option("streams", STREAM).load(source)
    events = clicks.select(
        "ms",
        "seq",
        clicks.fields["user"].alias("user"),
        clicks.fields["action"].alias("action"),
    )
    per_minute = (
        events.groupBy(F.date_trunc("minute", F.timestamp_millis("ms")).alias("minute"), "action")
        .agg(F.count("*").alias("events"))
        .orderBy("minute", "action")
    )
    by_user = Window.partitionBy("user").orderBy("ms", "seq")
    gap = F.col("ms") - F.lag("ms").over(by_user)
    starts = events.withColumn(
        "new_session", (gap.isNull() | (gap > gap_minutes * 60_000)).cast("long")
    )
    sessions = (
        starts.groupBy("user")
        .agg(
            F.sum("new_session").alias("sessions"),
            F.count("*").alias("events"),
            F.timestamp_millis(F.min("ms")).alias("first_seen"),
            F.timestamp_millis(F.max("ms")).alias("last_seen"),
        )
        .orderBy(F.desc("sessions"), "user")
    )
    return per_minute, sessions


def as_entries(df: Any, stream: str) -> Any:
    """One stream entry per row: every column a field (as text), automatic IDs."""
    from pyspark.sql import functions as F

    pairs: list[Any] = []
    for name in df.columns:
        pairs += [F.lit(name), F.col(name).cast("string")]
    return df.select(F.lit(stream).alias("stream"), F.create_map(*pairs).alias("fields"))


def run(args: argparse.Namespace, spark: Any | None = None) -> int:
    source = args.store
    if args.dumps is None:
        with rstore.Store(args.store) as store:
            length = generate(store, args.events, args.users, args.minutes, args.seed)
        print(f"generated {args.events} events into {args.store!r} (stream {STREAM!r}: {length})")
        if length == 0:
            print("nothing to analyse: the stream is empty", file=sys.stderr)
            return 1
    else:
        if not os.path.isdir(args.dumps):
            print(f"--dumps {args.dumps!r}: no such directory", file=sys.stderr)
            return 1
        source = args.dumps
        rstore.Store(args.store).close()  # the results go there: create it if missing
        print(f"reading the RDB dumps in {args.dumps!r}")
    own = spark is None
    if spark is None:
        try:
            spark = session(args.master)
        except ImportError:
            print('pyspark is not installed: pip install "rstore[spark]"', file=sys.stderr)
            return 1
    try:
        t0 = time.perf_counter()
        per_minute, sessions = compute(spark, source, args.session_gap)
        per_minute.cache()
        sessions.cache()
        minutes, users = per_minute.count(), sessions.count()
        if users == 0:
            print(f"no entries of stream {STREAM!r} in {source!r}", file=sys.stderr)
            return 1
        print(f"\nevents per action per minute ({minutes} rows; the first 10):")
        per_minute.show(10, truncate=False)
        print(f"sessions per user ({users} users; the 10 with most sessions):")
        sessions.show(10, truncate=False)
        for df, stream, name in (
            (per_minute, PER_MINUTE_STREAM, "actions_per_minute"),
            (sessions, SESSIONS_STREAM, "sessions_per_user"),
        ):
            as_entries(df, stream).write.format("rstore").mode("append").save(args.store)
            df.write.mode("overwrite").parquet(os.path.join(args.out, f"{name}.parquet"))
        took = time.perf_counter() - t0
    except Exception as exc:  # a failed Spark job: say what failed, in one line, and exit 1
        print(f"the Spark job failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if own:
            spark.stop()
    print(
        f"wrote {minutes} + {users} entries to streams {PER_MINUTE_STREAM!r} and "
        f"{SESSIONS_STREAM!r} of {args.store!r}, and Parquet to {args.out!r}/ ({took:.1f} s)"
    )
    return 0


def main(argv: list[str] | None = None, spark: Any | None = None) -> int:
    return run(parse_args(argv), spark)


if __name__ == "__main__":
    sys.exit(main())
