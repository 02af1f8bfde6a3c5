"""A clickstream pipeline on Spark, on the embedded default store: one command.

    python docs/examples/clickstream_pipeline.py

1. Generates ``--events`` click events (``user``, ``action``, ``page``, ``referrer``) into the
   stream ``clicks`` of the store ``--store`` (default ``rstore-data``), spread over the last
   ``--minutes`` minutes: each entry's ID is its time (``ms-*``).  They are written in one
   transaction, and only when ``clicks`` does not exist yet: a rerun analyses the events already
   there (``--regenerate`` replaces them with new ones).
2. Spark (local mode by default, ``--master`` for a cluster) reads the stream with
   ``spark.read.format("rstore")`` and computes events per action per minute, and sessions per
   user (a session ends after ``--session-gap`` minutes without an event).
3. Writes both results back into the store as streams (``stats:actions_per_minute``,
   ``stats:sessions_per_user``, one entry per row, with ``format("rstore")``) and as Parquet
   under ``--out`` (default ``clickstream-out``), one file per million rows.  Both *replace* the
   results of an earlier run: the streams are written under temporary names, then renamed over
   the old ones in one transaction; the Parquet directories are overwritten.

So a rerun on the same store gives the same results, with or without ``--dumps``.

``--dumps DIR`` runs the same job over a directory of RDB dumps instead of the store (say, files
written by ``rstore save`` or by valkey-server and copied to storage every executor sees): no
events are generated then, and the results still go to ``--store`` and ``--out``.

Each step is printed as it starts, and every few seconds while Spark works on it (with Spark's
task counts).  Exit status: 0 when the results were written; 1 when the job cannot run (no
pyspark, no events to read, Spark failed); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import rstore

STREAM = "clicks"
ACTIONS = ("view", "click", "add_to_cart", "purchase")
WEIGHTS = (60, 25, 10, 5)
PAGES = ("/", "/search", *(f"/products/{n}" for n in range(40)), "/cart", "/checkout")
REFERRERS = ("direct", "search", "social", "email")
PER_MINUTE_STREAM = "stats:actions_per_minute"
SESSIONS_STREAM = "stats:sessions_per_user"
#: Where a result stream is written before it replaces the previous one.
NEXT = ":next"
#: Rows per Parquet file (and per task of the write back into the store).
ROWS_PER_FILE = 1_000_000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Clickstream events in an rstore store -> Spark (events per action per "
        "minute, sessions per user) -> results back into the store and to Parquet. "
        f"Reruns give the same results: the events are generated only when the stream "
        f"{STREAM!r} does not exist yet (a rerun analyses those already there), and the "
        "results replace those of an earlier run (streams and Parquet).",
        epilog="Example: %(prog)s --events 200000 --users 2000; "
        "rstore save dumps/clicks.rdb && %(prog)s --dumps dumps",
    )
    parser.add_argument("--store", default="rstore-data", help="the store (default: %(default)s)")
    parser.add_argument(
        "--events",
        type=int,
        default=100_000,
        help=f"events to generate when {STREAM!r} does not exist yet (default: %(default)s)",
    )
    parser.add_argument("--users", type=int, default=1000, help="distinct users (default: 1000)")
    parser.add_argument(
        "--minutes", type=int, default=180, help="time the events span (default: %(default)s)"
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help=f"replace the events of {STREAM!r} with new ones (default: keep those there)",
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
        "--out",
        default="clickstream-out",
        help="Parquet output directory, overwritten (default: %(default)s)",
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
    if args.regenerate and args.dumps is not None:
        parser.error("--regenerate generates events into the store; --dumps reads dumps instead")
    return args


class Progress:
    """Prints each step as it starts, then, while it runs, a line every ``every`` seconds
    with what Spark is doing (the tasks of its active stages, once a session is known)."""

    def __init__(self, every: float = 5.0, out: TextIO | None = None) -> None:
        self.every = every
        self.out = out
        self.start = time.perf_counter()
        self.tracker: Any = None  # Spark's StatusTracker

    def say(self, text: str) -> None:
        elapsed = time.perf_counter() - self.start
        print(f"[{elapsed:6.1f} s] {text}", file=self.out or sys.stdout, flush=True)

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        self.say(f"{what} ...")
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(what, stop), daemon=True)
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join()

    def _beat(self, what: str, stop: threading.Event) -> None:
        began = time.perf_counter()
        while not stop.wait(self.every):
            self.say(f"  still {what} ({time.perf_counter() - began:.0f} s){self._tasks()}")

    def _tasks(self) -> str:
        if self.tracker is None:
            return ""
        try:
            stages = [self.tracker.getStageInfo(i) for i in self.tracker.getActiveStageIds()]
        except Exception:  # the session is stopping: say nothing about it
            return ""
        stages = [s for s in stages if s is not None]
        if not stages:
            return ""
        done = sum(s.numCompletedTasks for s in stages)
        total = sum(s.numTasks for s in stages)
        return f": Spark has done {done} of {total} tasks of {len(stages)} stage(s)"


def generate(store: rstore.Store, events: int, users: int, minutes: int, seed: int | None) -> int:
    """Write ``events`` events into ``clicks`` (a new stream), stamped over the last
    ``minutes`` minutes, in one transaction.  Returns the stream's length."""
    rng = random.Random(seed)
    start = int(time.time() * 1000) - minutes * 60_000
    span = max(1, minutes * 60_000)
    stamps = sorted(start + rng.randrange(span) for _ in range(events))
    entries = [
        (
            STREAM,
            f"{ms}-*",
            [
                *("user", f"user-{int(rng.paretovariate(1.2)) % users}"),
                *("action", rng.choices(ACTIONS, WEIGHTS)[0]),
                *("page", rng.choice(PAGES)),
                *("referrer", rng.choice(REFERRERS)),
            ],
        )
        for ms in stamps
    ]
    store.append_entries(entries)  # all or nothing: a rerun never sees half the events
    return int(store.xlen(STREAM))


