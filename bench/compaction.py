"""What compaction gives back (issue 21, item 5), in each store format.

For each format: a store gets a stream ``kept`` with a group and ``--keep`` more entries, then
``--entries`` entries in another stream (``Store.append_entries``, 100,000 per transaction),
which is then deleted (DEL).  Printed: ``data.mdb`` and ``wal.log`` after the load, after the
DEL, after ``rstore.compact_store`` (and how long it took), and a fresh store holding the same
remaining data (an RDB save of the store restored into a new directory), with the ratio of the
compacted ``data.mdb`` to the fresh one.  Sizes, not timings, are the point; the seconds are
one run's.

    python bench/compaction.py --entries 1000000
    python bench/compaction.py --entries 1000000 --keep 500000
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import rstore

BATCH = 100_000


def _sizes(path: Path) -> tuple[int, int]:
    log = path / "wal.log"
    return os.path.getsize(path / "data.mdb"), os.path.getsize(log) if log.exists() else 0


def _show(what: str, sizes: tuple[int, int]) -> None:
    data, log = sizes
    print(f"  {what:<28} data.mdb {data:>12,} bytes   wal.log {log:>12,} bytes")


def _load(store: rstore.Store, stream: bytes, entries: int) -> None:
    for start in range(0, entries, BATCH):
        count = min(BATCH, entries - start)
        store.append_entries(
            (stream, None, [b"field", b"value-%d" % i]) for i in range(start, start + count)
        )


def run(root: Path, entries: int, keep: int) -> None:
    path, fresh = root / "store", root / "fresh"
    with rstore.Store(path) as store:
        store.xadd("kept", {"user": "42", "action": "login"})
        store.xgroup_create("kept", "workers", id="0")
        store.xreadgroup("workers", "alice", {"kept": ">"})
        _load(store, b"kept", keep)
        _load(store, b"big", entries)
        _show(f"{keep + 1:,} + {entries:,} entries", _sizes(path))
        store.delete("big")
        _show("after DEL", _sizes(path))
        store.save(root / "dump.rdb")
    started = time.monotonic()
    report = rstore.compact_store(path)
    seconds = time.monotonic() - started
    _show(f"compacted ({seconds:.2f} s)", _sizes(path))
    with rstore.Store(fresh) as store:
        store.restore_file(root / "dump.rdb")
    _show("fresh store, same data", _sizes(fresh))
    (db,) = report.databases
    ratio = _sizes(path)[0] / _sizes(fresh)[0]
    print(f"  pages {db.pages_before:,} -> {db.pages_after:,}; compacted / fresh: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="entries deleted")
    parser.add_argument("--keep", type=int, default=0, help="entries kept (beside one)")
    parser.add_argument("--dir", help="where the stores go (default: a temporary directory)")
    args = parser.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="rstore-compaction-"))
    try:
        run(root, args.entries, args.keep)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
