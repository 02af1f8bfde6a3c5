"""Bulk writes (a restore) in a store with the log: committed without their changes in the log
-- a *barrier* record in their place -- and made durable by a checkpoint before they return.
No record may follow a barrier until a checkpoint covers it; recovery stops at one.

Checked: the log stays small while the store takes megabytes; a restore killed after its commit
and before its checkpoint is there for the next process and gone after a restart (it never
returned), the writes acknowledged before it are there in both cases; a durable write that
follows such a barrier first makes the checkpoint, so after a restart both are there; writer
threads running beside a restore lose nothing across a restart."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest
from log_files import log_header

import rstore

ENTRIES = 20_000


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An RDB file with one stream ``big`` of ENTRIES entries (~2 MB of nodes) and a group."""
    where = tmp_path_factory.mktemp("dump")
    with rstore.Store(where / "source", sync=False) as source:
        pipe = source.pipeline()
        for i in range(ENTRIES):
            pipe.xadd("big", {"n": i, "pad": "x" * 64})
        pipe.execute()
        source.xgroup_create("big", "g", "0")
        source.xreadgroup("g", "c", {"big": ">"}, count=10)
        source.save(where / "dump.rdb")
    return where / "dump.rdb"


def _new_boot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))


def test_a_restore_is_a_barrier_and_a_checkpoint(
    tmp_path: Path, dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    with rstore.Store(path) as s:
        s.xadd("small", {"f": "v"}, id="1-1")
        s.restore_file(dump)
        last = s._live_env()._env.info()["last_txnid"]
        assert log_header(path).checkpoint_txnid == last  # covered before restore_file returned
        data, log = os.path.getsize(path / "data.mdb"), os.path.getsize(path / "wal.log")
        assert data > 1 << 20 and log < data // 8, (data, log)  # the nodes went to data.mdb only
        s.xadd("small", {"f": "w"}, id="1-2")  # after the barrier, once it is covered
    _new_boot(monkeypatch)  # recovery from that checkpoint redoes the last write
    with rstore.Store(path) as s:
        assert s.xlen("big") == ENTRIES and s.xlen("small") == 2
        assert s.xpending("big", "g")["pending"] == 10
        assert s.check() == []


_CHILD = textwrap.dedent(
    """
    import sys
    import rstore
    from rstore.storage.engine import faults
    path, dump = sys.argv[1], sys.argv[2]
    s = rstore.Store(path)
    for i in range(5):
        print(s.xadd("small", {"i": i}).decode(), flush=True)
    faults.arm("bulk-committed")
    s.restore_file(dump)
    print("survived", flush=True)
    """
)


def _killed_in_a_restore(path: Path, dump: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(dump)],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == -9, (done.returncode, done.stderr)
    acknowledged = done.stdout.split()
    assert len(acknowledged) == 5
    return acknowledged


def test_a_restore_killed_before_its_checkpoint(
    tmp_path: Path, dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    acknowledged = _killed_in_a_restore(path, dump)
    _new_boot(monkeypatch)  # the page cache is gone with the restore that never returned
    with rstore.Store(path) as s:
        assert [i.decode() for i, _ in s.xrange("small")] == acknowledged
        assert s.exists("big") == 0
        assert s.check() == []
        s.xadd("small", {"i": "after"})
    with rstore.Store(path) as s:
        assert s.xlen("small") == 6 and s.check() == []


def test_a_write_after_an_uncovered_barrier_checkpoints_first(
    tmp_path: Path, dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that already writes (its pin taken before the barrier) writes after a
    restore killed before its checkpoint: its record may not follow the barrier until a
    checkpoint covers it, so it makes one first; after a restart both are there."""
    path = tmp_path / "s"
    with rstore.Store(path) as s:
        first = s.xadd("small", {"i": "first"}).decode()
        acknowledged = _killed_in_a_restore(path, dump)
        assert s.xlen("big") == ENTRIES  # the same boot: the restore is committed
        restore = s._live_env()._env.info()["last_txnid"]
        assert log_header(path).checkpoint_txnid < restore  # nothing covers it yet
        after = s.xadd("small", {"i": "after"}).decode()  # sync=True: acknowledged on disk
        assert log_header(path).checkpoint_txnid >= restore  # it made the checkpoint first
    _new_boot(monkeypatch)
    with rstore.Store(path) as s:
        assert [i.decode() for i, _ in s.xrange("small")] == [first, *acknowledged, after]
        assert s.xlen("big") == ENTRIES and s.check() == []


def test_writers_beside_a_restore_lose_nothing_across_a_restart(
    tmp_path: Path, dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    acknowledged: list[bytes] = []
    with rstore.Store(path) as s:
        s.xadd("small", {"i": "first"})
        stop = threading.Event()

        def write() -> None:
            while not stop.is_set():
                acknowledged.append(s.xadd("small", {"i": len(acknowledged)}))

        writer = threading.Thread(target=write)
        writer.start()
        try:
            for _ in range(3):
                s.restore_file(dump, replace=True)
        finally:
            stop.set()
            writer.join()
    _new_boot(monkeypatch)
    with rstore.Store(path) as s:
        got = [i for i, _ in s.xrange("small")][1:]
        assert got == acknowledged and len(acknowledged) > 0
        assert s.xlen("big") == ENTRIES and s.check() == []
