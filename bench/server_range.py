"""``XRANGE big - +`` over a big stream: ``rstore serve`` beside valkey-server (issue 25, item 1).

Both servers get the same stream of ``--entries`` entries (``user <n> action click``), loaded
with RESTORE of one DUMP payload; then ``redis-cli XRANGE big - +`` (or ``XREVRANGE big + -``,
``XREAD STREAMS big 0``, ``XREADGROUP GROUP g c STREAMS big >`` of a new group, or
``XPENDING big g - + 10000000``, ``XREADGROUP GROUP g c STREAMS big 0`` or ``XINFO STREAM big
FULL COUNT 0`` of a group with every entry pending: ``--command``) reads it
whole into /dev/null, as the issue measured it.  Reported per server: the wall time of that
read, and the server's peak RSS while it ran (``VmRSS`` of ``/proc/PID/status`` sampled every
5 ms, so a peak shorter than that may be missed), beside its RSS before; the ratio is
rstore / valkey of the same round, the order of the servers alternating between rounds, and
the median of ``--repeat`` rounds is printed.

    python bench/server_range.py                     # 1M entries, 3 rounds
    python bench/server_range.py --entries 200000 --repeat 1 --json out.json
    python bench/server_range.py --command xread      # or xrevrange, xreadgroup, xpending,
                                                      # xreadgroup-history, xinfo-full
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import redis
from server import rstore_server, valkey_server

sys.path.append(str(Path(__file__).resolve().parent.parent / "fixtures"))
from valkey_server import HOST

import rstore

CLI = "redis-cli"
#: the reads of the whole stream ``--command`` picks
COMMANDS = {
    "xrange": ["XRANGE", "big", "-", "+"],
    "xrevrange": ["XREVRANGE", "big", "+", "-"],
    "xread": ["XREAD", "STREAMS", "big", "0"],
    "xreadgroup": ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "big", ">"],
    "xpending": ["XPENDING", "big", "g", "-", "+", "10000000"],
    "xreadgroup-history": ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "big", "0"],
    "xinfo-full": ["XINFO", "STREAM", "big", "FULL", "COUNT", "0"],
}
#: the reads that need a group with every entry pending to consumer ``c``
PENDING_FIRST = ("xpending", "xreadgroup-history", "xinfo-full")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _payload(entries: int) -> bytes:
    """The DUMP payload (RDB 11: both servers take it) of the stream the servers load."""
    with tempfile.TemporaryDirectory() as directory, rstore.Store(directory, sync=False) as s:
        s.append_entries(
            ("big", None, [b"user", b"%d" % i, b"action", b"click"]) for i in range(entries)
        )
        payload = s.dump("big")
        assert payload is not None
        return payload


def _read(port: int, pid: int, command: list[str]) -> dict[str, float]:
    """One whole read through redis-cli: its seconds, the server's RSS before and at peak."""
    before = _rss_kib(pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_kib(pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    subprocess.run([CLI, "-h", HOST, "-p", str(port), *command], stdout=subprocess.DEVNULL,
                   check=True, timeout=600)  # fmt: skip
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return {"seconds": seconds, "rss_before_mib": before / 1024, "rss_peak_mib": peak[0] / 1024}


def _one(server: Callable[[], AbstractContextManager[tuple[int, int]]], payload: bytes,
         command: list[str], pending_first: bool) -> dict[str, float]:  # fmt: skip
    with server() as (port, pid):
        client = redis.Redis(host=HOST, port=port)
        client.restore("big", 0, payload)
        if pending_first:  # every entry pending, read by one consumer
            client.xgroup_create("big", "g", "0")
            client.xreadgroup("g", "c", {"big": ">"})
        for _ in range(2):  # the first read warms (first-use imports, page cache)
            if command[0] == "XREADGROUP" and not pending_first:  # a new group, all to deliver
                client.xgroup_destroy("big", "g")
                client.xgroup_create("big", "g", "0")
            result = _read(port, pid, command)
        client.close()
        return result


def rounds(entries: int, repeat: int, name: str, base: str) -> Iterator[dict[str, Any]]:
    command, pending_first = COMMANDS[name], name in PENDING_FIRST
    payload = _payload(entries)
    servers: dict[str, Callable[[], AbstractContextManager[tuple[int, int]]]] = {
        "rstore": lambda: rstore_server(base, "everysec"),
        "valkey": lambda: valkey_server(base, "everysec"),
    }
    for r in range(repeat):
        order = list(servers) if r % 2 == 0 else list(reversed(servers))
        yield {side: _one(servers[side], payload, command, pending_first) for side in order}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--command", choices=list(COMMANDS), default="xrange")
    parser.add_argument("--dir", default=None, help="parent of the servers' directories")
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    command = COMMANDS[args.command]
    results = list(rounds(args.entries, args.repeat, args.command,
                          args.dir or tempfile.gettempdir()))  # fmt: skip

    def median(name: str, key: str) -> float:
        return float(statistics.median(r[name][key] for r in results))

    def ratio(key: str) -> float:
        return float(statistics.median(r["rstore"][key] / r["valkey"][key] for r in results))

    print(f"# {' '.join(command)} over {args.entries:,} entries, median of {args.repeat}")
    print("| server | seconds | RSS before (MiB) | peak RSS (MiB) |")
    print("|---|---:|---:|---:|")
    for name in ("rstore", "valkey"):
        print(f"| {name} | {median(name, 'seconds'):.2f} | {median(name, 'rss_before_mib'):.0f} "
              f"| {median(name, 'rss_peak_mib'):.0f} |")  # fmt: skip
    print(f"| rstore / valkey | {ratio('seconds'):.2f}x | | {ratio('rss_peak_mib'):.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
