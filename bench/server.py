"""``rstore serve`` beside valkey-server, with the same load generators for both (issue 13).

* **XADD** through ``valkey-benchmark`` (the same command line for both servers): 1 and 50
  clients, pipeline 1 and 16, each server at equal durability -- ``rstore serve --sync always``
  against valkey ``appendfsync always``, and ``--sync everysec`` against ``everysec``.
* **Group cycle**: N redis-py clients, each ``XREADGROUP GROUP g cN COUNT 10 STREAMS s >`` then
  ``XACK`` of what it got, over a stream filled beforehand, until drained; entries/s.

Both servers run on free loopback ports with their data in temporary directories on the same
filesystem; the sides alternate, and each ratio is rstore / valkey of the same round.  The
median of ``--repeat`` rounds is printed (and ``--json`` writes every figure).

    python bench/server.py                      # --repeat 3 --requests 20000
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

sys.path.append(str(Path(__file__).resolve().parent.parent / "fixtures"))
from valkey_server import HOST, ValkeyServer, free_port

BENCHMARK = shutil.which("valkey-benchmark") or shutil.which("redis-benchmark") or ""


@contextlib.contextmanager
def rstore_server(base: str, sync: str) -> Iterator[int]:
    """``rstore serve`` on a free port over a new store; its port."""
    port = free_port()
    directory = tempfile.mkdtemp(prefix="bench-serve-", dir=base)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rstore_cli", "--store", f"{directory}/store", "serve",
         "--port", str(port), "--sync", sync, "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        client = redis.Redis(host=HOST, port=port)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("rstore serve did not start") from None
                time.sleep(0.05)
        client.close()
        yield port
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def valkey_server(base: str, sync: str) -> Iterator[int]:
    server = ValkeyServer(appendonly=True, appendfsync=sync, temp_parent=base)
    server.start()
    try:
        yield server.port
    finally:
        server.stop()


def xadd_rate(port: int, clients: int, pipeline: int, requests: int) -> float:
    """Requests per second valkey-benchmark reports for ``XADD bench * f v``."""
    out = subprocess.run(
        [BENCHMARK, "-h", HOST, "-p", str(port), "-c", str(clients), "-P", str(pipeline),
         "-n", str(requests), "--csv", "XADD", "bench", "*", "user", "12345", "action", "click"],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    rows = [line for line in out.stdout.splitlines() if line.startswith('"XADD')]
    if not rows:
        raise RuntimeError(f"no result from {BENCHMARK}: {out.stdout}{out.stderr}")
    return float(re.findall(r'"([0-9.]+)"', rows[-1])[0])


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


def one_round(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for sync in args.sync:
        for clients, pipeline in ((1, 1), (50, 1), (1, 16), (50, 16)):
            n = args.requests if clients * pipeline > 1 else max(1000, args.requests // 10)
            with rstore_server(args.dir, sync) as port:
                ours = xadd_rate(port, clients, pipeline, n)
            with valkey_server(args.dir, sync) as port:
                theirs = xadd_rate(port, clients, pipeline, n)
            results.append({"workload": f"XADD c={clients} P={pipeline}", "sync": sync,
                            "rstore": ours, "valkey": theirs, "ratio": ours / theirs})  # fmt: skip
        for clients in (1, 8):
            with rstore_server(args.dir, sync) as port:
                ours = group_cycle_rate(port, clients, args.cycle_entries)
            with valkey_server(args.dir, sync) as port:
                theirs = group_cycle_rate(port, clients, args.cycle_entries)
            results.append({"workload": f"XREADGROUP 10 + XACK, {clients} clients", "sync": sync,
                            "rstore": ours, "valkey": theirs, "ratio": ours / theirs})  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--cycle-entries", type=int, default=20000)
    parser.add_argument("--sync", nargs="+", default=["always", "everysec"],
                        choices=["always", "everysec", "no"])  # fmt: skip
    parser.add_argument("--dir", default=None, help="where both servers keep their data")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args(argv)
    if not BENCHMARK:
        parser.error("valkey-benchmark (or redis-benchmark) is not installed")
    args.dir = args.dir or tempfile.gettempdir()
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rounds = [one_round(args) for _ in range(args.repeat)]
    print(f"load average at the end: {os.getloadavg()}")
    print("| workload | durability | rstore | valkey | ratio (min-max) |")
    print("|---|---|---:|---:|---:|")
    for i, first in enumerate(rounds[0]):
        ratios = [r[i]["ratio"] for r in rounds]
        ours = statistics.median(r[i]["rstore"] for r in rounds)
        theirs = statistics.median(r[i]["valkey"] for r in rounds)
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        print(f"| {first['workload']} | {first['sync']} | {ours:,.0f}/s | {theirs:,.0f}/s "
              f"| {statistics.median(ratios):.2f}x ({spread}) |")  # fmt: skip
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
