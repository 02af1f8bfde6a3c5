"""What watching a store costs it: a writer's XADD rate with no watcher, with ``rstore top``
refreshing every second (its default), and every 0.1 s (ten times the work, to make the cost
visible), in one run; the watcher's own CPU and sample time beside them.

The store holds ``--streams`` streams with two consumer groups each, one with pending entries,
so that a sample runs every command it can (SCAN, XINFO STREAM / GROUPS / CONSUMERS, XPENDING).
The writer is its own process: durable XADDs (``sync=True``, each acknowledged once on disk) to
those streams, one at a time, for ``--seconds``; the three settings alternate ``--repeat`` times
and the medians are compared.

    python bench/top_cost.py
    python bench/top_cost.py --streams 100 --seconds 5 --repeat 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rstore

WRITER = """
import sys, time, rstore
path, streams, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with rstore.Store(path) as store:
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        store.xadd(f"s{n % streams}", {"n": n})
        n += 1
print(n / seconds)
"""


def make_store(path: str, streams: int) -> None:
    with rstore.Store(path) as store:
        for s in range(streams):
            key = f"s{s}"
            for n in range(200):
                store.xadd(key, {"n": n})
            store.xgroup_create(key, "busy", "0")
            store.xgroup_create(key, "idle", "$")
            store.xreadgroup("busy", "c1", {key: ">"}, count=50)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(path: str, streams: int, seconds: float, interval: float | None) -> dict[str, float]:
    """The writer's rate, with ``rstore top`` at ``interval`` (``None``: no watcher); the
    watcher writes its frames to a file (a pipe nobody reads would stop it)."""
    top = None
    with tempfile.TemporaryFile("w+") as frames_file:
        if interval is not None:
            argv = [sys.executable, "-m", "rstore_cli", "--store", path, "top", "--json",
                    "--interval", str(interval)]  # fmt: skip
            top = subprocess.Popen(argv, stdout=frames_file)
            while os.fstat(frames_file.fileno()).st_size == 0:  # started, sampled once
                time.sleep(0.01)
        try:
            started = cpu_seconds(top.pid) if top else 0.0
            writer = subprocess.run(
                [sys.executable, "-c", WRITER, path, str(streams), str(seconds)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            result = {"xadd_per_s": float(writer.stdout)}
            if top is not None:
                result["top_cpu_percent"] = (cpu_seconds(top.pid) - started) / seconds * 100
        finally:
            if top is not None:
                top.terminate()
                top.wait(30)
        frames_file.seek(0)
        frames = [json.loads(line) for line in frames_file if line.strip()]
    if frames:
        result["sample_ms"] = statistics.median(f["sample_ms"] for f in frames)
        result["frames"] = len(frames)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings: dict[str, float | None] = {"none": None, "top 1 s": 1.0, "top 0.1 s": 0.1}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in settings}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "store")
        make_store(path, args.streams)
        for _ in range(args.repeat):
            for name, interval in settings.items():
                runs[name].append(one_run(path, args.streams, args.seconds, interval))
                time.sleep(0.5)
    base = statistics.median(r["xadd_per_s"] for r in runs["none"])
    rows = []
    for name, results in runs.items():
        rate = statistics.median(r["xadd_per_s"] for r in results)
        row = {"watcher": name, "xadd_per_s": round(rate), "ratio": round(rate / base, 3)}
        for extra in ("top_cpu_percent", "sample_ms"):
            values = [r[extra] for r in results if extra in r]
            if values:
                row[extra] = round(statistics.median(values), 2)
        rows.append(row)
    if args.json:
        print(json.dumps({"streams": args.streams, "rows": rows}, indent=2))
        return 0
    print(f"{args.streams} streams x 2 groups; durable XADD for {args.seconds} s, "
          f"median of {args.repeat}")  # fmt: skip
    print(f"{'watcher':<10} {'XADD/s':>8} {'vs none':>8} {'top CPU %':>10} {'sample ms':>10}")
    for row in rows:
        print(f"{row['watcher']:<10} {row['xadd_per_s']:>8} {row['ratio']:>8.3f} "
              f"{row.get('top_cpu_percent', '-'):>10} {row.get('sample_ms', '-'):>10}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
