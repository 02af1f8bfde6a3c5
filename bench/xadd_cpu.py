"""CPU per relaxed XADD: the process's CPU time (user + system, every thread: the checkpointer's
included) over 100k single XADDs of a ``Store(sync=False)``, beside the floor of what one such
commit asks of LMDB and the log when no Python semantics run at all (issue 23's target: <= 8 us
per XADD).

Rows:

* **rstore, single XADD** -- ``store.xadd(STREAM, FIELDS)`` in a loop, one write transaction and
  one log record per call, as a user's producer makes them (after 1000 warm-up calls).
* **rstore, pipelined** -- the same entries in pipelines of 1000, per entry: what the path costs
  once the per-commit work is shared.
* **floor: LMDB + the log, no semantics** -- py-lmdb alone, one write transaction per entry that
  puts what a single XADD changes (its stream node, growing by ~40 bytes per entry up to a new
  node at ~4 KB as rstore's, the stream's metadata and the log's position), committed without a
  flush as rstore's engine commits, plus the log's two writes (the record, ~200 bytes, then its
  committed byte).  No checksums, no capture of the changes, no checkpoints: less than rstore
  must do, so a bound, not a model.

Time: ``time.process_time()`` around the timed loop; user and system from ``getrusage``.

    python bench/xadd_cpu.py
    python bench/xadd_cpu.py --entries 20000 --json out.json
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import lmdb
from common import FIELDS, STREAM, markdown_table, write_json

import rstore

TARGET_US = 8.0
WARM_UP = 1000
NODE_BYTES = 4096  # rstore's (and Redis's) stream-node-max-bytes
ENTRY_BYTES = 40  # about what one entry of FIELDS adds to a node


def _cpu(loop: Callable[[], None], entries: int) -> dict[str, float]:
    """CPU of ``loop`` per entry (us): total, user and system."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.process_time()
    loop()
    total = time.process_time() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    scale = 1e6 / entries
    return {
        "cpu_us": total * scale,
        "user_us": (after.ru_utime - before.ru_utime) * scale,
        "system_us": (after.ru_stime - before.ru_stime) * scale,
    }


def rstore_single(base: str, entries: int) -> dict[str, float]:
    with rstore.Store(os.path.join(base, "single"), sync=False) as store:
        add = store.xadd
        for _ in range(WARM_UP):
            add(STREAM, FIELDS)

        def loop() -> None:
            for _ in range(entries):
                add(STREAM, FIELDS)

        return _cpu(loop, entries)


def rstore_pipelined(base: str, entries: int) -> dict[str, float]:
    with rstore.Store(os.path.join(base, "pipelined"), sync=False) as store:

        def batch(n: int) -> None:
            with store.pipeline() as pipe:
                for _ in range(n):
                    pipe.xadd(STREAM, FIELDS)
                pipe.execute()

        batch(WARM_UP)

        def loop() -> None:
            for _ in range(entries // 1000):
                batch(1000)

        return _cpu(loop, entries // 1000 * 1000)


def lmdb_floor(base: str, entries: int, *, writemap: bool = False) -> dict[str, float]:
    path = os.path.join(base, "floor-writemap" if writemap else "floor")
    os.makedirs(path)
    env = lmdb.open(
        path, map_size=1 << 32, max_dbs=4, sync=False, metasync=False, writemap=writemap
    )
    nodes, streams, meta = (env.open_db(name) for name in (b"nodes", b"streams", b"meta"))
    log = os.open(os.path.join(path, "log"), os.O_RDWR | os.O_CREAT, 0o600)
    record, metadata, position = b"r" * 200, b"m" * 80, b"p" * 32
    node, master, offset = b"", 0, 0

    def one() -> None:
        nonlocal node, master, offset
        if len(node) + ENTRY_BYTES > NODE_BYTES:
            master, node = master + 1, b""
        node += b"e" * ENTRY_BYTES
        os.pwrite(log, record, offset)  # the record, before the commit
        with env.begin(write=True) as txn:
            txn.put(master.to_bytes(24, "big"), node, db=nodes)
            txn.put(b"\0" * 8, metadata, db=streams)
            txn.put(b"position", position, db=meta)
        os.pwrite(log, b"\1", offset + 4)  # its committed byte, after
        offset += len(record)

    for _ in range(WARM_UP):
        one()

    def loop() -> None:
        for _ in range(entries):
            one()

    try:
        return _cpu(loop, entries)
    finally:
        os.close(log)
        env.close()


def run(entries: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rstore-xadd-cpu-") as base:
        for name, fn in (
            ("rstore, single XADD (sync=False)", rstore_single),
            ("rstore, pipelined 1000 (sync=False), per entry", rstore_pipelined),
            ("floor: LMDB + the log, no semantics", lmdb_floor),
            (
                "floor, MDB_WRITEMAP",
                lambda base, entries: lmdb_floor(base, entries, writemap=True),
            ),
        ):
            rows.append({"case": name, **fn(base, entries)})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    def target(case: str) -> str:
        return f"≤ {TARGET_US:g}" if case.startswith("rstore, single") else "—"

    return markdown_table(
        ("case", "CPU per XADD (us)", "user", "system", "target"),
        "lrrrr",
        (
            (r["case"], f"{r['cpu_us']:.1f}", f"{r['user_us']:.1f}", f"{r['system_us']:.1f}",
             target(r["case"]))
            for r in rows
        ),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000, help="timed XADDs per case")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    if args.entries < 1000:
        parser.error("--entries must be at least 1000")
    print(f"# {args.entries} XADDs per case, CPU time of this process (every thread)")
    rows = run(args.entries)
    print(table(rows))
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
