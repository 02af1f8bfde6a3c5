"""The store's file stays near its live data, whatever processes hold the store open.

With the write-ahead log every writing process pins a checkpoint with a read transaction, and
LMDB reuses no page freed after the oldest pin: each commit made meanwhile writes fresh pages.
Before pins followed the header and idle processes let go
(rstore/storage/engine/wal_checkpoints.py),
a process that wrote once and stayed open pinned its checkpoint for good: 3,000 single XADDs
of another process made data.mdb 75 MiB instead of 3 MiB, one writer for 10 s 1.2 GiB.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from live_data import live_bytes

import rstore
from rstore.storage.engine import wal_checkpoints

from .children import Children, collect
from .helpers_growth import FIELDS, idle_after_one_write, write_for

XADDS = 3000


def _file(path: str) -> int:
    return os.path.getsize(os.path.join(path, "data.mdb"))


def _xadds(path: str) -> None:
    with rstore.Store(path) as s:
        for _ in range(XADDS):
            s.xadd("s", FIELDS)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_an_idle_process_that_wrote_once_does_not_grow_the_file(
    tmp_path: Path, children: Children, kind: str
) -> None:
    """The issue's bound: beside an idle process that wrote once (a producer between bursts, a
    consumer blocked in XREADGROUP after an XACK), 3,000 durable XADDs by another process
    leave data.mdb at most twice the size they leave without it.  (The idle process is let
    settle first: for IDLE_S after its last write it still holds a pin, which follows the
    checkpoints; test_many_writer_processes_... covers that window.)"""
    alone = str(tmp_path / "alone")
    _xadds(alone)
    beside = str(tmp_path / "beside")
    rstore.Store(beside).close()
    ready, stop = children.ctx.Event(), children.ctx.Event()
    children.start(idle_after_one_write, beside, kind, ready, stop)
    assert ready.wait(60)
    _xadds(beside)
    stop.set()
    with rstore.Store(beside) as s:
        s.xadd("jobs", {"job": "2"})  # the blocked consumer's read returns
    children.join()
    assert _file(beside) <= 2 * _file(alone), (_file(beside), _file(alone))


@pytest.mark.slow
def test_many_writer_processes_beside_an_idle_one_stay_near_the_live_data(
    tmp_path: Path, children: Children
) -> None:
    """Eight writer processes for 4 s beside an idle one: the file holds the live data plus
    the pages of the commits made since the oldest pin (a few hundred, ~9 pages each), not of
    every commit (before: gigabytes within seconds)."""
    path = str(tmp_path / "s")
    rstore.Store(path).close()
    ready, stop = children.ctx.Event(), children.ctx.Event()
    children.start(idle_after_one_write, path, "producer", ready, stop)
    assert ready.wait(60)
    results = children.ctx.Queue()
    for who in range(8):
        children.start(write_for, path, 4.0, results, who)
    counts = collect(results, 8, children, timeout=120)
    stop.set()
    children.join()
    live = live_bytes(path)
    assert sum(counts.values()) > 500
    assert _file(path) <= live + (32 << 20), (_file(path), live, sum(counts.values()))


def test_an_idle_process_lets_its_pin_go_and_takes_one_at_its_next_write(tmp_path: Path) -> None:
    """After IDLE_S without a commit of its own, a process holds no snapshot of the store (so
    other processes' commits reuse pages); its next write takes a pin again."""
    with rstore.Store(tmp_path / "s") as s:
        s.xadd("k", {"a": "1"})
        log = s._live_env()._wal
        assert log is not None
        assert log.checkpoints.held()
        deadline = time.monotonic() + 10
        while log.checkpoints.held() and time.monotonic() < deadline:
            time.sleep(wal_checkpoints.IDLE_S / 4)
        assert log.checkpoints.held() == []
        assert s._live_env().lmdb_readers().count(f" {os.getpid()} ") == 0 or all(
            line.split()[-1] == "-"
            for line in s._live_env().lmdb_readers().splitlines()[1:]
            if line.split() and line.split()[0] == str(os.getpid())
        )
        s.xadd("k", {"a": "2"})
        assert log.checkpoints.held()
        assert s.xlen("k") == 2
