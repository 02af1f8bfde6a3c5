"""CLI range output: ``rstore range`` beside ``valkey-cli XRANGE`` on the same entries, and
the memory ``rstore range`` / ``rstore info`` use on a stream of very large values.

* **Speed** (target: rstore >= 1/2 of valkey-cli's speed): ``--entries`` entries (200k) of the
  standard fields on both sides, loaded untimed; then ``rstore --store S range bench`` and
  ``valkey-cli XRANGE bench - +`` (its raw format: one element a line), stdout to
  ``/dev/null``, ``--runs`` times each, the sides alternating.  Reported: median wall time of a
  whole process, and the ratio valkey-cli / rstore (1.0 = as fast).  The outputs are counted
  once (lines) to check both printed the whole range.
* **Memory**: a stream of ``--large`` entries of ``--value-mb`` MB each (printable ASCII), and
  the peak memory of one ``rstore range`` and one ``rstore info`` of it, sampled from
  ``/proc/PID/status`` every 10 ms: resident memory (``VmHWM``), of which anonymous
  (``RssAnon``: Python objects) and file-backed (``RssFile``: LMDB's memory map, the store's
  pages the reads touched, which the kernel may drop at any time).

Python runs with its bytecode cache (a private ``PYTHONPYCACHEPREFIX``), as an installed
package does.

    python bench/cli_range.py
    python bench/cli_range.py --large 3 --value-mb 600      # the issue's case (slow to load)
    python bench/cli_range.py --also /tmp/old               # and another commit's CLI

(``--also DIR``: a commit exported as ``bench/cli_startup.py`` explains.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cli_startup import cli_of
from common import (
    FIELDS,
    PIPELINE_SIZE,
    STREAM,
    Valkey,
    add_placement_arg,
    exit_on_sigterm,
    set_placement,
)

import rstore

TARGET = 0.5  # rstore at least half as fast as valkey-cli
COMMANDS = ("range", "info")  # measured on the large values


def _rstore_script() -> str:
    beside = Path(sys.executable).with_name("rstore")
    found = str(beside) if beside.exists() else shutil.which("rstore")
    if found is None:
        raise SystemExit("the rstore console script is not installed (pip install -e .)")
    return found


def _env(work: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    return env


def _wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def _lines(argv: list[str], env: dict[str, str]) -> int:
    out = subprocess.run(argv, env=env, capture_output=True, check=True).stdout
    return out.count(b"\n")


def speed(work: str, entries: int, runs: int, base_dir: str | None, also: str | None) -> None:
    env = _env(work)
    store_path = os.path.join(work, "store")
    with rstore.Store(store_path, sync=False) as store, Valkey("everysec", base_dir=base_dir) as vk:
        client = vk.client()
        for done in range(0, entries, PIPELINE_SIZE):
            batch = min(PIPELINE_SIZE, entries - done)
            mine, theirs = store.pipeline(), client.pipeline(transaction=False)
            for _ in range(batch):
                mine.xadd(STREAM, FIELDS)
                theirs.xadd(STREAM, FIELDS)
            mine.execute()
            theirs.execute()
        valkey_cli = shutil.which("valkey-cli") or shutil.which("redis-cli")
        if valkey_cli is None:
            raise SystemExit("valkey-cli is not on PATH")
        sides = {
            "rstore range": [_rstore_script(), "--store", store_path, "range", STREAM],
            "valkey-cli XRANGE": [valkey_cli, "-p", str(vk.port), "XRANGE", STREAM, "-", "+"],
        }
        if also:
            sides[f"rstore range ({also})"] = cli_of(also, "--store", store_path, "range", STREAM)
        counted = {name: _lines(argv, env) for name, argv in sides.items()}  # also a warm-up
        per_entry = 1 + 2 * len(FIELDS)  # valkey-cli: the ID, then each name and value
        expected = dict.fromkeys(sides, entries)
        expected["valkey-cli XRANGE"] = entries * per_entry
        if counted != expected:
            raise RuntimeError(f"incomplete output: {counted}")
        walls: dict[str, list[float]] = {name: [] for name in sides}
        load = os.getloadavg()
        for _ in range(runs):
            for name, argv in sides.items():
                walls[name].append(_wall(argv, env))
    mine_s = statistics.median(walls["rstore range"])
    theirs_s = statistics.median(walls["valkey-cli XRANGE"])
    ratio = theirs_s / mine_s
    print(f"## Speed: {entries} entries, {runs} runs per side, alternating")
    print(f"# load average before: {load}")
    print()
    print("| command | median wall | entries/s |")
    print("|---|---:|---:|")
    for name, samples in walls.items():
        median = statistics.median(samples)
        print(f"| `{name}` | {median:.2f} s | {entries / median / 1e3:.0f}k |")
    met = "met" if ratio >= TARGET else "not met"
    print()
    print(f"rstore / valkey-cli speed: {ratio:.2f}x (target >= {TARGET}x: {met})")


def _peak(argv: list[str], env: dict[str, str]) -> dict[str, int]:
    """Peak VmHWM, RssAnon and RssFile (MiB) of one run, sampled every 10 ms."""
    peak = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
    with subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL) as proc:
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status") as status:
                    for line in status:
                        key, _, value = line.partition(":")
                        if key in peak:
                            peak[key] = max(peak[key], int(value.split()[0]) // 1024)
            except (FileNotFoundError, ProcessLookupError):
                break
            time.sleep(0.01)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed with {proc.returncode}")
    return peak


def memory(work: str, large: int, value_mb: int, also: str | None) -> None:
    env = _env(work)
    store_path = os.path.join(work, "large")
    value = b"v" * (value_mb << 20)
    with rstore.Store(store_path, sync=False) as store:
        for i in range(1, large + 1):
            store.execute("XADD", "big", f"{i}-0", "value", value)
    del value
    script = _rstore_script()
    print(f"## Memory: {large} entries of {value_mb} MiB (one field each)")
    print()
    print("| command | peak resident (VmHWM) | of which anonymous | file-backed (LMDB map) |")
    print("|---|---:|---:|---:|")
    runs = [(f"rstore {cmd} big", [script, "--store", store_path, cmd, "big"]) for cmd in COMMANDS]
    if also:
        runs += [(f"rstore {cmd} big ({also})", cli_of(also, "--store", store_path, cmd, "big"))
                 for cmd in COMMANDS]  # fmt: skip
    for name, command in runs:
        peak = _peak(command, env)
        print(f"| `{name}` | {peak['VmHWM']} MiB | {peak['RssAnon']} MiB | {peak['RssFile']} MiB |")


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200_000, help="entries for the speed run")
    parser.add_argument("--runs", type=int, default=5, help="runs per side (default 5)")
    parser.add_argument("--large", type=int, default=3, help="large entries (default 3)")
    parser.add_argument("--value-mb", type=int, default=200, help="MiB per large value (200)")
    parser.add_argument("--only", choices=("speed", "memory"), help="run only one part")
    parser.add_argument("--dir", default=None, help="where the temporary stores go")
    parser.add_argument("--also", metavar="DIR", help="also measure the CLI exported to DIR")
    add_placement_arg(parser)
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    work = tempfile.mkdtemp(prefix="bench-cli-range-", dir=args.dir)
    try:
        if args.only in (None, "speed"):
            speed(work, args.entries, args.runs, args.dir, args.also)
        if args.only in (None, "memory"):
            print()
            memory(work, args.large, args.value_mb, args.also)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
