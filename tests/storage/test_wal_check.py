"""``Store.check`` of a store written through the log: the records since the last checkpoint
must form an unbroken chain up to LMDB's last commit; a damaged one is named with its offset,
a damaged header too, and a store in use (checkpoints and log restarts racing the check)
checks clean."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from log_files import log_chain, log_header

import rstore
from rstore.storage.engine import wal, wal_checkpoints, wal_log


@pytest.fixture
def no_checkpoints(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The checkpointer is never poked: the records written stay after the checkpoint."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 1 << 40)
    yield


def _flip(path: Path, offset: int) -> None:
    with open(path / "wal.log", "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


@pytest.mark.parametrize("sync", [True, False])
def test_a_sound_log_checks_clean(tmp_path: Path, no_checkpoints: None, sync: bool) -> None:
    path = tmp_path / "s"
    with rstore.Store(path, sync=sync) as s:
        for i in range(20):
            s.xadd("k", {"i": i})
        s.xgroup_create("k", "g", "0")
        s.xreadgroup("g", "c", {"k": ">"}, count=5)
        assert len(log_chain(path)) >= 22  # not checkpointed: the check reads them all
        assert s.check() == []
    with rstore.Store(path) as s:
        assert s.check() == []


def test_a_damaged_record_since_the_checkpoint_is_named(
    tmp_path: Path, no_checkpoints: None
) -> None:
    path = tmp_path / "s"
    with rstore.Store(path) as s:
        for i in range(5):
            s.xadd("k", {"i": i})
        records = log_chain(path)
        third = records[-3]
        _flip(path, third.position.offset + 48)  # inside its operations
        assert s.check() == [
            f"wal.log: the record at offset {third.position.offset} (log sequence number "
            f"{third.position.lsn}) is damaged or missing: 3 committed transactions since the "
            f"last checkpoint ({len(records) - 3} intact before it) would be lost by an OS crash "
            "before the next checkpoint"
        ]
        _flip(path, third.position.offset + 48)
        assert s.check() == []


def test_a_damaged_header_is_named(tmp_path: Path, no_checkpoints: None) -> None:
    path = tmp_path / "s"
    with rstore.Store(path) as s:
        s.xadd("k", {"f": "v"})
        with open(path / "wal.log", "r+b") as f:
            saved = f.read(2 * wal_log.HEADER_SLOT)
            f.seek(0)
            f.write(bytes(b ^ 0x55 for b in saved))
        assert s.check() == ["wal.log: no valid header (both slots damaged)"]
        with open(path / "wal.log", "r+b") as f:
            f.write(saved)
        assert s.check() == []


def test_a_store_in_use_checks_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoints every few commits and the log restarting at its front every ~64 KiB, while
    another thread writes: the check reads the header again instead of reporting a chain that
    moved under it."""
    monkeypatch.setattr(wal, "LOG_LIMIT", 64 << 10)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 16)
    path = tmp_path / "s"
    with rstore.Store(path, sync=False) as s:
        s.xadd("k", {"f": "v"})
        start = log_header(path).position.generation
        done = threading.Event()

        def write() -> None:
            try:
                for i in range(3000):
                    s.xadd("k", {"i": i, "pad": "x" * 200})
            finally:
                done.set()

        writer = threading.Thread(target=write)
        writer.start()
        checks = []
        while not done.is_set():
            checks.append(s.check())
        writer.join()
        checks.append(s.check())
        assert len(checks) > 3 and all(c == [] for c in checks), [c for c in checks if c][:1]
        assert log_header(path).position.generation > start + 1  # the log restarted meanwhile
