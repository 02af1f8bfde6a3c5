"""Profile rstore's side of the single-XADD, pipelined-XADD, scan, group-cycle and snapshot
workloads.

Runs each workload on rstore alone (no valkey) under cProfile, or pyinstrument with
``--profiler pyinstrument`` (``pip install pyinstrument``), and prints the hot spots: the
functions with the most cumulative time and the most own time.  For the engineers optimising
the engine; the figures under a profiler are slower than in the benchmarks.

    python bench/profile_rstore.py --workload single-sync pipeline scan --top 25
    python bench/profile_rstore.py --workload group group-sync --profiler pyinstrument
    python bench/profile_rstore.py --workload save restore --entries 1000000

``save`` and ``restore`` load the stream and its group as ``bench/snapshot.py`` does (not
profiled), then profile ``Store.save`` (compression on) and ``Store.restore_file`` of that file
into a fresh ``sync=True`` store; ``--entries`` sets the stream length (default 1M).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import FIELDS, PAGE_SIZE, PIPELINE_SIZE, STREAM, exit_on_sigterm, temp_store
from group_cycle import CONSUMER, COUNT, GROUP
from scan import full_scan
from scan import load as load_stream
from snapshot import add_group

import rstore


def single(store: rstore.Store, calls: int) -> Callable[[], None]:
    def body() -> None:
        xadd = store.xadd
        for _ in range(calls):
            xadd(STREAM, FIELDS)

    return body


def pipelined(store: rstore.Store, batches: int) -> Callable[[], None]:
    def body() -> None:
        for _ in range(batches):
            pipe = store.pipeline()
            for _ in range(PIPELINE_SIZE):
                pipe.xadd(STREAM, FIELDS)
            pipe.execute()

    return body


def scanning(store: rstore.Store, scans: int) -> Callable[[], None]:
    def body() -> None:
        for _ in range(scans):
            full_scan(store.xrange, [])

    return body


def _load_then_scan(store: rstore.Store) -> Callable[[], None]:
    load_stream(store.pipeline, 100_000)
    return scanning(store, 5)


def group_draining(store: rstore.Store, entries: int) -> Callable[[], None]:
    """Load ``entries`` more entries and a group reading from 0 (not profiled); the body drains
    the group: XREADGROUP COUNT 100 + XACK of those IDs until nothing is left."""
    load_stream(store.pipeline, entries)
    store.xgroup_create(STREAM, GROUP, "0")

    def body() -> None:
        xreadgroup, xack = store.xreadgroup, store.xack
        while reply := xreadgroup(GROUP, CONSUMER, {STREAM: ">"}, count=COUNT):
            xack(STREAM, GROUP, *[entry_id for entry_id, _ in reply[0][1]])

    return body


SNAPSHOT_ENTRIES = [1_000_000]  # --entries


def _load_for_snapshot(store: rstore.Store) -> str:
    """Load the snapshot benchmark's stream and group (unprofiled); a path for a file next to
    the store."""
    load_stream(store.pipeline, SNAPSHOT_ENTRIES[0] - 200)  # 200 came from the warm-up
    add_group(store)
    return os.path.join(os.path.dirname(store.path), "profile.rdb")


def saving(store: rstore.Store) -> Callable[[], None]:
    path = _load_for_snapshot(store)

    def body() -> None:
        store.save(path)

    return body


def restoring(store: rstore.Store) -> Callable[[], None]:
    path = _load_for_snapshot(store)
    store.save(path)  # rstore writes what valkey writes: the same listpacks, LZF-compressed

    def body() -> None:
        with rstore.Store(os.path.join(os.path.dirname(path), "restored"), sync=True) as target:
            target.restore_file(path)

    return body


# name -> (sync, prepare: store -> body, what it runs)
WORKLOADS: dict[str, tuple[bool, Callable[[rstore.Store], Callable[[], None]], str]] = {
    "single-sync": (True, lambda s: single(s, 2000), "2000 single XADDs, sync=True"),
    "single-nosync": (False, lambda s: single(s, 30000), "30000 single XADDs, sync=False"),
    "pipeline": (
        False,
        lambda s: pipelined(s, 30),
        f"30 pipelines of {PIPELINE_SIZE} XADDs, sync=False",
    ),
    "pipeline-sync": (
        True,
        lambda s: pipelined(s, 30),
        f"30 pipelines of {PIPELINE_SIZE} XADDs, sync=True",
    ),
    "scan": (
        False,
        _load_then_scan,
        f"5 full scans of 100k entries in pages of {PAGE_SIZE}",
    ),
    "group": (
        False,
        lambda s: group_draining(s, 100_000),
        f"XREADGROUP COUNT {COUNT} + XACK until ~100k entries are drained, sync=False",
    ),
    "group-sync": (
        True,
        lambda s: group_draining(s, 100_000),
        f"XREADGROUP COUNT {COUNT} + XACK until ~100k entries are drained, sync=True",
    ),
    "save": (False, saving, "Store.save (compression on) of --entries entries and a group"),
    "restore": (
        True,
        restoring,
        "Store.restore_file of that file into an empty store, sync=True",
    ),
}


def profile_cprofile(body: Callable[[], None], top: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    body()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.strip_dirs().sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def profile_pyinstrument(body: Callable[[], None], top: int) -> str:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    body()
    profiler.stop()
    return str(profiler.output_text(unicode=True, color=False, show_all=False))


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workload",
        nargs="+",
        choices=list(WORKLOADS),
        default=list(WORKLOADS),
        help="which workloads to profile (default: all)",
    )
    parser.add_argument("--profiler", choices=("cprofile", "pyinstrument"), default="cprofile")
    parser.add_argument("--top", type=int, default=25, help="rows per cProfile listing")
    parser.add_argument("--dir", default=None, help="parent of the temporary stores")
    parser.add_argument(
        "--entries",
        type=int,
        default=SNAPSHOT_ENTRIES[0],
        help="stream length for save and restore (default %(default)s)",
    )
    args = parser.parse_args(argv)
    SNAPSHOT_ENTRIES[0] = args.entries
    run: Callable[[Callable[[], None], int], str] = (
        profile_cprofile if args.profiler == "cprofile" else profile_pyinstrument
    )
    print(f"rstore imported from {Path(rstore.__file__).resolve().parent}")
    for name in args.workload:
        sync, prepare, what = WORKLOADS[name]
        with temp_store(sync, args.dir or tempfile.gettempdir()) as store:
            for _ in range(200):  # warm up: the stream and the first nodes exist
                store.xadd(STREAM, FIELDS)
            body: Any = prepare(store)
            print(f"\n======== {name}: {what}\n", flush=True)
            print(run(body, args.top), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
