"""Checkpoints of a store written through the log: made off the writers' path, often enough to
keep the file small, and stopped with the store."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import rstore
from rstore.storage import wal_log


def _header(path: Path) -> wal_log.Header:
    fd = os.open(path / "wal.log", os.O_RDONLY)
    try:
        header = wal_log.read_header(fd)
    finally:
        os.close(fd)
    assert header is not None
    return header


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rstore checkpoints")]


def test_the_checkpoint_follows_the_writes_and_the_thread_stops_with_the_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s"
    before = len(_checkpointers())
    with rstore.Store(path, sync=False, wal=True) as s:
        first = _header(path).checkpoint_txnid
        for i in range(200):
            s.xadd("k", {"i": i})
        last = s._live_env()._env.info()["last_txnid"]
        deadline = time.monotonic() + 5
        while _header(path).checkpoint_txnid < last and time.monotonic() < deadline:
            time.sleep(0.01)  # the thread checkpoints within ~50 ms of the last write
        assert _header(path).checkpoint_txnid == last > first
        assert len(_checkpointers()) == before + 1
    assert len(_checkpointers()) == before  # closed: its thread is gone


def test_single_writes_keep_the_file_from_growing(tmp_path: Path) -> None:
    """While a pin stays, every commit writes fresh pages; the checkpoints move the pins so
    that they are reused: after a burst or two the file stops growing (pinned for good, each
    5,000 single XADDs would add ~120 MiB)."""
    path = tmp_path / "s"
    sizes = []
    with rstore.Store(path, sync=False, wal=True) as s:
        for _ in range(3):
            for i in range(5000):
                s.xadd("k", {"i": i})
            sizes.append(os.path.getsize(path / "data.mdb"))
    assert sizes[0] < 64 << 20, sizes
    assert sizes[2] - sizes[1] < sizes[1] // 4, sizes