def events_into(args: argparse.Namespace, progress: Progress) -> int:
    """The events of ``clicks`` in ``--store``: generated when missing (or ``--regenerate``),
    else those there.  Returns the stream's length."""
    with rstore.Store(args.store) as store:
        if args.regenerate:
            store.delete(STREAM)
        if store.exists(STREAM):
            length = int(store.xlen(STREAM))
            progress.say(
                f"the stream {STREAM!r} of {args.store!r} already holds {length} events: "
                "analysing those (--regenerate replaces them)"
            )
            return length
        with progress.step(f"generating {args.events} events into {args.store!r}"):
            return generate(store, args.events, args.users, args.minutes, args.seed)


def session(master: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import rstore too
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(master)
        .appName("rstore-clickstream")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.session.timeZone", "UTC")
        # Let adaptive execution size the cached results' partitions by their data (a few
        # hundred rows: one partition) instead of keeping spark.sql.shuffle.partitions (200).
        .config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
        .getOrCreate()
    )
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


def replace_streams(spark: Any, store_path: str, results: dict[str, Any]) -> None:
    """Write ``{stream: DataFrame}`` into the store, each replacing the stream of that name:
    one Spark write into ``<stream>:next`` (all or nothing), then one transaction that renames
    each over the old results."""
    with rstore.Store(store_path) as store:
        store.delete(*(stream + NEXT for stream in results))  # left by a run that died
    frames = [as_entries(df, stream + NEXT) for stream, df in results.items()]
    both = frames[0]
    for df in frames[1:]:
        both = both.unionByName(df)
    both.write.format("rstore").mode("append").save(store_path)
    with rstore.Store(store_path) as store:
        replies = store.execute_batch([("RENAME", s + NEXT, s) for s in results])
    failed = [r for r in replies if isinstance(r, Exception)]
    if failed:
        raise failed[0]


def run(args: argparse.Namespace, spark: Any | None = None) -> int:
    progress = Progress()
    source = args.store
    if args.dumps is None:
        if events_into(args, progress) == 0:
            print("nothing to analyse: the stream is empty", file=sys.stderr)
            return 1
    else:
        if not os.path.isdir(args.dumps):
            print(f"--dumps {args.dumps!r}: no such directory", file=sys.stderr)
            return 1
        source = args.dumps
        rstore.Store(args.store).close()  # the results go there: create it if missing
        progress.say(f"reading the RDB dumps in {args.dumps!r}")
    own = spark is None
    if spark is None:
        try:
            with progress.step(f"starting Spark ({args.master})"):
                spark = session(args.master)
        except ImportError:
            print('pyspark is not installed: pip install "rstore[spark]"', file=sys.stderr)
            return 1
    progress.tracker = spark.sparkContext.statusTracker()
    try:
        return _analyse(spark, source, args, progress)
    except Exception as exc:  # a failed Spark job: say what failed, in one line, and exit 1
        print(f"the Spark job failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        progress.tracker = None
        if own:
            spark.stop()


def _analyse(spark: Any, source: str, args: argparse.Namespace, progress: Progress) -> int:
    with progress.step(f"reading {STREAM!r}, computing events per minute and sessions"):
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
    # Few rows: few partitions, so few files and tasks (a Python task costs ~30 ms).
    per_minute = per_minute.coalesce(-(-minutes // ROWS_PER_FILE))
    sessions = sessions.coalesce(-(-users // ROWS_PER_FILE))
    streams = {PER_MINUTE_STREAM: per_minute, SESSIONS_STREAM: sessions}
    with progress.step(f"writing the results into streams {', '.join(streams)} of {args.store!r}"):
        replace_streams(spark, args.store, streams)
    with progress.step(f"writing Parquet to {args.out!r}"):
        for df, name in ((per_minute, "actions_per_minute"), (sessions, "sessions_per_user")):
            df.write.mode("overwrite").parquet(os.path.join(args.out, f"{name}.parquet"))
    progress.say(
        f"done: {minutes} + {users} rows in streams {PER_MINUTE_STREAM!r} and "
        f"{SESSIONS_STREAM!r} of {args.store!r}, and in Parquet under {args.out!r}"
    )
    return 0


def main(argv: list[str] | None = None, spark: Any | None = None) -> int:
    return run(parse_args(argv), spark)


if __name__ == "__main__":
    sys.exit(main())
