"""``rstore import`` of a JSONL export beside ``rstore replay --to-store`` of the same entries
(issue 21: import at least half as fast as the replay).

For each ``--entries`` size (200,000 and 1,000,000), ``--streams`` streams of the standard three
short fields (ten entries a millisecond) are written into a source store and exported with
``rstore export -o`` (untimed).  Then, ``--runs`` times, the two sides alternating, each into a
fresh target store:

* **replay**: ``rstore --store SOURCE replay --to-store TARGET`` (a process; whole nodes copied);
* **import**: ``rstore --store TARGET import export.jsonl`` (a process; the JSONL decoded into
  nodes built as XADD builds them).

Both are whole ``rstore`` processes (start-up included) writing with ``sync=True``.  Each
target is checked for its entry count after every run.  Printed: the median wall time of each
side, entries a second, and the ratio of import's rate to replay's (target >= 0.5).

    python bench/import_speed.py
    python bench/import_speed.py --entries 1000000 --runs 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import FIELDS, STREAM, exit_on_sigterm

import rstore

BATCH = 50_000


def load(path: Path, entries: int, streams: int) -> None:
    flat = [x for pair in FIELDS.items() for x in (str(pair[0]).encode(), str(pair[1]).encode())]
    names = [STREAM.encode() if streams == 1 else b"%s:%d" % (STREAM.encode(), n)
             for n in range(streams)]  # fmt: skip
    with rstore.Store(path, sync=False) as store:
        batch = []
        for i in range(entries):
            batch.append((names[i % streams], (1_700_000_000_000 + i // 10, i % 10), flat))
            if len(batch) == BATCH:
                store.append_entries(batch)
                batch = []
        if batch:
            store.append_entries(batch)


def cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "rstore_cli", *args], check=True, stdout=subprocess.DEVNULL
    )


def entries_in(path: Path) -> int:
    with rstore.Store(path, create=False) as store:
        return sum(int(store.xlen(key)) for key in store.execute("KEYS", "*"))


def measure(tmp: Path, entries: int, streams: int, runs: int) -> dict[str, list[float]]:
    source, jsonl, target = tmp / "source", tmp / "export.jsonl", tmp / "target"
    load(source, entries, streams)
    cli("--store", str(source), "export", "-o", str(jsonl))
    sides = {
        "replay --to-store": ("--store", str(source), "replay", "--to-store", str(target)),
        "import": ("--store", str(target), "import", str(jsonl)),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(runs):
        for name, args in sides.items():
            shutil.rmtree(target, ignore_errors=True)
            began = time.perf_counter()
            cli(*args)
            times[name].append(time.perf_counter() - began)
            got = entries_in(target)
            if got != entries:
                raise SystemExit(f"{name}: {got} entries in the target, not {entries}")
    shutil.rmtree(source)
    jsonl.unlink()
    return times


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the stores and the file go")
    args = parser.parse_args()
    for entries in args.entries:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            times = measure(Path(tmp), entries, args.streams, args.runs)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"{entries:,} entries in {args.streams} stream(s), medians of {args.runs} runs:")
        for name, seconds in med.items():
            runs = ", ".join(f"{t:.2f}" for t in times[name])
            print(f"  {name:<18} {seconds:6.2f} s {entries / seconds:>11,.0f}/s  (runs: {runs})")
        ratio = med["replay --to-store"] / med["import"]
        print(f"  import: {ratio:.2f}x replay's rate (target >= 0.5x)")


if __name__ == "__main__":
    main()
