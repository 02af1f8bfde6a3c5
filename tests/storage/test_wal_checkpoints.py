"""Checkpoints of a store written through the log: made off the writers' path, often enough to
keep the file small, and stopped with the store."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from log_files import log_header

import rstore
from rstore.storage.engine import wal_checkpoints


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rstore checkpoints")]


def test_the_checkpoint_follows_the_writes_and_the_thread_stops_with_the_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s"
    before = len(_checkpointers())
    with rstore.Store(path, sync=False) as s:
        first = log_header(path).checkpoint_txnid
        for i in range(200):
            s.xadd("k", {"i": i})
        last = s._live_env()._env.info()["last_txnid"]
        deadline = time.monotonic() + 5
        while log_header(path).checkpoint_txnid < last and time.monotonic() < deadline:
            time.sleep(0.01)  # the thread checkpoints within ~50 ms of the last write
        assert log_header(path).checkpoint_txnid == last > first
        assert len(_checkpointers()) == before + 1
    assert len(_checkpointers()) == before  # closed: its thread is gone


def test_single_writes_keep_the_file_from_growing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a pin stays, every commit writes fresh pages (~9 for a single XADD); a checkpoint
    moves the pin and they are reused.  Checkpoints made here, every 1,000 commits (none by the
    thread): the file reaches what 1,000 commits need and stays there (pinned for good, eight
    rounds would need about eight times that)."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 1 << 40)
    path = tmp_path / "s"
    pages = []
    with rstore.Store(path, sync=False) as s:
        log = s._live_env()._wal
        assert log is not None
        for _ in range(8):
            for i in range(1000):
                s.xadd("k", {"i": i})
            log.checkpoint()
            pages.append(os.path.getsize(path / "data.mdb") // 4096)
    assert pages[7] - pages[3] < pages[3] // 20, pages  # the last four rounds: under 5 %


def test_the_checkpointer_keeps_bursts_of_writes_bounded(tmp_path: Path) -> None:
    """The thread's checkpoints (every 256 commits or 50 ms) move the pin during a burst: three
    bursts of 5,000 single XADDs leave a file far below the ~500 MiB they would pin for good
    (how far below depends on how promptly the thread runs: 5-20 MiB measured, more on a
    loaded machine)."""
    path = tmp_path / "s"
    with rstore.Store(path, sync=False) as s:
        for _ in range(3):
            for i in range(5000):
                s.xadd("k", {"i": i})
    assert os.path.getsize(path / "data.mdb") < 96 << 20


def test_a_checkpoint_that_fails_after_a_commit_does_not_fail_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A writer that catches up with a checkpoint of its own after its commit (its thread
    running late) and finds the disk failing: the write is committed and returns its ID; the
    failure is logged, and the checkpoint is made once the disk answers again."""
    with rstore.Store(tmp_path / "s", sync=False) as s:
        s.xadd("k", {"i": "first"})
        log = s._live_env()._wal
        assert log is not None
        monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 1)
        monkeypatch.setattr(wal_checkpoints, "BEHIND", 1)
        real = wal_checkpoints.Checkpoints._checkpoint

        def failing(self: wal_checkpoints.Checkpoints) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(wal_checkpoints.Checkpoints, "_checkpoint", failing)
        log.checkpoints.header_txnid = 0  # far behind: the writer catches up itself
        with caplog.at_level("WARNING", logger="rstore.storage"):
            ids = [s.xadd("k", {"i": i}) for i in range(3)]
        assert [eid for eid, _ in s.xrange("k")][1:] == ids
        assert any("checkpoint after a commit failed" in r.getMessage() for r in caplog.records)
        monkeypatch.setattr(wal_checkpoints.Checkpoints, "_checkpoint", real)
        s.xadd("k", {"i": "after"})
        assert (
            log_header(tmp_path / "s").checkpoint_txnid
            >= s._live_env()._env.info()["last_txnid"] - 1
        )
