"""Concurrent writers: N writer processes appending to one stream for a fixed time, optionally
beside M reader processes; rstore ``sync=True`` beside valkey ``appendfsync always``, in one run.

* rstore: each writer process opens ``rstore.Store(path, sync=True)`` and calls
  ``xadd("bench", FIELDS)`` in a loop: one XADD, one LMDB write transaction, one durable commit
  per call.
* valkey: each writer process is a redis-py (+hiredis) client doing the same XADDs into one
  ``valkey-server --appendonly yes --appendfsync always``.

All processes start together (a shared ``CLOCK_MONOTONIC`` start time) and stop at the same
deadline.  Reported per side: aggregate entries/s, commits/s (rstore: LMDB write transactions,
from its transaction ids, readers' XREADGROUP/XACK commits included), the latency of each XADD
call (p50/p90/p99/max over every writer's calls), and at the end the size of the data file
(rstore ``data.mdb``: apparent size, LMDB pages up to the high-water mark, pages in B-trees,
pages free; valkey: the AOF) per entry.  While rstore runs, this process samples LMDB's reader
table 20 times a second and records how many commits the oldest open read transaction lags
behind (pages freed after its snapshot cannot be reused while it lives).  With ``--lock-wait``
the rstore writers also time how long each write transaction waits for LMDB's writer lock
(by wrapping a private method of rstore's storage layer, for this measurement only).

Readers (``--readers M``, each its own process, same store or server), by ``--reader-kind``:

* ``consumers`` (default): half of them ``xread({stream: last_id}, count=100, block=1000)``
  following the stream, the other half ``xreadgroup(group, own consumer, {stream: ">"},
  count=100, block=1000)`` in one shared group, then ``xack`` of what they got;
* ``scans``: each reads the whole stream with ``xrange(stream, "-", "+")`` in a loop (on rstore,
  one read transaction per call, for the whole stream);
* ``paged``: each reads the stream in pages, ``xrange(stream, start, "+", count=1000)``, over and
  over (one short read transaction per page);
* ``cpu``: a control -- busy Python loops that never touch the store or the server, to tell CPU
  contention apart from what readers do to the store.

The two sides run one after the other for each configuration, the order flipping from one
configuration (and repeat) to the next, so they do not share the machine's noise as closely as
the interleaved single-process scripts.  The processes are not pinned by default (``--placement
os``): 16 or more processes share the machine's cores, on both sides.

    python bench/writers.py                               # 16 and 4 writers, 8 and 0 readers
    python bench/writers.py --writers 16 --readers 8 --reader-kind consumers scans --repeat 3
    python bench/writers.py --side rstore --writers 1 4 16 --readers 0 --lock-wait  # rstore alone
"""

from __future__ import annotations

import argparse
import array
import contextlib
import dataclasses
import os
import shutil
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import lmdb
from common import (
    FIELDS,
    STREAM,
    Child,
    Result,
    Valkey,
    add_common_args,
    child_hear,
    child_say,
    exit_on_sigterm,
    fmt_ms,
    fmt_rate,
    latency_table,
    percentiles,
    rate_result,
    repeat_runs,
    results_table,
    set_placement,
    write_json,
)
from footprint import lmdb_pages

import rstore

GROUP = "readers"
BLOCK_MS = 1000
COUNT = 100
START_DELAY_S = 1.0  # from "go" to the common start time
SAMPLE_S = 0.05  # the reader-table monitor's interval
READER_KINDS = ("consumers", "scans", "paged", "cpu")
TIMED_ROLES = ("scan", "paged")  # roles whose calls never block: their longest call is reported
PAGE = 1000
MIB = 1 << 20


@dataclasses.dataclass
class Options:
    """What to run; the defaults are the published configuration."""

    writers: tuple[int, ...] = (16, 4)
    readers: tuple[int, ...] = (8, 0)
    reader_kinds: tuple[str, ...] = ("consumers",)
    seconds: float = 10.0
    side: str = "both"  # both, rstore or valkey
    map_size: int = 0  # rstore's initial map size; 0: rstore's default
    lock_wait: bool = False  # rstore writers also time their waits for LMDB's writer lock
    base_dir: str | None = None

    @classmethod
    def quick(cls, base_dir: str | None = None) -> Options:
        return cls(writers=(4,), readers=(2, 0), seconds=2.0, base_dir=base_dir)


