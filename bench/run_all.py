"""Run every rstore-vs-valkey benchmark and print (or publish) the results as markdown.

Per run, in this order, each workload with both sides interleaved: single XADD durable and
relaxed, pipelined XADD durable and relaxed, full XRANGE scan, the consumer-group cycle durable
and relaxed, and the cross-process wake-up latency (XREAD and XREADGROUP, both modes); once per
CPU placement asked for (``--placement``, default ``shared split``: valkey -- and the helper
reader processes -- on the benchmark's CPU, then on the other one; the first is the headline).
In the headline placement only, the group cycle is also measured beside persist-queue and
litequeue; and once per run, after the placements, the CPU used by idle blocked readers,
the snapshots (save and restore of a 1M-entry stream, in the headline placement) and the
concurrent writers (16 and 4 writer processes, with 8 and 0 reader processes, not pinned).  With
``--repeat N`` the runs are repeated and each figure is the median of N (each ratio: the median
of the N per-run ratios, its min–max beside it).  Then, once (they do not vary between runs):
the footprint (bytes per entry) and the syscall count of a durable commit (when ``strace`` is
installed); the machine and its measured flush cost come before and after.

    python bench/run_all.py --quick                      # a smoke run, under a minute
    python bench/run_all.py --repeat 7 --write-doc       # the published figures

To measure one commit of rstore while the work tree moves, export it and put it first on the
path (the output then says where rstore was imported from):

    mkdir -p /tmp/rstore-head && git archive HEAD rstore | tar -x -C /tmp/rstore-head
    PYTHONPATH=/tmp/rstore-head python bench/run_all.py --repeat 7 --write-doc

``--write-doc`` replaces what lies between the ``<!-- bench:begin -->`` and
``<!-- bench:end -->`` markers of docs/benchmarks.md with the output.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import footprint
import group_cycle
import hiredis
import idle_cpu
import lmdb
import machine
import redis
import scan
import snapshot
import syscalls
import wakeup
import writers
import xadd_pipeline
import xadd_single
from common import (
    PLACEMENTS,
    VALKEY_BINARY,
    Result,
    combine,
    exit_on_sigterm,
    latency_table,
    results_table,
    rstore_origin,
    set_placement,
    write_json,
)

import rstore

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"
PARTS = (
    "single", "pipeline", "scan", "group", "wakeup", "idle", "snapshot", "writers", "footprint",
    "syscalls", "machine",
)  # fmt: skip
PLACED_PARTS = {"single", "pipeline", "scan", "group", "wakeup"}  # measured per placement


def versions() -> str:
    valkey = subprocess.run(
        [VALKEY_BINARY, "--version"], capture_output=True, text=True, check=False
    ).stdout.split()
    valkey_version = next((w[2:] for w in valkey if w.startswith("v=")), "?")
    lmdb_c = ".".join(str(x) for x in lmdb.version())

    def dist(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    return (
        f"rstore {rstore.__version__} ({rstore_origin()}), valkey-server {valkey_version}, "
        f"redis-py {redis.__version__} + hiredis {hiredis.__version__} (RESP2), "
        f"py-lmdb {lmdb.__version__} (LMDB {lmdb_c}), persist-queue {dist('persist-queue')}, "
        f"litequeue {dist('litequeue')} (SQLite {sqlite3.sqlite_version})"
    )


def one_run(parts: set[str], quick: bool, base_dir: str | None, headline: bool) -> list[Result]:
    results: list[Result] = []
    if "single" in parts:
        results += xadd_single.run_all(quick=quick, base_dir=base_dir)
    if "pipeline" in parts:
        results += xadd_pipeline.run_all(quick=quick, base_dir=base_dir)
    if "scan" in parts:
        results += scan.run_all(quick=quick, base_dir=base_dir)
    if "group" in parts:
        results += group_cycle.run_all(quick=quick, base_dir=base_dir, peers=headline)
    if "wakeup" in parts:
        results += wakeup.run_all(quick=quick, base_dir=base_dir)
    return results


def render(args: argparse.Namespace, command: str, report: dict[str, Any]) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"Measured {now}{' (QUICK: smoke sizes, not meaningful)' if args.quick else ''} with",
        f"{versions()}.",
        "",
        "Produced by:",
        "",
        "```sh",
        command,
        "```",
    ]
    before, after = report["load_before"], report["load_after"]
    out += [
        "",
        f"Load average (1, 5, 15 min) on {os.cpu_count()} cores: "
        f"{', '.join(f'{x:.2f}' for x in before)} at the start, "
        f"{', '.join(f'{x:.2f}' for x in after)} at the end"
        + (
            " (above the core count: other work shared the machine during the run)."
            if max(before[0], after[0]) > (os.cpu_count() or 1)
            else "."
        ),
    ]
    if report.get("machine"):
        costs = {"before the run": report["fsync_ms"]}
        if report.get("fsync_ms_after"):
            costs["after the run"] = report["fsync_ms_after"]
        out += ["", "#### Machine", "", machine.markdown(report["machine"], costs)]
    runs = args.repeat
    of_runs = f"{runs} run{'s' if runs > 1 else ''}"
    for i, placed in enumerate(report.get("placements", [])):
        label = "headline" if i == 0 else "for comparison"
        rates = placed["rates"]
        out += [
            "",
            f"#### Rates, CPU placement `{placed['mode']}` ({label}): {placed['description']}",
            "",
            f"Median of {of_runs}; ratio = rstore / valkey, the median of the per-run ratios, "
            "min–max over runs in brackets.",
            "",
            results_table(rates),
            "",
            f"Latency, CPU placement `{placed['mode']}` (ms; each percentile is the median over "
            "runs):",
            "",
            latency_table(rates),
        ]
        if any(r.get("kind") == "wakeup" for r in rates):
            out += [
                "",
                f"Cross-process wake-up latency, CPU placement `{placed['mode']}` (ms, from the "
                "writer's XADD to the return of the blocked read in the reader process; "
                f"{next(r['wakeups'] for r in rates if r.get('kind') == 'wakeup')} wake-ups per "
                "side per run, each percentile the "
                "median over runs; the reader process runs where valkey-server does):",
                "",
                wakeup.wakeup_table(rates),
            ]
        if any(r.get("kind") == "peer" for r in rates):
            out += [
                "",
                "The group cycle beside the Python durable queues (same run, same messages, "
                f"interleaved; median of {of_runs}; rstore / peer is the median of the per-run "
                "ratios, min–max in brackets; rstore in the mode matching the peer's):",
                "",
                group_cycle.peers_table(rates),
            ]
    if report.get("idle"):
        out += [
            "",
            f"#### Idle blocked readers: CPU over {report['idle'][0]['seconds']:.0f} s with no "
            f"writes (% of one core; median of {of_runs}; {report['idle_placement']})",
            "",
            idle_cpu.idle_table(report["idle"]),
        ]
    if report.get("snapshot"):
        out += [
            "",
            f"#### Snapshots: save and restore beside valkey (median of {of_runs}; "
            f"{report['snapshot_placement']})",
            "",
            snapshot.markdown(report["snapshot"]),
        ]
    if report.get("writers"):
        out += [
            "",
            f"#### Concurrent writers: N writer processes (+ M readers) for "
            f"{report['writers'][0]['seconds']:.0f} s per side, `sync=True` vs `appendfsync "
            f"always` (median of {of_runs}; {report['writers_placement']}; "
            "`python bench/writers.py`)",
            "",
            writers.markdown(report["writers"]),
        ]
    if report.get("syscalls"):
        out += [
            "",
            "#### What a durable commit asks of the disk (strace, `python bench/syscalls.py`)",
            "",
            syscalls.markdown(report["syscalls"]),
        ]
    if report.get("footprint"):
        out += [
            "",
            "#### Footprint (bytes on disk per entry; one run, the figures are deterministic)",
            "",
            footprint.table(report["footprint"]),
            "",
            "```text",
            footprint.detail(report["footprint"]),
            "```",
        ]
    return "\n".join(out) + "\n"


def write_doc(path: Path, block: str) -> None:
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} … {END} markers to write between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{block}{END}{tail}")
    print(f"# wrote the results into {path}", file=sys.stderr)


def wait_for_idle(max_s: float, threshold: float = 1.0) -> None:
    deadline = time.monotonic() + max_s
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        print(f"# load average {os.getloadavg()[0]:.2f}: waiting", file=sys.stderr, flush=True)
        time.sleep(min(15.0, max(0.0, deadline - time.monotonic())))


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: a smoke run, figures not meaningful"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, metavar="N", help="runs to take medians of (default 3)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="run only these parts (default: all)",
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="parent directory of the temporary stores and valkey data (default: temp dir)",
    )
    parser.add_argument("--json", default=None, metavar="FILE", help="also write raw results")
    parser.add_argument(
        "--placement",
        nargs="+",
        choices=PLACEMENTS,
        default=["shared", "split"],
        help="CPU placements of this process and valkey to measure, the first one the headline: "
        "shared (both on one CPU), split (one CPU each), os (not pinned); "
        "default: shared split",
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0,
        metavar="SECONDS",
        help="on a shared machine: first wait up to SECONDS for the 1-minute load average to "
        "drop below 1.0",
    )
    parser.add_argument(
        "--write-doc",
        nargs="?",
        const=str(DOC),
        default=None,
        metavar="PATH",
        help=f"write the markdown between the markers of PATH (default {DOC.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    parts = set(args.only)
    argv_used = sys.argv[1:] if argv is None else argv
    command = shlex.join(["python", "bench/run_all.py", *argv_used])
    if os.environ.get("PYTHONPATH"):
        command = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} {command}"

    wait_for_idle(args.wait_idle)
    report: dict[str, Any] = {"load_before": os.getloadavg()}
    if "machine" in parts:  # described before this process pins itself to a CPU
        report["machine"] = machine.describe(args.dir)
    placements = list(dict.fromkeys(args.placement))
    set_placement(placements[0])
    if "machine" in parts:
        print("# machine and flush cost", file=sys.stderr, flush=True)
        report["fsync_ms"] = machine.fsync_costs(args.dir, 100 if args.quick else 500)
    if parts & (PLACED_PARTS | {"idle", "snapshot", "writers"}):
        # each repeat runs every placement in turn, so they share the machine's drift too
        runs: dict[str, list[list[Result]]] = {mode: [] for mode in placements}
        idle_runs: list[list[Result]] = []
        snapshot_runs: list[list[Result]] = []
        writers_runs: list[list[Result]] = []
        descriptions: dict[str, str] = {}
        for i in range(args.repeat):
            for mode in placements if parts & PLACED_PARTS else []:
                descriptions[mode] = set_placement(mode)
                print(f"# run {i + 1}/{args.repeat}, placement {mode}", file=sys.stderr, flush=True)
                headline = mode == placements[0]
                runs[mode].append(one_run(parts, args.quick, args.dir, headline))
                print(results_table(combine(runs[mode][-1:])), file=sys.stderr, flush=True)
            if "idle" in parts:
                set_placement(placements[0])
                print(f"# run {i + 1}/{args.repeat}, idle readers", file=sys.stderr, flush=True)
                idle_runs.append(idle_cpu.run_all(quick=args.quick, base_dir=args.dir))
                print(idle_cpu.idle_table(idle_runs[-1]), file=sys.stderr, flush=True)
            if "snapshot" in parts:
                set_placement(placements[0])
                print(f"# run {i + 1}/{args.repeat}, snapshots", file=sys.stderr, flush=True)
                snapshot_runs.append(snapshot.run_all(quick=args.quick, base_dir=args.dir))
                print(snapshot.markdown(snapshot_runs[-1]), file=sys.stderr, flush=True)
            if "writers" in parts:
                set_placement("os")  # many processes: let them spread over the cores
                print(f"# run {i + 1}/{args.repeat}, writers", file=sys.stderr, flush=True)
                writers_runs.append(writers.run_all(quick=args.quick, base_dir=args.dir))
                print(writers.markdown(writers_runs[-1]), file=sys.stderr, flush=True)
        if idle_runs:
            report["idle"] = combine(idle_runs)
            report["idle_placement"] = set_placement(placements[0])
        if snapshot_runs:
            report["snapshot"] = combine(snapshot_runs)
            report["snapshot_placement"] = set_placement(placements[0])
        if writers_runs:
            report["writers"] = combine(writers_runs)
            report["writers_placement"] = set_placement("os")
        report["placements"] = [
            {
                "mode": mode,
                "description": descriptions[mode],
                "rates": combine(runs[mode]),
                "runs": runs[mode],
            }
            for mode in placements
            if runs[mode]
        ]
        set_placement(placements[0])
    if "syscalls" in parts and shutil.which("strace"):
        print("# syscalls of a durable commit", file=sys.stderr, flush=True)
        report["syscalls"] = syscalls.report(50 if args.quick else 200, args.dir)
    if "footprint" in parts:
        print("# footprint", file=sys.stderr, flush=True)
        report["footprint"] = footprint.run_all(quick=args.quick, base_dir=args.dir)

    if "machine" in parts:
        report["fsync_ms_after"] = machine.fsync_costs(args.dir, 100 if args.quick else 500)
    report["load_after"] = os.getloadavg()
    block = render(args, command, report)
    print(block)
    if args.json:
        write_json(args.json, report)
    if args.write_doc:
        write_doc(Path(args.write_doc), block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
