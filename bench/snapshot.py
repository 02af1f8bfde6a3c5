"""Snapshots: rstore ``Store.save`` beside valkey's ``SAVE``, and rstore ``restore_file`` beside
valkey-server's start-up load of the same file, on at least 1M entries.

Both sides get the same data, loaded untimed in pipelines of 1000: ``--entries`` XADDs of the
standard fields, and a group that has read 10k of them (10k pending entries, one consumer).

* **save** (target >= 0.7x in both modes, issue 12): rstore ``store.save(path)`` -- one read
  transaction, the RDB 11 file written, fsynced and renamed -- against valkey's ``SAVE``
  command (which also writes a temporary file, fsyncs and renames), timed from the client.
  Both with compression on (the default ``rdbcompression yes``), and a second row with it off.
  Rate: entries per second.
* **restore** (target >= 0.4x, issue 12): valkey's own ``dump.rdb`` of that data is restored
  into an empty rstore store (``sync=True``: one write transaction, committed and flushed),
  against a fresh valkey-server started on the same file (AOF off, so the RDB is what it
  loads); its load time is the "DB loaded from disk: N seconds" it logs.  Each restore is
  checked (XLEN).

The sides alternate, ``--rounds`` times each.  The results say whether the C helpers are in use
(python-lzf for LZF, rstore's or crcmod's CRC64, rstore's node decoder and snapshot loops).

    python bench/snapshot.py --repeat 3
    python bench/snapshot.py --quick
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from common import (
    STREAM,
    Result,
    Valkey,
    add_common_args,
    exit_on_sigterm,
    rate_result,
    repeat_runs,
    results_table,
    set_placement,
    temp_store,
    write_json,
)
from scan import load

import rstore

SIZES = {False: (1_000_000, 3), True: (50_000, 2)}
PENDING = 10_000
SAVE_TARGET = 0.7  # both modes (issue 12)
RESTORE_TARGET = 0.4


def helpers_in_use() -> str:
    """Which compiled helpers rstore uses here."""
    import importlib.util

    from rstore.codec import speedups

    parts = [
        f"LZF: {'python-lzf (C)' if importlib.util.find_spec('lzf') else 'pure Python'}",
        "CRC64: "
        + (
            "rstore C"
            if speedups.c_crc64 is not None
            else "crcmod C"
            if importlib.util.find_spec("crcmod._crcfunext")
            else "Python"
        ),
        f"node decoder: {'C' if speedups.ENABLED else 'pure Python'}",
        f"snapshot loops: {'C' if speedups.c_pack is not None else 'Python'}",
    ]
    return ", ".join(parts)


class LoadingValkey(Valkey):
    """A valkey-server started on an existing ``dump.rdb``, AOF off, so that it loads it."""

    def __init__(self, rdb_file: str, base_dir: str | None) -> None:
        super().__init__(
            "no", base_dir=base_dir, start_timeout_s=600.0, appendonly=False, rdb_file=rdb_file
        )

    def load_seconds(self) -> float:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            log = f.read()
        found = re.findall(r"DB loaded from disk: ([0-9.]+) seconds", log)
        if not found:
            raise RuntimeError(f"valkey did not log its load time; see {self.log_path}")
        return float(found[-1])


def add_group(side: Any, pending: int = PENDING) -> None:
    """The group of the benchmark data: ``g`` from 0, ``pending`` entries read by ``c``."""
    side.xgroup_create(STREAM, "g", "0")
    side.xreadgroup("g", "c", {STREAM: ">"}, count=pending)


def _restore_into_new_store(source: str, base_dir: str | None) -> tuple[float, int]:
    """Restore the RDB file ``source`` into a new ``sync=True`` store: the seconds the restore
    took, and the length of the benchmark stream it made."""
    target = tempfile.mkdtemp(prefix="bench-restore-", dir=base_dir)
    try:
        with rstore.Store(os.path.join(target, "s"), sync=True) as fresh:
            t0 = time.perf_counter()
            fresh.restore_file(source)
            took = time.perf_counter() - t0
            return took, fresh.xlen(STREAM)
    finally:
        shutil.rmtree(target, ignore_errors=True)


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    """One run of every snapshot workload (for run_all.py)."""
    return run(quick=quick, base_dir=base_dir)


def markdown(results: list[Result]) -> str:
    """The results as the table docs/benchmarks.md shows, with the seconds of each side."""
    lines = [results_table(results), ""]
    for r in results:
        secs = r.get("seconds", {})
        lines.append(
            f"* {r['workload']}: rstore {secs.get('rstore', 0):.2f} s, "
            f"valkey {secs.get('valkey', 0):.2f} s"
        )
    return "\n".join(lines)


def run(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    entries, rounds = SIZES[quick]
    pending = min(PENDING, entries // 10)
    work = tempfile.mkdtemp(prefix="bench-snap-", dir=base_dir)
    times: dict[str, list[float]] = {}
    try:
        with temp_store(False, base_dir) as store, Valkey("no", base_dir=base_dir) as valkey:
            client = valkey.client()
            for target_side, factory in (
                (store, store.pipeline),
                (client, lambda: client.pipeline(transaction=False)),
            ):
                load(factory, entries)
                add_group(target_side, pending)
            valkey_dump = os.path.join(valkey.dir, "dump.rdb")
            for compress in (True, False):
                client.config_set("rdbcompression", "yes" if compress else "no")
                store.save(os.path.join(work, "rstore.rdb"), compress=compress)  # warm-ups:
                client.save()  # code and pages loaded, the file's blocks allocated, untimed
                for i in range(rounds):
                    order = ("rstore", "valkey") if i % 2 == 0 else ("valkey", "rstore")
                    for side in order:
                        t0 = time.perf_counter()
                        if side == "rstore":
                            store.save(os.path.join(work, "rstore.rdb"), compress=compress)
                        else:
                            client.save()
                        times.setdefault(f"save {side} {compress}", []).append(
                            time.perf_counter() - t0
                        )
            client.config_set("rdbcompression", "yes")
            client.save()
            shutil.copy(valkey_dump, os.path.join(work, "valkey.rdb"))
        source = os.path.join(work, "valkey.rdb")
        size = os.path.getsize(source)
        _restore_into_new_store(source, base_dir)  # warm-up, untimed (valkey's loads start cold
        for i in range(rounds):  # processes either way; the file is in the page cache for both)
            order = ("rstore", "valkey") if i % 2 == 0 else ("valkey", "rstore")
            for side in order:
                if side == "rstore":
                    took, length = _restore_into_new_store(source, base_dir)
                    if length != entries:
                        raise RuntimeError("rstore restored the wrong length")
                else:
                    loader = LoadingValkey(source, base_dir)
                    with loader:
                        took = loader.load_seconds()
                        if loader.client().xlen(STREAM) != entries:
                            raise RuntimeError("valkey loaded the wrong length")
                times.setdefault(f"restore {side}", []).append(took)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def rate(key: str) -> float:
        return entries / statistics.median(times[key])

    helpers = helpers_in_use()
    results = [
        rate_result(
            workload=f"save, {entries // 1000}k entries + {pending // 1000}k pending",
            mode=f"RDB 11, compression {'on' if compress else 'off'} ({helpers})",
            target=SAVE_TARGET,
            rstore_rate=rate(f"save rstore {compress}"),
            valkey_rate=rate(f"save valkey {compress}"),
            seconds={
                side: statistics.median(times[f"save {side} {compress}"])
                for side in ("rstore", "valkey")
            },
        )
        for compress in (True, False)
    ]
    results.append(
        rate_result(
            workload=f"restore valkey's dump.rdb ({size / 1e6:.1f} MB), {entries // 1000}k entries",
            mode=f"rstore sync=True, one transaction / valkey start-up load ({helpers})",
            target=RESTORE_TARGET,
            rstore_rate=rate("restore rstore"),
            valkey_rate=rate("restore valkey"),
            seconds={
                side: statistics.median(times[f"restore {side}"]) for side in ("rstore", "valkey")
            },
        )
    )
    return results


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    results = repeat_runs(lambda: run(quick=args.quick, base_dir=args.dir), args.repeat)
    print(markdown(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