# ----------------------------------------------------------------------------- child processes


def _connect(side: str, target: str, map_size: int) -> Any:
    if side == "rstore":
        return rstore.Store(target, sync=True, create=False, map_size=map_size or None)
    import redis

    return redis.Redis(host="127.0.0.1", port=int(target), protocol=2)


def _sleep_until(t_ns: int) -> None:
    delay = (t_ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


def time_lock_waits(waits: array.array[float]) -> None:
    """Record in ``waits`` how long each write transaction of this process waits to begin
    (LMDB's writer lock).  Wraps a private method of rstore's storage layer: for this
    measurement only (``--lock-wait``)."""
    from rstore.storage import env as envmod

    begin = envmod.Env._begin
    clock = time.perf_counter

    def timed_begin(self: envmod.Env, write: bool) -> Any:
        if not write:
            return begin(self, write)
        t0 = clock()
        raw = begin(self, write)
        waits.append(clock() - t0)
        return raw

    envmod.Env._begin = timed_begin  # type: ignore[method-assign]


def writer_main(side: str, target: str, map_size: int, out_path: str, lock_wait: bool) -> int:
    """XADD in a loop between the start and end times it is given; latencies to ``out_path``
    (and with ``lock_wait``, the writer-lock waits to ``out_path + ".wait"``)."""
    waits = array.array("d")
    if lock_wait and side == "rstore":
        time_lock_waits(waits)
    client = _connect(side, target, map_size)
    child_say("hello")
    words = child_hear()
    if words[0] != "go":
        return 0
    start_ns, end_ns = int(words[1]), int(words[2])
    xadd, clock, now = client.xadd, time.perf_counter, time.monotonic_ns
    latencies = array.array("d")
    _sleep_until(start_ns)
    while now() < end_ns:
        t0 = clock()
        xadd(STREAM, FIELDS)
        latencies.append(clock() - t0)
    with open(out_path, "wb") as f:
        latencies.tofile(f)
    with open(out_path + ".wait", "wb") as f:
        waits.tofile(f)
    child_say("done", len(latencies))
    child_hear()  # "quit"
    client.close()
    return 0


def reader_main(side: str, target: str, map_size: int, role: str, consumer: str) -> int:
    """Read as ``role`` (xread, xreadgroup or scan) until the end time; report what was read."""
    client = _connect(side, target, map_size)
    child_say("hello")
    words = child_hear()
    if words[0] != "go":
        return 0
    start_ns, end_ns = int(words[1]), int(words[2])
    now, clock = time.monotonic_ns, time.perf_counter
    entries = calls = 0
    longest = 0.0
    last_id: Any = "0-0"
    _sleep_until(start_ns)
    page_start: Any = "-"
    while now() < end_ns:
        t0 = clock()
        if role == "cpu":
            got = sum(range(100_000)) * 0  # a CPU-bound step that touches no store
        elif role == "scan":
            got = len(client.xrange(STREAM, "-", "+"))
        elif role == "paged":
            page = client.xrange(STREAM, page_start, "+", count=PAGE)
            got = len(page)
            page_start = "(" + page[-1][0].decode() if len(page) == PAGE else "-"
        elif role == "xread":
            reply = client.xread({STREAM: last_id}, count=COUNT, block=BLOCK_MS)
            got = len(reply[0][1]) if reply else 0
            if got:
                last_id = reply[0][1][-1][0]
        else:
            reply = client.xreadgroup(GROUP, consumer, {STREAM: ">"}, count=COUNT, block=BLOCK_MS)
            ids = [entry_id for entry_id, _ in reply[0][1]] if reply else []
            if ids:
                client.xack(STREAM, GROUP, *ids)
            got = len(ids)
        if role in TIMED_ROLES:
            longest = max(longest, clock() - t0)
        entries += got
        calls += 1
    child_say("done", entries, calls, longest)
    child_hear()
    client.close()
    return 0


def child_argv(*words: object) -> list[str]:
    return [str(Path(__file__).resolve()), "--child", *(str(w) for w in words)]


def reader_roles(readers: int, kind: str) -> list[str]:
    if readers == 0:
        return []
    if kind != "consumers":
        return [{"scans": "scan", "paged": "paged", "cpu": "cpu"}[kind]] * readers
    return ["xread" if i % 2 == 0 else "xreadgroup" for i in range(readers)]


# ----------------------------------------------------------------------------- the monitor


class ReaderMonitor:
    """Samples an LMDB environment from this process while others use it: the commits by which
    the oldest live read transaction lags behind the last commit, and reader slots left by dead
    processes.  Opens its own read-only handle and never starts a transaction."""

    def __init__(self, path: str) -> None:
        self._env = lmdb.open(path, readonly=True, max_dbs=16)
        self._stop = threading.Event()
        self.lags: list[int] = []
        self.dead_slots = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReaderMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._env.close()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            last = int(self._env.info()["last_txnid"])
            oldest = None
            for line in self._env.readers().splitlines()[1:]:
                pid, _, txnid = line.split()
                if txnid == "-":
                    continue
                if not _alive(int(pid)):
                    self.dead_slots = max(self.dead_slots, 1)
                oldest = int(txnid) if oldest is None else min(oldest, int(txnid))
            self.lags.append(0 if oldest is None else last - oldest)


def map_size(path: str) -> int:
    """The map size recorded in a closed environment (grown by writers if it was full)."""
    env = lmdb.open(path, readonly=True, lock=False, map_size=0)  # 0: take the file's
    try:
        return int(env.info()["map_size"])
    finally:
        env.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


# ----------------------------------------------------------------------------- one side


def _gather(children: list[Child], seconds: float) -> list[list[str]]:
    """Start every child together at one instant; the "done" answer of each."""
    for child in children:
        child.expect("hello", 120)
    start_ns = time.monotonic_ns() + int(START_DELAY_S * 1e9)
    end_ns = start_ns + int(seconds * 1e9)
    for child in children:
        child.send("go", start_ns, end_ns)
    return [child.expect("done", seconds + START_DELAY_S + 60) for child in children]


def run_side(side: str, writers: int, readers: int, kind: str, opts: Options) -> dict[str, Any]:
    """One side for ``opts.seconds``: rates, latencies, data size, reader figures."""
    seconds = opts.seconds
    work = tempfile.mkdtemp(prefix=f"bench-writers-{side}-", dir=opts.base_dir)
    try:
        with ExitStack() as stack:
            size: dict[str, Any]
            if side == "rstore":
                target = os.path.join(work, "store")
                with rstore.Store(target, sync=True, map_size=opts.map_size or None) as store:
                    store.xgroup_create(STREAM, GROUP, "0", mkstream=True)
                txn0 = lmdb_pages(target)["last_txnid"]
            else:
                valkey = stack.enter_context(Valkey("always", base_dir=opts.base_dir))
                client = valkey.client()
                client.xgroup_create(STREAM, GROUP, "0", mkstream=True)
                target = str(valkey.port)
            lat_paths = [os.path.join(work, f"lat-{i}.bin") for i in range(writers)]
            children = [
                stack.enter_context(
                    Child(child_argv("writer", side, target, opts.map_size, p, int(opts.lock_wait)))
                )
                for p in lat_paths
            ]
            children += [
                stack.enter_context(
                    Child(child_argv("reader", side, target, opts.map_size, role, f"c{i}"))
                )
                for i, role in enumerate(reader_roles(readers, kind))
            ]
            monitor = ReaderMonitor(target) if side == "rstore" else contextlib.nullcontext()
            with monitor:
                answers = _gather(children, seconds)
            for child in children:
                child.stop()
            added = sum(int(a[0]) for a in answers[:writers])
            if side == "rstore":
                pages = lmdb_pages(target)
                with rstore.Store(target, sync=True, create=False) as store:
                    length = store.xlen(STREAM)
                data = os.path.join(target, "data.mdb")
                assert isinstance(monitor, ReaderMonitor)
                lags = sorted(monitor.lags) or [0]
                size = {
                    "file_bytes": os.stat(data).st_size,
                    "used_bytes": pages["high_water_pages"] * pages["page_size"],
                    "tree_pages": pages["tree_pages"],
                    "free_pages": pages["other_pages"] - 2,  # less the two meta pages
                    "commits": pages["last_txnid"] - txn0,
                    "reader_lag_p50": lags[len(lags) // 2],
                    "reader_lag_max": lags[-1],
                    "dead_reader_slots": monitor.dead_slots,
                    "map_size": map_size(target),
                }
            else:
                length = int(client.xlen(STREAM))
                size = {"file_bytes": valkey.aof_bytes(), "commits": 0}
            if length != added:
                raise RuntimeError(f"{side}: {added} XADDs returned but the stream holds {length}")
        latencies, waits = array.array("d"), array.array("d")
        for path in lat_paths:
            with open(path, "rb") as f:
                latencies.frombytes(f.read())
            with open(path + ".wait", "rb") as f:
                waits.frombytes(f.read())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    read = answers[writers:]
    per_writer = [int(a[0]) for a in answers[:writers]]
    return {
        "entries": added,
        "writer_entries_min": min(per_writer),
        "writer_entries_max": max(per_writer),
        "rate": added / seconds,
        "commits_per_s": size["commits"] / seconds,
        "latency_ms": percentiles(latencies, 1e3),
        "lock_wait_ms": percentiles(waits, 1e3),
        "lock_wait_share": sum(waits) / sum(latencies) if waits else 0.0,
        "bytes_per_entry": size["file_bytes"] / max(added, 1),
        "reader_entries_per_s": sum(int(a[0]) for a in read) / seconds,
        "reader_calls_per_s": sum(int(a[1]) for a in read) / seconds,
        "reader_longest_call_ms": max((float(a[2]) * 1e3 for a in read), default=0.0),
        **size,
    }


# ----------------------------------------------------------------------------- configurations


def workload_name(writers: int, readers: int, kind: str) -> str:
    who = f"{writers} writer process{'es' if writers > 1 else ''}"
    if readers:
        who += f" + {readers} readers ({kind})"
    return who


def run_config(writers: int, readers: int, kind: str, opts: Options, flip: bool) -> Result:
    """Both sides (or one) in one configuration."""
    sides = ["rstore", "valkey"] if opts.side == "both" else [opts.side]
    if flip:
        sides.reverse()
    got = {s: run_side(s, writers, readers, kind, opts) for s in sides}
    ours = got.get("rstore") or {"rate": 0.0, "latency_ms": {}}
    theirs = got.get("valkey") or {"rate": 0.0, "latency_ms": {}}
    extra = {f"rstore_{k}": v for k, v in ours.items() if k not in ("rate", "latency_ms")}
    extra.update({f"valkey_{k}": v for k, v in theirs.items() if k not in ("rate", "latency_ms")})
    return rate_result(
        workload=workload_name(writers, readers, kind),
        mode="rstore sync=True / valkey appendfsync always",
        target=None,
        rstore_rate=ours["rate"],
        valkey_rate=theirs["rate"],
        rstore_latency_ms=ours["latency_ms"],
        valkey_latency_ms=theirs["latency_ms"],
        latency_of="one XADD (any writer)",
        writers=writers,
        readers=readers,
        reader_kind=kind,
        seconds=opts.seconds,
        **extra,
    )


def configs(opts: Options) -> list[tuple[int, int, str]]:
    return [
        (writers, readers, kind)
        for writers in opts.writers
        for readers in opts.readers
        for kind in (opts.reader_kinds if readers else ("-",))
    ]


def detail_table(results: list[Result]) -> str:
    """What each side left on disk, what rstore committed, and what the readers did."""
    lines = [
        "| workload | side | entries (per writer) | commits/s | data file | bytes/entry "
        "| LMDB pages: high-water / in B-trees / free | oldest reader lag, commits (p50 / max) "
        "| readers: entries/s | longest reader call |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for side in ("rstore", "valkey"):
            if not r.get(f"{side}_entries"):
                continue

            def g(name: str, side: str = side, r: Result = r) -> Any:
                return r[f"{side}_{name}"]

            what = "data.mdb" if side == "rstore" else "AOF"
            pages = lag = commits = "—"
            if side == "rstore":
                psize_pages = g("used_bytes") // 4096
                pages = f"{psize_pages:,.0f} / {g('tree_pages'):,.0f} / {g('free_pages'):,.0f}"
                lag = f"{g('reader_lag_p50'):,.0f} / {g('reader_lag_max'):,.0f}"
                commits = fmt_rate(g("commits_per_s"))
            longest = "—"
            if r["reader_kind"] in ("scans", "paged"):
                longest = fmt_ms(g("reader_longest_call_ms")) + " ms"
            reads = fmt_rate(g("reader_entries_per_s")) if r["readers"] else "—"
            lines.append(
                f"| {r['workload']} | {side} | {g('entries'):,.0f} "
                f"({g('writer_entries_min'):,.0f}–{g('writer_entries_max'):,.0f}) | {commits} "
                f"| {what} {g('file_bytes') / MIB:.1f} MiB | {g('bytes_per_entry'):.0f} "
                f"| {pages} | {lag} | {reads} | {longest} |"
            )
    return "\n".join(lines)


def lock_wait_table(results: list[Result]) -> str:
    """rstore: how long commits waited for LMDB's writer lock (``--lock-wait``)."""
    lines = [
        "| workload | rstore XADD p50 | writer-lock wait p50 | p90 | p99 | max "
        "| share of XADD time spent waiting |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        wait = r.get("rstore_lock_wait_ms")
        if not wait:
            continue
        cells = " | ".join(fmt_ms(wait[k]) for k in ("p50", "p90", "p99", "max"))
        lines.append(
            f"| {r['workload']} | {fmt_ms(r['rstore_latency_ms']['p50'])} | {cells} "
            f"| {100 * r['rstore_lock_wait_share']:.0f} % |"
        )
    return "\n".join(lines)


def run_configs(opts: Options) -> list[Result]:
    return [run_config(w, m, k, opts, i % 2 == 1) for i, (w, m, k) in enumerate(configs(opts))]


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    """The published configurations (for ``run_all.py``)."""
    return run_configs(Options.quick(base_dir) if quick else Options(base_dir=base_dir))


def markdown(results: list[Result]) -> str:
    """The rate table (when both sides ran), the latencies and the detail table."""
    out = []
    if all(r["rstore"] and r["valkey"] for r in results):
        out += [results_table(results), ""]
    out += [latency_table(results), "", detail_table(results)]
    if any(r.get("rstore_lock_wait_ms") for r in results):
        out += ["", lock_wait_table(results)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:
        role, side, target, map_size, *rest = args_in[1:]
        if role == "writer":
            return writer_main(side, target, int(map_size), rest[0], rest[1] == "1")
        return reader_main(side, target, int(map_size), rest[0], rest[1])
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.set_defaults(placement="os")
    parser.add_argument("--writers", type=int, nargs="+", default=None, help="default: 16 4")
    parser.add_argument("--readers", type=int, nargs="+", default=None, help="default: 8 0")
    parser.add_argument(
        "--reader-kind", nargs="+", choices=READER_KINDS, default=["consumers"],
        help="what the readers do (default: consumers)",
    )  # fmt: skip
    parser.add_argument(
        "--seconds", type=float, default=None, help="per side and configuration (default 10)"
    )
    parser.add_argument("--side", choices=("both", "rstore", "valkey"), default="both")
    parser.add_argument(
        "--map-size", type=int, default=0, help="rstore's initial map size (default: rstore's)"
    )
    parser.add_argument(
        "--lock-wait",
        action="store_true",
        help="rstore writers also time how long each commit waits for LMDB's writer lock",
    )
    args = parser.parse_args(args_in)
    base = Options.quick(args.dir) if args.quick else Options(base_dir=args.dir)
    opts = dataclasses.replace(
        base,
        writers=tuple(args.writers or base.writers),
        readers=tuple(base.readers if args.readers is None else args.readers),
        reader_kinds=tuple(args.reader_kind),
        seconds=args.seconds or base.seconds,
        side=args.side,
        map_size=args.map_size,
        lock_wait=args.lock_wait,
    )
    print(f"# CPU placement: {set_placement(args.placement)}")
    print(f"# load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = repeat_runs(lambda: run_configs(opts), args.repeat)
    print(f"# load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(markdown(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
