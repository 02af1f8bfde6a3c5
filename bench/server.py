"""``rstore serve`` beside valkey-server, with the same load generators for both (issue 13).

* **XADD** through ``valkey-benchmark`` (the same command line for both servers): 1 and 50
  clients, pipeline 1 and 16, each server at equal durability -- ``rstore serve --sync always``
  against valkey ``appendfsync always``, and ``--sync everysec`` against ``everysec``.
* **Reads** (``--only reads``): ``XLEN`` and ``XRANGE COUNT 10`` by ``valkey-benchmark``, 50
  clients, over a stream of 1000 entries.
* **Group cycle**: N redis-py clients, each ``XREADGROUP GROUP g cN COUNT 10 STREAMS s >`` then
  ``XACK`` of what it got, over a stream filled beforehand, until drained; entries/s.

* **Latency** (``--only latency``), one client, no pipeline, p50 / p99 of each request:
  XADD timed by ``valkey-benchmark -c 1 -P 1 --csv`` (its own percentiles) and by the small
  client of ``server_probes.py``, and the XREADGROUP COUNT 10 + XACK cycle timed by that
  client (valkey-benchmark cannot ack what it read), at both durability pairs.
* **Memory** (``--only memory``): the server process's RSS (``/proc/PID/status``) and INFO
  ``used_memory`` at start, with ``--idle-clients`` clients that sent a PING, and with
  ``--blocked-clients`` clients in ``XREAD BLOCK 0`` and in ``XREADGROUP ... BLOCK 0`` (INFO
  ``blocked_clients`` checked on both servers), each state on a fresh server.

Both servers run on free loopback ports with their data in temporary directories on the same
filesystem; each ratio is rstore / valkey of the same round.  Every part alternates which
server goes first from round to round.  The median of ``--repeat`` rounds is
printed (and ``--json`` writes every figure).

    python bench/server.py                      # --repeat 3 --requests 20000, every part
    python bench/server.py --only latency memory
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis

sys.path.append(str(Path(__file__).resolve().parent.parent / "fixtures"))
import server_probes as probes
from serve_process import answering
from valkey_server import HOST, ValkeyServer, free_port

BENCHMARK = shutil.which("valkey-benchmark") or shutil.which("redis-benchmark") or ""


@contextlib.contextmanager
def rstore_server(base: str, sync: str, workers: int = 1) -> Iterator[tuple[int, int]]:
    """``rstore serve`` on a free port over a new store (``--workers``); its port and PID
    (the supervisor's, with workers)."""
    port = free_port()
    directory = tempfile.mkdtemp(prefix="bench-serve-", dir=base)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rstore_cli", "--store", f"{directory}/store", "serve",
         "--port", str(port), "--sync", sync, "--loglevel", "warning",
         "--workers", str(workers)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        if not answering(port, proc):
            raise RuntimeError("rstore serve did not start")
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def valkey_server(base: str, sync: str) -> Iterator[tuple[int, int]]:
    """valkey-server with the append-only file at ``sync``; its port and PID."""
    server = ValkeyServer(appendonly=True, appendfsync=sync, temp_parent=base)
    server.start()
    try:
        yield server.port, server.pid
    finally:
        server.stop()


def benchmark_rate(port: int, clients: int, pipeline: int, requests: int, *command: str) -> float:
    """Requests per second valkey-benchmark reports for ``command``."""
    out = subprocess.run(
        [BENCHMARK, "-h", HOST, "-p", str(port), "-c", str(clients), "-P", str(pipeline),
         "-n", str(requests), "--csv", *command],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    rows = [line for line in out.stdout.splitlines() if line.startswith(f'"{command[0]}')]
    if not rows:
        raise RuntimeError(f"no result from {BENCHMARK}: {out.stdout}{out.stderr}")
    return float(re.findall(r'"([0-9.]+)"', rows[-1])[0])


def xadd_rate(port: int, clients: int, pipeline: int, requests: int) -> float:
    """Requests per second valkey-benchmark reports for ``XADD bench * f v``."""
    return benchmark_rate(
        port, clients, pipeline, requests, "XADD", "bench", "*", "user", "12345", "action", "click"
    )


#: the reads of the ``reads`` part, over a stream of :data:`READ_ENTRIES` entries
READS = {"XLEN": ["XLEN", "reads"], "XRANGE COUNT 10": ["XRANGE", "reads", "-", "+", "COUNT", "10"]}
READ_ENTRIES = 1000


def reads_round(args: argparse.Namespace, round_no: int) -> list[dict[str, Any]]:
    """XLEN and XRANGE COUNT 10 by valkey-benchmark, 50 clients, over the same stream."""
    results = []
    for name, command in READS.items():
        rate = {}
        for side in sides(round_no):
            with start(side, args, "everysec") as (port, _):
                client = redis.Redis(host=HOST, port=port)
                pipe = client.pipeline(transaction=False)
                for i in range(READ_ENTRIES):
                    pipe.xadd("reads", {"user": str(i), "action": "click"})
                pipe.execute()
                rate[side] = benchmark_rate(port, 50, 1, args.requests * 2, *command)
        results.append({"part": "reads", "workload": f"{name}, 50 clients", "sync": "-",
                        "rstore": rate["rstore"], "valkey": rate["valkey"],
                        "ratio": rate["rstore"] / rate["valkey"]})  # fmt: skip
    return results


def group_cycle_rate(port: int, clients: int, entries: int) -> float:
    """Entries per second that ``clients`` redis-py consumers read and ack."""
    admin = redis.Redis(host=HOST, port=port)
    admin.delete("cycle")
    pipe = admin.pipeline(transaction=False)
    for i in range(entries):
        pipe.xadd("cycle", {"n": str(i)})
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    admin.xgroup_create("cycle", "g", "0")
    done = [0] * clients

    def consume(k: int) -> None:
        r = redis.Redis(host=HOST, port=port)
        while True:
            got: Any = r.xreadgroup("g", f"c{k}", {"cycle": ">"}, count=10)
            if not got:
                return
            ids: list[bytes] = [entry_id for entry_id, _ in got[0][1]]
            r.xack("cycle", "g", *ids)
            done[k] += len(ids)

    threads = [threading.Thread(target=consume, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    assert sum(done) == entries, (sum(done), entries)
    return entries / seconds


def one_round(args: argparse.Namespace, round_no: int = 0) -> list[dict[str, Any]]:
    """Every throughput row once; which server runs first flips with ``round_no``."""
    results = []
    for sync in args.sync:
        for clients, pipeline in ((1, 1), (50, 1), (1, 16), (50, 16)):
            n = args.requests if clients * pipeline > 1 else max(1000, args.requests // 10)
            rate = {}
            for side in sides(round_no):
                with start(side, args, sync) as (port, _):
                    rate[side] = xadd_rate(port, clients, pipeline, n)
            results.append({"workload": f"XADD c={clients} P={pipeline}", "sync": sync,
                            "rstore": rate["rstore"], "valkey": rate["valkey"],
                            "ratio": rate["rstore"] / rate["valkey"]})  # fmt: skip
        for clients in (1, 8):
            rate = {}
            for side in sides(round_no):
                with start(side, args, sync) as (port, _):
                    rate[side] = group_cycle_rate(port, clients, args.cycle_entries)
            results.append({"workload": f"XREADGROUP 10 + XACK, {clients} clients", "sync": sync,
                            "rstore": rate["rstore"], "valkey": rate["valkey"],
                            "ratio": rate["rstore"] / rate["valkey"]})  # fmt: skip
    return results


SERVERS = {"rstore": rstore_server, "valkey": valkey_server}


def start(side: str, args: argparse.Namespace, sync: str) -> Any:
    """The server of ``side`` (rstore with ``--workers``), as a context manager."""
    if side == "rstore":
        return rstore_server(args.dir, sync, args.workers)
    return valkey_server(args.dir, sync)


def sides(round_no: int) -> list[str]:
    """The order of the two servers in round ``round_no``: it flips every round."""
    return ["rstore", "valkey"] if round_no % 2 == 0 else ["valkey", "rstore"]


def benchmark_latency(port: int, requests: int) -> dict[str, float]:
    """valkey-benchmark's percentiles (ms) of ``XADD bench * ...``, one client, no pipeline."""
    out = subprocess.run(
        [BENCHMARK, "-h", HOST, "-p", str(port), "-c", "1", "-P", "1", "-n", str(requests),
         "--csv", *probes.XADD_ARGS],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    lines = out.stdout.splitlines()
    header = next((line for line in lines if line.startswith('"test"')), "")
    rows = [line for line in lines if line.startswith('"XADD')]
    if not header or not rows:
        raise RuntimeError(f"no result from {BENCHMARK}: {out.stdout}{out.stderr}")
    names = re.findall(r'"([^"]+)"', header)[1:]
    values = [float(v) for v in re.findall(r'"([0-9.]+)"', rows[-1])]
    got = dict(zip(names, values, strict=True))
    return {"p50": got["p50_latency_ms"], "p99": got["p99_latency_ms"],
            "max": got["max_latency_ms"], "n": requests}  # fmt: skip


def latency_round(args: argparse.Namespace, round_no: int) -> list[dict[str, Any]]:
    """One client, no pipeline, a fresh server per figure: XADD timed by valkey-benchmark
    and by :mod:`server_probes`'s client, and the XREADGROUP 10 + XACK cycle."""
    n = args.latency_requests
    workloads: dict[str, Callable[[int], dict[str, Any]]] = {
        "XADD (valkey-benchmark)": lambda port: benchmark_latency(port, n),
        "XADD (bench client)": lambda port: probes.xadd_latency(port, n),
        "XREADGROUP 10 + XACK cycle": lambda port: probes.cycle_latency(port, n),
    }
    results = []
    for sync in args.sync:
        for name, measure in workloads.items():
            row: dict[str, Any] = {"part": "latency", "workload": name, "sync": sync}
            for side in sides(round_no):
                with start(side, args, sync) as (port, _):
                    row[side] = measure(port)
            results.append(row)
    return results


def memory_round(args: argparse.Namespace, round_no: int) -> list[dict[str, Any]]:
    """Resident memory at start, with ``--idle-clients`` idle clients, and with
    ``--blocked-clients`` readers blocked in XREAD and in XREADGROUP (a fresh server each)."""
    states = [("idle", args.idle_clients), ("xread", args.blocked_clients),
              ("xreadgroup", args.blocked_clients)]  # fmt: skip
    results = []
    for state, clients in states:
        row: dict[str, Any] = {"part": "memory", "workload": state, "sync": args.sync[0]}
        for side in sides(round_no):
            with start(side, args, args.sync[0]) as (port, pid):
                row[side] = probes.memory_state(port, pid, state, clients, args.settle)
        results.append(row)
    return results


def _median(rows: list[dict[str, Any]], side: str, *path: str) -> float:
    values = []
    for row in rows:
        value = row[side]
        for key in path:
            value = value[key]
        values.append(value)
    return float(statistics.median(values))


def print_throughput(rows: list[list[dict[str, Any]]]) -> None:
    print("| workload | durability | rstore | valkey | ratio (min-max) |")
    print("|---|---|---:|---:|---:|")
    for same in rows:
        first = same[0]
        ratios = [r["ratio"] for r in same]
        ours = statistics.median(r["rstore"] for r in same)
        theirs = statistics.median(r["valkey"] for r in same)
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        print(f"| {first['workload']} | {first['sync']} | {ours:,.0f}/s | {theirs:,.0f}/s "
              f"| {statistics.median(ratios):.2f}x ({spread}) |")  # fmt: skip


def print_latency(rows: list[list[dict[str, Any]]]) -> None:
    print("| workload | durability | rstore p50 | valkey p50 | rstore p99 | valkey p99 "
          "| p50 ratio (min-max) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    for same in rows:
        first = same[0]
        cells = [f"{_median(same, side, p):.3f} ms" for p in ("p50", "p99")
                 for side in ("rstore", "valkey")]  # fmt: skip
        ratios = [r["rstore"]["p50"] / r["valkey"]["p50"] for r in same]
        spread = f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        print(f"| {first['workload']} | {first['sync']} | {' | '.join(cells)} | {spread} |")


def print_memory(rows: list[list[dict[str, Any]]]) -> None:
    print("| clients | server | RSS at start | RSS with them | per client | after they left "
          "| used_memory per client |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    for same in rows:
        first = same[0]
        for side in ("rstore", "valkey"):
            clients = first[side]["clients"]
            cells = [f"{_median(same, side, key) / 1024:.1f} MiB"
                     for key in ("rss_before_kib", "rss_kib", "rss_after_kib")]  # fmt: skip
            per = _median(same, side, "per_client_kib")
            # rstore's INFO used_memory is its current RSS (Python has no allocator total)
            used = _median(same, side, "used_memory_per_client") / 1024
            used_cell = f"{used:.1f} KiB"
            print(f"| {clients} {first['workload']} | {side} | {cells[0]} | {cells[1]} "
                  f"| {per:.1f} KiB | {cells[2]} | {used_cell} |")  # fmt: skip


def throughput_round(args: argparse.Namespace, round_no: int) -> list[dict[str, Any]]:
    """The throughput rows (:func:`one_round`), marked as such."""
    return [{"part": "throughput", **row} for row in one_round(args, round_no)]


Rows = list[list[dict[str, Any]]]
PARTS: dict[str, tuple[Callable[[argparse.Namespace, int], list[dict[str, Any]]],
                       Callable[[Rows], None]]] = {
    "throughput": (throughput_round, print_throughput),
    "reads": (reads_round, print_throughput),
    "latency": (latency_round, print_latency),
    "memory": (memory_round, print_memory),
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS),
                        help="run only these parts (default: all)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--cycle-entries", type=int, default=20000)
    parser.add_argument("--latency-requests", type=int, default=2000,
                        help="XADDs, and cycles of 10 entries, per latency figure")  # fmt: skip
    parser.add_argument("--idle-clients", type=int, default=500)
    parser.add_argument("--blocked-clients", type=int, default=50)
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds to wait before each memory reading")  # fmt: skip
    parser.add_argument("--sync", nargs="+", default=["always", "everysec"],
                        choices=["always", "everysec", "no"])  # fmt: skip
    parser.add_argument("--dir", default=None, help="where both servers keep their data")
    parser.add_argument("--workers", type=int, default=1, help="rstore serve --workers N")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args(argv)
    if not BENCHMARK:
        parser.error("valkey-benchmark (or redis-benchmark) is not installed")
    args.dir = args.dir or tempfile.gettempdir()
    parts = [name for name in PARTS if name in args.only]
    if args.workers > 1 and "memory" in parts:  # it reads one process's RSS
        parser.error("--workers measures throughput, reads and latency: --only those")
    try:
        if "memory" in parts:
            probes.ensure_open_files(max(args.idle_clients, args.blocked_clients) + 1)
        print(f"load average at the start: {os.getloadavg()}", flush=True)
        rounds = [[row for name in parts for row in PARTS[name][0](args, r)]
                  for r in range(args.repeat)]  # fmt: skip
    except probes.BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"load average at the end: {os.getloadavg()}")
    for name in parts:
        same = [[r[i] for r in rounds] for i, row in enumerate(rounds[0]) if row["part"] == name]
        print(f"\n{name}: medians of {args.repeat} rounds")
        PARTS[name][1](same)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
