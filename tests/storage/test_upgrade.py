"""Stores of an older format (issue 22, item 1): read as they are by a read-only open, brought
to the current format (with the log) by the first open that may write them, and the states an
upgrade cut short leaves (a ``wal.log`` without its header) read and finished; ``wal=`` is
deprecated.  Crashes at each step, in other processes: tests/processes/test_upgrade_crashes.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
import pytest
from store_formats import downgrade

import rstore
from rstore.storage.engine import exclusive, wal_position
from rstore.storage.records import layout


def _populate(path: Path) -> list[object]:
    """A store with entries, a group and pending entries; what a reader sees of it."""
    with rstore.Store(path) as s:
        for i in range(20):
            s.xadd("orders", {"i": str(i)}, id=f"{i + 1}-0")
        s.xgroup_create("orders", "billing", "0")
        s.xreadgroup("billing", "alice", {"orders": ">"}, count=5)
        return _seen(s)


def _seen(s: rstore.Store) -> list[object]:
    """Entries, pending entries (idle times aside) and groups."""
    pending = [
        (p["message_id"], p["consumer"], p["times_delivered"])
        for p in s.xpending_range("orders", "billing", "-", "+", 100)
    ]
    return [s.xrange("orders"), pending, s.xinfo_groups("orders")]


def _format_record(path: Path) -> int | None:
    env = lmdb.open(str(path), max_dbs=16, readonly=True, lock=False)
    try:
        meta = env.open_db(layout.DB_META, create=False)
        with env.begin() as txn:
            raw = txn.get(layout.META_FORMAT, db=meta)
            return None if raw is None else layout.unpack_format(raw)
    finally:
        env.close()


def test_wal_is_deprecated_and_every_store_has_the_log(tmp_path: Path) -> None:
    for value in (False, True):
        path = tmp_path / str(value)
        with pytest.warns(DeprecationWarning, match="wal=.* deprecated and ignored"):
            store = rstore.Store(path, wal=value)
        with store:
            assert (store.format, store.wal) == (rstore.FORMAT_VERSION, True)
        assert (path / "wal.log").is_file()


def test_a_format_2_store_is_read_as_it_is_and_upgraded_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s"
    seen = _populate(path)
    downgrade(str(path), 2)
    (path / "durable.shm").write_bytes(bytes(4096))  # what an older rstore left beside it
    with rstore.Store(path, readonly=True) as s:
        assert (s.format, s.wal, _seen(s)) == (2, False, seen)
    assert not (path / "wal.log").exists()
    with rstore.Store(path) as s:
        assert (s.format, s.wal, s.upgrade(), _seen(s)) == (rstore.FORMAT_VERSION, True, 0, seen)
        s.xack("orders", "billing", "1-0")
        assert s.check() == []
    assert _format_record(path) == rstore.FORMAT_VERSION
    assert not (path / "durable.shm").exists()
    with rstore.Store(path) as s:  # the next open finds it current
        assert (s.format, s.upgrade()) == (rstore.FORMAT_VERSION, 0)
        assert len(s.xpending_range("orders", "billing", "-", "+", 100)) == 4


def test_a_format_3_store_without_its_log_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _populate(path)
    os.unlink(path / "wal.log")
    with pytest.raises(rstore.CorruptStoreError, match="has no write-ahead log"):
        rstore.Store(path)
    assert not (path / "wal.log").exists()  # the refused open took its own log away
    with pytest.raises(rstore.CorruptStoreError, match="has no write-ahead log"):
        rstore.Store(path, readonly=True)


def _cut_short(path: Path, *, committed: bool) -> None:
    """An upgrade of a format-2 store cut short: ``wal.log`` made (without its header) and,
    with ``committed``, LMDB's transaction done (format 3 and the log's position)."""
    downgrade(str(path), 2)
    (path / "wal.log").write_bytes(b"")
    if committed:
        env = lmdb.open(str(path), max_dbs=16)
        try:
            meta = env.open_db(layout.DB_META, create=False)
            with env.begin(write=True) as txn:
                txn.put(layout.META_FORMAT, layout.pack_format(3), db=meta)
                wal_position.write(txn, meta, wal_position.Position(1, 4096, 1, 0))
        finally:
            env.close()


@pytest.mark.parametrize("committed", [False, True], ids=["before-commit", "after-commit"])
def test_an_upgrade_cut_short_is_read_and_finished(tmp_path: Path, committed: bool) -> None:
    path = tmp_path / "s"
    seen = _populate(path)
    _cut_short(path, committed=committed)
    with rstore.Store(path, readonly=True) as s:
        assert (s.format, _seen(s)) == (3 if committed else 2, seen)
    with rstore.Store(path) as s:
        assert (s.format, _seen(s)) == (rstore.FORMAT_VERSION, seen)
        s.xadd("orders", {"after": "upgrade"})
        assert s.check() == []
    with rstore.Store(path, readonly=True) as s:
        assert s.xlen("orders") == 21


def test_refusals_name_the_processes_holding_the_store_alike() -> None:
    """The upgrade's and the compaction's refusals name the other processes in one phrasing
    (``exclusive.who_holds``): none found (``/proc/locks`` unreadable), one, or several."""
    assert exclusive.who_holds(()) == "another process"
    assert exclusive.who_holds((12,)) == "another process (pid 12)"
    assert exclusive.who_holds((12, 13, 14)) == "3 other processes (pids 12, 13, 14)"
