"""Concurrent writer processes through one committer: N processes doing durable single XADDs for
a fixed time into ``rstore serve --sync always`` (one process owns the store and commits the
writes of every client that arrived together in one transaction and one flush), beside the same
N processes each with its own embedded ``Store(sync=True)`` (every XADD its own LMDB write
transaction under LMDB's one writer lock), beside valkey ``appendfsync always``.

The served and the valkey sides are redis-py clients (``protocol=2``), one per process; every
process starts at one shared ``CLOCK_MONOTONIC`` time and stops at the same deadline.  Reported:
aggregate XADDs/s and the latency of each XADD call (p50, p99) over every writer.  The three
sides run one after the other, each on a fresh store or server in a temporary directory.

What it tells: how far committing every process's writes together would take concurrent
writers (issue 23, item 2) -- measured here through the server, sockets and Python included,
before such a combiner exists for embedded stores.

    python bench/writers_served.py                    # 16 and 4 writers, 5 s per side
    python bench/writers_served.py --writers 16 --seconds 10
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from common import FIELDS, STREAM, markdown_table, write_json
from server import rstore_server, valkey_server

START_DELAY_S = 1.0  # every writer is started and connected before the shared start time


def _loop(xadd: Callable[[], Any], start: float, seconds: float, out: Any) -> None:
    while time.monotonic() < start:
        time.sleep(0.0005)
    lat: list[float] = []
    end = start + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        xadd()
        lat.append(time.perf_counter() - t)
    out.put(lat)


def client_writer(port: int, start: float, seconds: float, out: Any) -> None:
    import redis

    client = redis.Redis(port=port, protocol=2)
    _loop(lambda: client.xadd(STREAM, FIELDS), start, seconds, out)


def embedded_writer(path: str, start: float, seconds: float, out: Any) -> None:
    import rstore

    with rstore.Store(path, sync=True) as store:
        _loop(lambda: store.xadd(STREAM, FIELDS), start, seconds, out)


def _side(writer: Callable[..., None], target: Any, n: int, seconds: float) -> dict[str, float]:
    out: Any = mp.Queue()
    start = time.monotonic() + START_DELAY_S
    procs = [mp.Process(target=writer, args=(target, start, seconds, out)) for _ in range(n)]
    for p in procs:
        p.start()
    lat = sorted(x for _ in procs for x in out.get(timeout=seconds + 60))
    for p in procs:
        p.join()
    return {
        "rate": len(lat) / seconds,
        "p50_ms": lat[len(lat) // 2] * 1e3,
        "p99_ms": lat[min(int(len(lat) * 0.99), len(lat) - 1)] * 1e3,
    }


def run(writers: int, seconds: float, base: str) -> list[dict[str, Any]]:
    with rstore_server(base, "always") as (port, _):
        served = _side(client_writer, port, writers, seconds)
    embedded = _side(embedded_writer, os.path.join(base, f"embedded-{writers}"), writers, seconds)
    with valkey_server(base, "always") as (port, _):
        valkey = _side(client_writer, port, writers, seconds)
    rows: list[dict[str, Any]] = [
        {"side": "rstore serve --sync always", **served},
        {"side": "embedded Store(sync=True)", **embedded},
        {"side": "valkey appendfsync always", **valkey},
    ]
    for row in rows:
        row["writers"] = writers
        row["ratio"] = row["rate"] / valkey["rate"] if valkey["rate"] else 0.0
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    return markdown_table(
        ("writers", "side", "XADD/s", "/ valkey", "p50 (ms)", "p99 (ms)"),
        "rlrrrr",
        (
            (r["writers"], r["side"], f"{r['rate'] / 1000:.2f}k", f"{r['ratio']:.2f}x",
             f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}")
            for r in rows
        ),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[16, 4])
    parser.add_argument("--seconds", type=float, default=5.0, help="per side (default 5)")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or any(n < 1 for n in args.writers):
        parser.error("--seconds and --writers must be positive")
    load = os.getloadavg()
    rows: list[dict[str, Any]] = []
    base = tempfile.mkdtemp(prefix="rstore-writers-served-")
    try:
        for n in args.writers:
            rows += run(n, args.seconds, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    after = os.getloadavg()[0]
    print(f"# {args.seconds:g} s per side; load average (1 min) {load[0]:.2f}, then {after:.2f}")
    print(table(rows))
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
