"""Bodies of the file-growth tests' child processes (importable, for ``spawn``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time

import lmdb

import rstore

from .children import Event, Reports, report

FIELDS = {"f": "v" * 20, "n": "0"}


def idle_after_one_write(path: str, kind: str, ready: Event, stop: Event) -> None:
    """Open the store, write once, then stay open and idle until ``stop``: a producer between
    bursts (``kind="producer"``) or a consumer blocked in XREADGROUP after an XACK
    (``"consumer"``)."""
    with rstore.Store(path) as s:
        if kind == "producer":
            s.xadd("idle", {"k": "v"})
            _settle(s)
            ready.set()
            stop.wait(120)
            return
        s.xgroup_create("jobs", "g", id="0", mkstream=True)
        s.xadd("jobs", {"job": "1"})
        ((_, entries),) = s.xreadgroup("g", "c", {"jobs": ">"}, count=1)
        s.xack("jobs", "g", entries[0][0])
        blocked = threading.Thread(  # BLOCK 0: until the parent adds a job at the end
            target=s.xreadgroup, args=("g", "c", {"jobs": ">"}), kwargs={"block": 0}
        )
        blocked.start()
        time.sleep(0.2)  # its read began (and wrote the consumer's seen-time)
        _settle(s)
        ready.set()
        blocked.join(120)


def _settle(store: rstore.Store) -> None:
    """Wait until this process is idle as the store sees it: it holds no snapshot any more
    (IDLE_S after its last write)."""
    log = store._live_env()._wal
    assert log is not None
    deadline = time.monotonic() + 30
    while log.checkpoints.held() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not log.checkpoints.held()


def write_for(path: str, seconds: float, results: Reports, who: int) -> None:
    """Single durable XADDs for ``seconds``; reports how many."""

    def body() -> int:
        count = 0
        with rstore.Store(path) as s:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                s.xadd(f"s{who % 4}", FIELDS)
                count += 1
        return count

    report(results, who, body)


def live_bytes(path: str) -> int:
    """The bytes of a compacted copy of the store's data file (LMDB's compacting copy keeps
    only the pages in use): its live data.  The store must not be open in this process."""
    target = tempfile.mkdtemp()
    try:
        env = lmdb.open(path, readonly=True, lock=False, max_dbs=32)
        try:
            env.copy(target, compact=True)
        finally:
            env.close()
        return os.path.getsize(os.path.join(target, "data.mdb"))
    finally:
        shutil.rmtree(target)
