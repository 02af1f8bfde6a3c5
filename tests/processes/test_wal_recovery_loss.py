"""Recovery never drops an acknowledged write silently (issue 21, item 2).

* A ``sync=False`` XADD that returned, whose writer was SIGKILLed at once, is there after a
  clean restart.  Its record used to stay unmarked (marking waited for ``sync()`` or the close),
  and recovery redoes only records marked committed or followed by another: 6 of 6 such XADDs
  were dropped, although other processes had already read them.
* A log cut short after acknowledged writes (a damaged file) makes the first open after a
  restart refuse, naming what would be lost and pointing to salvage, without changing the store;
  it used to rewind to the checkpoint, redo what was left and open, the writes gone and
  ``check()`` clean.
* Commits that were never made durable (``sync=False`` writes after the last flush, as a power
  loss leaves them) are dropped as documented, and the drop is logged.

A restart is simulated with another boot id (``RSTORE_TEST_BOOT_ID``): the files are as a clean
shutdown leaves them (the kernel wrote its cache back), and recovery runs.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from log_files import log_chain, log_header

import rstore
from rstore.storage.engine import wal_checkpoints

_KILLED_AFTER_XADD = textwrap.dedent(
    """
    import os, signal, sys
    import rstore
    s = rstore.Store(sys.argv[1], sync=False)
    for i in range(int(sys.argv[2])):
        print(s.xadd("k", {"i": i}).decode(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _restart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))


def _no_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """The log, not a checkpoint, holds the writes (the thread never makes one)."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 10**9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)


@pytest.mark.parametrize("count", [1, 5])
def test_a_relaxed_xadd_that_returned_survives_a_kill_and_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    path = str(tmp_path / "s")
    rstore.Store(path).close()
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER_XADD, path, str(count)],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    acknowledged = [line.encode() for line in done.stdout.split()]
    assert len(acknowledged) == count
    with rstore.Store(path, readonly=True) as reader:  # another process reads them at once
        assert [eid for eid, _ in reader.xrange("k")] == acknowledged
    _restart(monkeypatch)
    with rstore.Store(path) as s:
        assert [eid for eid, _ in s.xrange("k")] == acknowledged
        assert s.check() == []


def _durable_writes_then_cut(path: str, monkeypatch: pytest.MonkeyPatch, keep: int) -> list[bytes]:
    """Ten durable XADDs held by the log alone; the log is then cut after the first ``keep``
    of their records.  Returns the IDs the writes returned."""
    _no_checkpoints(monkeypatch)
    with rstore.Store(path) as s:
        s.xadd("k", {"i": "first"})
        s._live_env()._wal.checkpoint()  # the header's checkpoint: before the ten
        ids = [s.xadd("k", {"i": i}) for i in range(10)]
    records = log_chain(Path(path))
    assert len(records) >= 10
    cut = records[keep].position.offset + 7  # inside record keep: it and the rest are gone
    with open(os.path.join(path, "wal.log"), "r+b") as f:
        f.truncate(cut)
    return ids


def test_a_log_cut_short_after_acknowledged_writes_refuses_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "s")
    ids = _durable_writes_then_cut(path, monkeypatch, keep=6)
    before = {name: Path(path, name).read_bytes() for name in ("data.mdb", "wal.log")}
    _restart(monkeypatch)
    with pytest.raises(rstore.CorruptStoreError) as refused:
        rstore.Store(path)
    message = str(refused.value)
    assert "would lose 4 acknowledged transactions" in message, message
    assert f"rstore salvage {path}" in message
    assert "wal.log" in message
    # Nothing was changed: data.mdb still holds every write (salvage copies it out from there).
    assert {name: Path(path, name).read_bytes() for name in before} == before
    with pytest.raises(rstore.CorruptStoreError):
        rstore.Store(path)  # and it keeps refusing: no second open rewinds silently
    assert len(ids) == 10


def test_a_log_whose_records_the_checkpoints_flushed_also_counts_for_relaxed_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``sync=False`` no write flushes the log, but each checkpoint does (after its
    header) and says so in ``wal.shm``: a log cut before records a checkpoint had flushed is
    refused as damaged, not taken for the tail a power loss may cut."""
    path = str(tmp_path / "s")
    _no_checkpoints(monkeypatch)
    with rstore.Store(path, sync=False) as s:
        s.xadd("k", {"i": "first"})
        s._live_env()._wal.checkpoint()
        for i in range(10):
            s.xadd("k", {"i": i})
        header = log_header(Path(path))
        records = log_chain(Path(path))
        # Flush the log as a checkpoint does, and say so, without moving the header past them.
        log = s._live_env()._wal
        log.sync()
        log.flusher.note_flushed(records[-1].position.lsn)
    assert log_header(Path(path)) == header
    with open(os.path.join(path, "wal.log"), "r+b") as f:
        f.truncate(records[3].position.offset + 7)
    _restart(monkeypatch)
    with pytest.raises(rstore.CorruptStoreError, match="would lose 7 acknowledged"):
        rstore.Store(path)


def test_commits_never_made_durable_are_dropped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What a power loss may leave after ``sync=False`` writes: data.mdb's meta page written
    back, the log's records since its last flush not.  Those writes were never durable: the
    store opens at the last record the log holds, and the drop is logged."""
    path = str(tmp_path / "s")
    _no_checkpoints(monkeypatch)
    with rstore.Store(path, sync=False) as s:
        kept = [s.xadd("k", {"i": "durable"})]
        s._live_env()._wal.checkpoint()
        for i in range(5):
            s.xadd("k", {"i": i})
    records = log_chain(Path(path))
    with open(os.path.join(path, "wal.log"), "r+b") as f:
        f.truncate(records[0].position.offset + 7)  # no record after the checkpoint's
    _restart(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="rstore.storage"), rstore.Store(path) as s:
        assert [eid for eid, _ in s.xrange("k")] == kept
        assert s.check() == []
    assert any("drops transactions" in r.getMessage() for r in caplog.records), caplog.text
