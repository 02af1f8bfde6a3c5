"""What an open read transaction costs the writers: file growth and commit time, one writer.

LMDB reuses a page freed by a commit only once every read transaction older than that commit
has ended.  This script isolates the effect, without the CPU contention of the concurrent
workload (``bench/writers.py``): one process commits single XADDs with ``sync=True`` while
another process holds one LMDB read transaction open, asleep.

* ``held``: blocks of commits to two stores, interleaved: store *pinned* has a reader process
  holding a read transaction for the whole run, store *free* has none.  Reported: commit
  latency percentiles of each, and how many fresh pages each commit appended to ``data.mdb``.
* ``killed``: a reader process is SIGKILLed inside its read transaction; its reader slot stays
  in LMDB's table.  Commits go on; then another process opens the store (rstore clears dead
  readers' slots when a process opens a store); commits go on.  Reported per phase: pages
  appended per commit and the file size.

    python bench/pinned_reads.py --commits 2000
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from common import FIELDS, STREAM, exit_on_sigterm, fmt_ms, percentiles, write_json

import rstore

PAGE = 4096
BLOCK = 100  # commits per interleaved block
# The reader process: opens the environment with py-lmdb, starts a read transaction, says so;
# then either waits for a line on stdin (and ends the transaction) or kills itself inside it.
HOLDER = """
import os, signal, sys
import lmdb
env = lmdb.open(sys.argv[1], readonly=True, max_dbs=16)
txn = env.begin()
txn.get(b"-")
print("held", flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.readline()
txn.abort()
"""


def data_bytes(path: str) -> int:
    return os.stat(os.path.join(path, "data.mdb")).st_size


def holder(path: str, kill: bool) -> subprocess.Popen[str]:
    """A reader process inside a read transaction of ``path`` (dead already if ``kill``)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path, "kill" if kill else "hold"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "held":
        raise RuntimeError("the reader process did not start its transaction")
    if kill:
        proc.wait()
    return proc


def commit(store: rstore.Store, n: int, out: list[float]) -> None:
    xadd, clock = store.xadd, time.perf_counter
    for _ in range(n):
        t0 = clock()
        xadd(STREAM, FIELDS)
        out.append(clock() - t0)


def held(commits: int, base_dir: str | None) -> dict[str, Any]:
    work = tempfile.mkdtemp(prefix="bench-pinned-", dir=base_dir)
    try:
        paths = {name: os.path.join(work, name) for name in ("pinned", "free")}
        stores = {name: rstore.Store(p, sync=True) for name, p in paths.items()}
        for store in stores.values():
            commit(store, 500, [])  # past the first node splits
        start = {name: data_bytes(p) for name, p in paths.items()}
        reader = holder(paths["pinned"], kill=False)
        samples: dict[str, list[float]] = {name: [] for name in stores}
        try:
            for i in range(max(1, commits // BLOCK)):
                order = ["pinned", "free"] if i % 2 == 0 else ["free", "pinned"]
                for name in order:
                    commit(stores[name], BLOCK, samples[name])
        finally:
            assert reader.stdin is not None
            reader.stdin.write("\n")
            reader.stdin.close()
            reader.wait()
        out = {}
        for name, store in stores.items():
            grown = data_bytes(paths[name]) - start[name]
            store.close()
            out[name] = {
                "commits": len(samples[name]),
                "latency_ms": percentiles(samples[name], 1e3),
                "pages_per_commit": grown / PAGE / len(samples[name]),
                "file_bytes": data_bytes(paths[name]),
            }
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def killed(commits: int, base_dir: str | None) -> list[dict[str, Any]]:
    work = tempfile.mkdtemp(prefix="bench-pinned-", dir=base_dir)
    path = os.path.join(work, "store")
    phases = []
    try:
        store = rstore.Store(path, sync=True)

        def phase(label: str) -> None:
            before = data_bytes(path)
            samples: list[float] = []
            commit(store, commits, samples)
            phases.append(
                {
                    "phase": label,
                    "latency_ms": percentiles(samples, 1e3),
                    "pages_per_commit": (data_bytes(path) - before) / PAGE / commits,
                    "file_bytes": data_bytes(path),
                }
            )

        commit(store, 500, [])
        phase("no reader")
        holder(path, kill=True)
        phase("a reader was SIGKILLed inside its read transaction")
        phase("the same, later")
        subprocess.run(
            [sys.executable, "-c", f"import rstore; rstore.Store({path!r}).close()"], check=True
        )
        phase("after another process opened the store")
        store.close()
        return phases
    finally:
        shutil.rmtree(work, ignore_errors=True)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| store | commits | p50 | p90 | p99 | max | fresh pages per commit | data.mdb |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "pinned": "another process holds a read transaction",
        "free": "no reader",
    }
    for name, r in report["held"].items():
        lat = r["latency_ms"]
        cells = " | ".join(fmt_ms(lat[k]) for k in ("p50", "p90", "p99", "max"))
        lines.append(
            f"| {labels[name]} | {r['commits']:,} | {cells} | {r['pages_per_commit']:.2f} "
            f"| {r['file_bytes'] / 2**20:.1f} MiB |"
        )
    lines += [
        "",
        "| phase (one store, in this order) | commit p50 | fresh pages per commit "
        "| data.mdb after |",
        "|---|---:|---:|---:|",
    ]
    for p in report["killed"]:
        lines.append(
            f"| {p['phase']} | {fmt_ms(p['latency_ms']['p50'])} | {p['pages_per_commit']:.2f} "
            f"| {p['file_bytes'] / 2**20:.1f} MiB |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=2000, help="commits per store and per phase")
    parser.add_argument("--dir", default=None, help="parent of the temporary stores")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write results here")
    args = parser.parse_args(argv)
    report = {"held": held(args.commits, args.dir), "killed": killed(args.commits, args.dir)}
    print(markdown(report))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
