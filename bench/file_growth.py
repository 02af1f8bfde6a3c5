"""How large data.mdb grows against its live data, whatever processes hold the store open.

A store written through the log keeps pages from reuse while a process pins a checkpoint
(docs/durability.md, "Why the checkpoint's tree survives until the next one"), so the file holds
its live data plus the pages of the commits made since the oldest pin.  Each scenario reports
data.mdb beside the live data -- the size of LMDB's compacting copy of the same file,
which keeps only the pages in use.

* ``idle``: one process makes ``--xadds`` single durable XADDs, alone, then beside a process
  that wrote once and stays open (a producer between bursts), once right after that process's
  write and once after it settled (it lets its pin go ``IDLE_S`` after its last write).
* ``writers``: ``--writers`` processes make single durable XADDs to four streams for
  ``--seconds``, alone and beside such an idle process.

    python bench/file_growth.py --xadds 3000 --writers 16 --seconds 30
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from typing import Any

from common import write_json
from live_data import live_bytes

import rstore
from rstore.storage.engine import wal_checkpoints

FIELDS = {"f": "v" * 20, "n": "0"}


def _idle(path: str, settle: bool, ready: Any, stop: Any) -> None:
    with rstore.Store(path) as s:
        s.xadd("idle", {"k": "v"})
        log = s._live_env()._wal
        while settle and log is not None and log.checkpoints.held():
            time.sleep(0.01)
        ready.set()
        stop.wait(600)


def _writer(path: str, who: int, seconds: float, counts: Any) -> None:
    n = 0
    with rstore.Store(path) as s:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            s.xadd(f"s{who % 4}", FIELDS)
            n += 1
    counts[who] = n


def run(kind: str, idle: str, args: argparse.Namespace) -> dict[str, Any]:
    """One scenario on a new store: its sizes (idle: "none", "fresh" or "settled")."""
    ctx = mp.get_context("spawn")
    base = tempfile.mkdtemp(dir=args.dir)
    path = os.path.join(base, "s")
    rstore.Store(path).close()
    ready, stop = ctx.Event(), ctx.Event()
    holder = None
    if idle != "none":
        holder = ctx.Process(target=_idle, args=(path, idle == "settled", ready, stop))
        holder.start()
        ready.wait(60)
    started = time.monotonic()
    if kind == "idle":
        with rstore.Store(path) as s:
            for _ in range(args.xadds):
                s.xadd("s", FIELDS)
        commits = args.xadds
    else:
        counts = ctx.Array("l", args.writers)
        procs = [
            ctx.Process(target=_writer, args=(path, w, args.seconds, counts))
            for w in range(args.writers)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        commits = sum(counts[w] for w in range(args.writers))
    seconds = time.monotonic() - started
    stop.set()
    if holder is not None:
        holder.join()
    size, live = os.path.getsize(os.path.join(path, "data.mdb")), live_bytes(path)
    shutil.rmtree(base)
    return {
        "scenario": kind, "idle process": idle, "commits": commits,
        "commits/s": round(commits / seconds), "data.mdb": size, "live": live,
        "ratio": round(size / live, 2),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xadds", type=int, default=3000)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--only", choices=["idle", "writers"])
    parser.add_argument("--dir", default=None, help="where the stores go (default: $TMPDIR)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    results = []
    plan = [("idle", i) for i in ("none", "fresh", "settled")] + [
        ("writers", i) for i in ("none", "fresh")
    ]
    for kind, idle in plan:
        if args.only not in (None, kind):
            continue
        result = run(kind, idle, args)
        results.append(result)
        print(
            f"{kind:8} idle process: {idle:8}"
            f"{result['commits']:>8} commits ({result['commits/s']}/s)  data.mdb "
            f"{result['data.mdb'] / 2**20:7.2f} MiB  live {result['live'] / 2**20:6.2f} MiB"
            f"  ratio {result['ratio']:5.2f}",
            flush=True,
        )
    print(
        f"(checkpoints every {wal_checkpoints.CHECKPOINT_COMMITS} commits or "
        f"{wal_checkpoints.CHECKPOINT_AGE_S * 1000:.0f} ms; idle after "
        f"{wal_checkpoints.IDLE_S * 1000:.0f} ms; load {os.getloadavg()[0]:.1f})"
    )
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
