"""What ``rstore report`` costs on a big store (issue 26): the seconds and the peak memory of
:func:`rstore.monitor.report.write_report` on a store and on an RDB file of it.

A store gets one stream ``events`` of ``--entries`` entries (1,000,000 by default) of the
standard three fields, 60 ms apart on average from a whole hour (a million span 999 minutes: a
bar per minute), loaded untimed with ``Store.append_entries``; a group ``billing`` that read
them all and left 1,000 pending, a group ``audit`` 50,000 behind; then ``Store.save`` writes it
to an RDB file.  Each report runs in a fresh process, ``--runs`` times (median): the call's
wall time, the process's peak resident memory (``VmHWM``: Python, rstore and the store's pages
the read touched in LMDB's memory map, which the kernel may drop at any time), the largest
anonymous memory (``RssAnon``: Python's objects, read after each page of nodes) and, for
comparison, the peak of a process that imported the same modules and did nothing; and the
HTML's size.

    python bench/report.py
    python bench/report.py --entries 10000000 --runs 1
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import rstore

FIELDS = [b"user", b"12345", b"action", b"click", b"page", b"/products/42"]

# Run in a fresh interpreter: argv is (kind, source, output); prints one JSON line.
CHILD = r"""
import json, sys, time
import rstore
from rstore.monitor.report import write_report

def status_kib(field):
    with open("/proc/self/status") as status:
        return int(next(l for l in status if l.startswith(field + ":")).split()[1])

anon = [status_kib("RssAnon")]

def progress(done, total):  # after each page of nodes: the anonymous memory then
    anon.append(status_kib("RssAnon"))

kind, source, out = sys.argv[1:4]
start = time.perf_counter()
if kind == "store":
    with rstore.Store(source, readonly=True, create=False) as store:
        summary = write_report(out, store=store, progress=progress)
elif kind == "rdb":
    summary = write_report(out, rdb=source, progress=progress)
seconds = time.perf_counter() - start
size = summary.bytes if kind != "idle" else 0
print(json.dumps({"seconds": seconds, "peak_kib": status_kib("VmHWM"), "anon_kib": max(anon),
                  "bytes": size}))
"""


def _entries(count: int, start_ms: int) -> Iterator[tuple[bytes, tuple[int, int], list[bytes]]]:
    rng = random.Random(26)
    ms = start_ms
    for i in range(count):
        ms += rng.randint(0, 120)
        yield b"events", (ms, i), FIELDS


def build(path: Path, entries: int) -> None:
    """The store of the module docstring (``entries`` above 50,000)."""
    now = time.time_ns() // 1_000_000
    with rstore.Store(path, sync=False) as store:
        start = (now - entries * 60) // 3_600_000 * 3_600_000  # on the hour: the same buckets
        store.append_entries(list(_entries(entries, start)))
        newest = store.xrevrange("events", count=50_001)  # newest first
        for group, behind in (("billing", 1000), ("audit", 50_000)):
            store.execute(
                "XGROUP", "CREATE", "events", group, newest[behind][0],
                "ENTRIESREAD", entries - behind,
            )  # fmt: skip
        store.execute(
            "XREADGROUP", "GROUP", "billing", "worker", "COUNT", 1000, "STREAMS", "events", ">"
        )


def measure(kind: str, source: Path, out: Path, runs: int) -> dict[str, Any]:
    """The median of ``runs`` fresh processes making the report of ``source``."""
    results = []
    for _ in range(runs):
        argv = [sys.executable, "-c", CHILD, kind, str(source), str(out)]
        done = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=3600)
        results.append(json.loads(done.stdout))
    return {
        "seconds": statistics.median(r["seconds"] for r in results),
        "peak_mib": statistics.median(r["peak_kib"] for r in results) / 1024,
        "anon_mib": statistics.median(r["anon_kib"] for r in results) / 1024,
        "bytes": results[-1]["bytes"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.entries <= 50_000:
        parser.error("--entries must be above 50,000 (a group is 50,000 behind)")
    with tempfile.TemporaryDirectory(prefix="rstore-report-bench-") as temp:
        base = Path(temp)
        build(base / "store", args.entries)
        with rstore.Store(base / "store", readonly=True, create=False) as store:
            store.save(base / "dump.rdb")
        idle = measure("idle", base / "store", base / "idle.html", args.runs)
        data_mib = (base / "store" / "data.mdb").stat().st_size / (1 << 20)
        dump_mib = (base / "dump.rdb").stat().st_size / (1 << 20)
        print(
            f"{args.entries:,} entries: data.mdb {data_mib:.0f} MiB, dump.rdb {dump_mib:.0f} MiB; "
            f"a process that only imports peaks at {idle['peak_mib']:.0f} MiB"
        )
        print("| source | seconds | peak RSS | of which anonymous | HTML |")
        print("|---|---:|---:|---:|---:|")
        for kind, source in (("store", base / "store"), ("rdb", base / "dump.rdb")):
            got = measure(kind, source, base / f"{kind}.html", args.runs)
            print(
                f"| {kind} | {got['seconds']:.2f} | {got['peak_mib']:.0f} MiB "
                f"| {got['anon_mib']:.0f} MiB | {got['bytes'] / 1024:.0f} KiB |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
