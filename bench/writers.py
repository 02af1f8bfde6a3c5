"""Concurrent writers: N writer processes appending to one stream for a fixed time, optionally
beside M reader processes; rstore ``sync=True`` beside valkey ``appendfsync always``, in one run.

* rstore: each writer process opens ``rstore.Store(path, sync=True)`` and calls
  ``xadd("bench", FIELDS)`` in a loop: one XADD, one LMDB write transaction, one durable commit
  per call.
* valkey: each writer process is a redis-py (+hiredis) client doing the same XADDs into one
  ``valkey-server --appendonly yes --appendfsync always``.

All processes start together (a shared ``CLOCK_MONOTONIC`` start time) and stop at the same
deadline. Reported per side: aggregate entries/s, commits/s (rstore: LMDB write transactions,
from its transaction ids, readers' XREADGROUP/XACK commits included), the latency of each XADD
call (p50/p90/p99/max over every writer's calls), and at the end the size of the data file
(rstore ``data.mdb``: apparent size, LMDB pages up to the high-water mark, pages in B-trees, and
the rest: free pages and the free list's own pages, as ``mdb_stat -ef`` counts them; valkey: the
AOF) per entry. While rstore runs, this process samples LMDB's reader table 20 times a second
and records how many commits the oldest open read transaction lags behind (pages freed after its
snapshot cannot be reused while it lives). With ``--lock-wait`` the rstore writers also time how
long each write transaction waits for LMDB's writer lock (by wrapping a private method of
rstore's storage layer, for this measurement only). The child processes and the monitor live in
``bench/writers_procs.py``.

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
import time
from contextlib import ExitStack
from typing import Any

from common import (
    STREAM,
    Child,
    Result,
    Valkey,
    add_common_args,
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
from writers_procs import GROUP, ReaderMonitor, child_argv, map_size, reader_roles

import rstore

START_DELAY_S = 1.0  # from "go" to the common start time
READER_KINDS = ("consumers", "scans", "paged", "cpu")
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


#: Issue 23's targets, by (writers, readers): the aggregate rate beside valkey ``always``
#: (and, for 16 writers, a p99 <= 10 ms per XADD, read from the latency table).
TARGETS = {(16, 0): 1.0, (16, 8): 1.0, (4, 0): 1.5}


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
        target=TARGETS.get((writers, readers)) if kind == "consumers" or not readers else None,
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
