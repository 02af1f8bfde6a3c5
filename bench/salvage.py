"""Salvage: ``rstore.salvage_store`` of a sound store and of one with a zeroed page, beside what
copying the store otherwise costs (``Store.save`` to an RDB file, then ``restore_file`` into a
new store).

The store holds ``--entries`` XADDs of the standard fields (pipelines of 1000, untimed) and a
group that has read 10k of them (10k pending entries).  Each operation runs ``--repeat``
times; the median is reported, with entries per second.  The damaged copy has one leaf page of
the ``nodes`` tree zeroed (what is lost is reported, and counted here).

    python bench/salvage.py
    python bench/salvage.py --quick
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

from common import STREAM
from scan import load

import rstore
from rstore.storage.checks import pagecheck

PAGE = 4096
PENDING = 10_000


def _build(path: str, entries: int) -> None:
    with rstore.Store(path, sync=False) as store:
        load(store.pipeline, entries)
        store.xgroup_create(STREAM, "g", "0")
        store.xreadgroup("g", "c", {STREAM: ">"}, count=PENDING)


def _zero_a_leaf(path: str) -> None:
    """Zero the first child of the nodes tree's root (a leaf of node records)."""
    data = os.path.join(path, "data.mdb")
    nodes = pagecheck.verify(data).trees["nodes"]
    with open(data, "r+b") as f:
        f.seek(nodes.root * PAGE)
        root = f.read(PAGE)
        at = int.from_bytes(root[16:18], "little")
        leaf = int.from_bytes(root[at : at + 4], "little") | root[at + 4] << 32
        f.seek(leaf * PAGE)
        f.write(bytes(PAGE))


def _timed(runs: int, work: Callable[[str], object], base: str) -> float:
    seconds = []
    for i in range(runs):
        target = os.path.join(base, f"out{i}")
        started = time.perf_counter()
        work(target)
        seconds.append(time.perf_counter() - started)
        shutil.rmtree(target, ignore_errors=True)
    return statistics.median(seconds)


def _save_and_restore(src: str, target: str) -> None:
    rdb = target + ".rdb"
    with rstore.Store(src, readonly=True, create=False) as store:
        store.save(rdb)
    with rstore.Store(target) as store:
        store.restore_file(rdb)
    os.unlink(rdb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="50k entries, one run")
    parser.add_argument("--dir", default=None, help="where the stores go (default: $TMPDIR)")
    args = parser.parse_args()
    entries, runs = (50_000, 1) if args.quick else (args.entries, args.repeat)
    base = tempfile.mkdtemp(prefix="bench-salvage-", dir=args.dir)
    try:
        sound, damaged = os.path.join(base, "sound"), os.path.join(base, "damaged")
        _build(sound, entries)
        shutil.copytree(sound, damaged)
        _zero_a_leaf(damaged)
        size = os.path.getsize(os.path.join(sound, "data.mdb"))
        print(f"{entries} entries, {PENDING} pending; data.mdb {size / (1 << 20):.1f} MiB")
        report = rstore.salvage_store(damaged, os.path.join(base, "check"))
        lost = entries - report.entries
        print(f"damaged copy: {lost} entries lost ({len(report.losses())} losses reported)")
        rows = (
            ("salvage, sound store", lambda t: rstore.salvage_store(sound, t), entries),
            ("salvage, a zeroed leaf", lambda t: rstore.salvage_store(damaged, t), entries - lost),
            ("save + restore_file", lambda t: _save_and_restore(sound, t), entries),
        )
        for label, work, copied in rows:
            seconds = _timed(runs, work, base)
            print(f"{label:<24} {seconds:8.2f} s  {copied / seconds:12,.0f} entries/s")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
