"""The log's header never moves back to an older checkpoint when two threads of one process
publish checkpoints at once (the checkpointer thread, and a writer restarting the log at its
front).  The header's flock is taken on a descriptor all threads of a process share, so it
excludes other processes only; before the in-process lock, the older checkpoint could be
written over the newer one, and a crash would then have restarted from a checkpoint whose
records the restarted log had overwritten."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from log_files import log_header

import rstore
from rstore.storage.engine import wal_log


def test_an_older_checkpoint_never_replaces_a_newer_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    with rstore.Store(path, sync=False) as store:
        store.xadd("k", {"f": "v"})
        log = store._live_env()._wal
        assert log is not None
        before = log_header(path)
        old, new = before.checkpoint_txnid + 1, before.checkpoint_txnid + 2
        newer_written = threading.Event()
        real_write = wal_log.write_header

        def write_header(fd: int, txnid: int, *args: object) -> wal_log.Header:
            if txnid == old:  # the older publisher decided "newer" and is about to write:
                newer_written.wait(1.0)  # let the newer one run meanwhile, if it can
            header = real_write(fd, txnid, *args)  # type: ignore[arg-type]
            if txnid == new:
                newer_written.set()
            return header

        monkeypatch.setattr(wal_log, "write_header", write_header)
        publish = log.checkpoints._publish
        older = threading.Thread(target=publish, args=(old, before.meta, before.position))
        older.start()
        while not older.is_alive():
            pass
        publish(new, before.meta, before.position)
        older.join()
        assert log_header(path).checkpoint_txnid == new
