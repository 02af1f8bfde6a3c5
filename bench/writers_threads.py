"""Concurrent writer threads in one process: N threads XADD at once for a fixed time, each call
durable; rstore (one ``Store(sync=True)`` shared by the threads) beside valkey ``appendfsync
always`` (one redis-py + hiredis client per thread), in one run.

This is the shape of a server in front of rstore (many clients, one process): rstore's group
commit (``docs/durability.md``, "Group commit") runs the XADDs that arrive together in one
LMDB commit.  Reported per side: aggregate entries/s and the latency of each XADD call
(p50/p90/p99/max over all threads); for rstore also the commits made (batches) and the
after-commit flushes made and skipped (``rstore.storage.engine.log_flush.counters``), read from the
storage layer for this measurement only.  The sides alternate, the order flipping per round.

    python bench/writers_threads.py                    # 16 and 4 threads, 5 s per side
    python bench/writers_threads.py --threads 1 4 16 --seconds 10 --repeat 3
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from common import (
    FIELDS,
    STREAM,
    Result,
    Valkey,
    add_common_args,
    exit_on_sigterm,
    latency_table,
    percentiles,
    rate_result,
    repeat_runs,
    results_table,
    set_placement,
    temp_store,
    write_json,
)

from rstore.storage.engine import log_flush


def _hammer(
    calls: Sequence[Callable[[], object]], seconds: float
) -> tuple[list[float], int, float]:
    """Run each thread's ``call`` in a loop for ``seconds``; ``(latencies, calls, wall)``."""
    start = threading.Barrier(len(calls) + 1)
    lat: list[list[float]] = [[] for _ in calls]
    stop_at = [0.0]

    def loop(i: int) -> None:
        call, out, clock = calls[i], lat[i], time.perf_counter
        start.wait()
        while True:
            t0 = clock()
            if t0 >= stop_at[0]:
                return
            call()
            out.append(clock() - t0)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    start.wait()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    samples = [x for per in lat for x in per]
    return samples, len(samples), wall


def run(threads: int, seconds: float, base_dir: str | None) -> Result:
    with temp_store(True, base_dir) as store, Valkey("always", base_dir=base_dir) as valkey:
        env: Any = store._live_env()  # the storage layer's counters, for this measurement only
        clients = [valkey.client() for _ in range(threads)]
        rstore_calls: list[Callable[[], object]] = [
            lambda: store.xadd(STREAM, FIELDS) for _ in range(threads)
        ]
        valkey_calls: list[Callable[[], object]] = [
            functools.partial(c.xadd, STREAM, FIELDS) for c in clients
        ]
        _hammer(rstore_calls, 0.3)  # warm-up
        _hammer(valkey_calls, 0.3)
        out: dict[str, tuple[list[float], int, float]] = {"rstore": ([], 0, 0.0)}
        out["valkey"] = ([], 0, 0.0)
        b0, w0 = env._combiner.batches, env._combiner.writes
        f0, s0 = log_flush.counters.flushes, log_flush.counters.skipped
        for rnd in range(2):
            order = ["rstore", "valkey"] if rnd % 2 == 0 else ["valkey", "rstore"]
            for side in order:
                calls = rstore_calls if side == "rstore" else valkey_calls
                samples, n, wall = _hammer(calls, seconds / 2)
                prev = out[side]
                out[side] = (prev[0] + samples, prev[1] + n, prev[2] + wall)
        commits = env._combiner.batches - b0
        writes = env._combiner.writes - w0
        flushes, skipped = log_flush.counters.flushes - f0, log_flush.counters.skipped - s0
    r, v = out["rstore"], out["valkey"]
    return rate_result(
        workload=f"{threads} writer threads, one process",
        mode="rstore sync=True / valkey appendfsync always",
        target=1.0,
        rstore_rate=r[1] / r[2],
        valkey_rate=v[1] / v[2],
        rstore_latency_ms=percentiles(r[0], 1e3),
        valkey_latency_ms=percentiles(v[0], 1e3),
        latency_of="one XADD (any thread)",
        rstore_commits=commits,
        rstore_writes_per_commit=writes / commits if commits else 0.0,
        rstore_flushes=flushes,
        rstore_flushes_skipped=skipped,
    )


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--threads", type=int, nargs="+", default=[16, 4])
    parser.add_argument("--seconds", type=float, default=5.0, help="per side (default 5)")
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    seconds = 1.0 if args.quick else args.seconds

    def once() -> list[Result]:
        return [run(n, seconds, args.dir) for n in args.threads]

    results = repeat_runs(once, args.repeat)
    print(results_table(results))
    print()
    print(latency_table(results))
    print()
    for res in results:
        print(
            f"# {res['workload']}: rstore {res['rstore_commits']:.0f} commits, "
            f"{res['rstore_writes_per_commit']:.1f} XADDs per commit, after-commit flushes "
            f"{res['rstore_flushes']:.0f} made / {res['rstore_flushes_skipped']:.0f} skipped"
        )
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
