"""The processes of ``bench/writers.py``: writer and reader children, and the reader-table
monitor that watches an rstore store from the benchmark process.

A child is started as ``python bench/writers_procs.py writer|reader ...`` and spoken to in lines
(:class:`common.Child`): it says ``hello`` once connected, waits for ``go <start ns> <end ns>``
(``CLOCK_MONOTONIC``), works from the start time to the end time, answers ``done ...`` and exits
on ``quit``.
"""

from __future__ import annotations

import array
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import lmdb
from common import FIELDS, STREAM, child_hear, child_say

import rstore

GROUP = "readers"
BLOCK_MS = 1000
COUNT = 100
PAGE = 1000
SAMPLE_S = 0.05  # the reader-table monitor's interval
TIMED_ROLES = ("scan", "paged")  # roles whose calls never block: their longest call is reported


def _connect(side: str, target: str, map_size: int) -> Any:
    if side == "rstore":
        return rstore.Store(target, sync=True, create=False, map_size=map_size or None)
    import redis

    return redis.Redis(host="127.0.0.1", port=int(target), protocol=2)


def _sleep_until(t_ns: int) -> None:
    delay = (t_ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


def time_lock_waits(waits: array.array[float]) -> None:
    """Record in ``waits`` how long each write transaction of this process waits to begin
    (LMDB's writer lock).  Wraps a private method of rstore's storage layer: for this
    measurement only (``--lock-wait``)."""
    from rstore.storage import env as envmod

    begin = envmod.Env._begin
    clock = time.perf_counter

    def timed_begin(self: envmod.Env, write: bool) -> Any:
        if not write:
            return begin(self, write)
        t0 = clock()
        raw = begin(self, write)
        waits.append(clock() - t0)
        return raw

    envmod.Env._begin = timed_begin  # type: ignore[method-assign]


def writer_main(side: str, target: str, map_size: int, out_path: str, lock_wait: bool) -> int:
    """XADD in a loop between the start and end times it is given; latencies to ``out_path``
    (and with ``lock_wait``, the writer-lock waits to ``out_path + ".wait"``)."""
    waits = array.array("d")
    if lock_wait and side == "rstore":
        time_lock_waits(waits)
    client = _connect(side, target, map_size)
    child_say("hello")
    words = child_hear()
    if words[0] != "go":
        return 0
    start_ns, end_ns = int(words[1]), int(words[2])
    xadd, clock, now = client.xadd, time.perf_counter, time.monotonic_ns
    latencies = array.array("d")
    _sleep_until(start_ns)
    while now() < end_ns:
        t0 = clock()
        xadd(STREAM, FIELDS)
        latencies.append(clock() - t0)
    with open(out_path, "wb") as f:
        latencies.tofile(f)
    with open(out_path + ".wait", "wb") as f:
        waits.tofile(f)
    child_say("done", len(latencies))
    child_hear()  # "quit"
    client.close()
    return 0


def reader_main(side: str, target: str, map_size: int, role: str, consumer: str) -> int:
    """Read as ``role`` (xread, xreadgroup or scan) until the end time; report what was read."""
    client = _connect(side, target, map_size)
    child_say("hello")
    words = child_hear()
    if words[0] != "go":
        return 0
    start_ns, end_ns = int(words[1]), int(words[2])
    now, clock = time.monotonic_ns, time.perf_counter
    entries = calls = 0
    longest = 0.0
    last_id: Any = "0-0"
    _sleep_until(start_ns)
    page_start: Any = "-"
    while now() < end_ns:
        t0 = clock()
        if role == "cpu":
            got = sum(range(100_000)) * 0  # a CPU-bound step that touches no store
        elif role == "scan":
            got = len(client.xrange(STREAM, "-", "+"))
        elif role == "paged":
            page = client.xrange(STREAM, page_start, "+", count=PAGE)
            got = len(page)
            page_start = "(" + page[-1][0].decode() if len(page) == PAGE else "-"
        elif role == "xread":
            reply = client.xread({STREAM: last_id}, count=COUNT, block=BLOCK_MS)
            got = len(reply[0][1]) if reply else 0
            if got:
                last_id = reply[0][1][-1][0]
        else:
            reply = client.xreadgroup(GROUP, consumer, {STREAM: ">"}, count=COUNT, block=BLOCK_MS)
            ids = [entry_id for entry_id, _ in reply[0][1]] if reply else []
            if ids:
                client.xack(STREAM, GROUP, *ids)
            got = len(ids)
        if role in TIMED_ROLES:
            longest = max(longest, clock() - t0)
        entries += got
        calls += 1
    child_say("done", entries, calls, longest)
    child_hear()
    client.close()
    return 0


def child_argv(*words: object) -> list[str]:
    """The argv (after the interpreter) of a child process."""
    return [str(Path(__file__).resolve()), *(str(w) for w in words)]


def reader_roles(readers: int, kind: str) -> list[str]:
    if readers == 0:
        return []
    if kind != "consumers":
        return [{"scans": "scan", "paged": "paged", "cpu": "cpu"}[kind]] * readers
    return ["xread" if i % 2 == 0 else "xreadgroup" for i in range(readers)]


# ----------------------------------------------------------------------------- the monitor


class ReaderMonitor:
    """Samples an LMDB environment from this process while others use it: the commits by which
    the oldest live read transaction lags behind the last commit, and reader slots left by dead
    processes.  Opens its own read-only handle and never starts a transaction."""

    def __init__(self, path: str) -> None:
        self._env = lmdb.open(path, readonly=True, max_dbs=16)
        self._stop = threading.Event()
        self.lags: list[int] = []
        self.dead_slots = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReaderMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._env.close()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            last = int(self._env.info()["last_txnid"])
            oldest = None
            for line in self._env.readers().splitlines()[1:]:
                pid, _, txnid = line.split()
                if txnid == "-":
                    continue
                if not _alive(int(pid)):
                    self.dead_slots = max(self.dead_slots, 1)
                oldest = int(txnid) if oldest is None else min(oldest, int(txnid))
            self.lags.append(0 if oldest is None else last - oldest)


def map_size(path: str) -> int:
    """The map size recorded in a closed environment (grown by writers if it was full)."""
    env = lmdb.open(path, readonly=True, lock=False, map_size=0)  # 0: take the file's
    try:
        return int(env.info()["map_size"])
    finally:
        env.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def main(argv: list[str]) -> int:
    role, side, target, map_size, *rest = argv
    if role == "writer":
        return writer_main(side, target, int(map_size), rest[0], rest[1] == "1")
    return reader_main(side, target, int(map_size), rest[0], rest[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
