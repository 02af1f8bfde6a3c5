"""Compaction (issue 21, item 5): ``data.mdb`` (and ``wal.log``) shrink to about the live data,
and nothing the user can see changes -- every record of every sub-database, in every database
of the store (a store of an older format upgraded first); the store goes on, through a later
power-loss recovery too.

In one process; the other processes (refusal, waiting, SIGKILL at every step) are in
``tests/processes/test_compact_processes.py``.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from pathlib import Path

import pytest
from store_formats import downgrade

import rstore
from rstore.storage.compaction import compact_intent
from tests.damage.locate import zero_pages_holding
from tests.damage.population import VALUE_MARK
from tests.storage import compacting
from tests.storage.compacting import records, state, uncounted

# The shared fixtures (tests/storage/compacting.py).
population, populated = compacting.population, compacting.populated


def data_size(path: Path) -> int:
    return os.path.getsize(path / "data.mdb")


def test_a_deleted_stream_gives_its_space_back(tmp_path: Path) -> None:
    """The issue's case, scaled down: 200,000 entries, DEL, compact: data.mdb is then no more
    than twice a fresh store restored from a save of the same data, and wal.log is cut back."""
    path, fresh = tmp_path / "store", tmp_path / "fresh"
    with rstore.Store(path) as store:
        store.xadd("kept", {"f": "v"})
        store.xgroup_create("kept", "g", id="0")
        for _ in range(2):
            store.append_entries(("big", None, [b"field", b"value"]) for _ in range(100_000))
        store.delete("big")
        store.save(tmp_path / "dump.rdb")
    with rstore.Store(fresh) as store:
        store.restore_file(tmp_path / "dump.rdb")
    before = data_size(path)
    assert before > 100 * data_size(fresh)  # what the issue reports: the file never shrinks
    kept = state(path)
    report = rstore.compact_store(path)
    (db,) = report.databases
    assert (db.db, db.format, db.bytes_before) == (0, rstore.FORMAT_VERSION, before)
    assert db.bytes_after == data_size(path) <= 2 * data_size(fresh)
    assert db.pages_after < db.pages_before // 100
    assert db.log_bytes_before > 1 << 20
    assert db.log_bytes_after == os.path.getsize(path / "wal.log") == 4096
    assert report.bytes_after < report.bytes_before // 100
    assert state(path) == kept
    assert sorted(os.listdir(path)) == sorted(os.listdir(fresh))  # nothing left behind


def test_every_record_of_every_database_survives(populated: Path) -> None:
    kept = state(populated)
    assert set(kept) == {0, 3}
    sizes = {0: data_size(populated), 3: data_size(populated / "db3")}
    report = rstore.compact_store(populated)
    assert [d.db for d in report.databases] == [0, 3]
    for done in report.databases:
        assert done.bytes_before == sizes[done.db]
        assert done.bytes_after == data_size(Path(done.path)) < done.bytes_before
    assert state(populated) == kept
    with rstore.Store(populated) as store:  # and the store goes on
        assert store.last_batch("loader") == 5
        store.xadd("kept", {"after": "compaction"})
        store.xreadgroup("g1", "c9", {"big": ">"}, count=3)
        store.database(3).xadd("other", {"more": "x"})
        assert store.check() == []
        written = {n: records(store.database(n)) for n in store.databases()}
    assert state(populated) == written


def test_a_store_of_an_older_format_is_upgraded_then_compacted(populated: Path) -> None:
    """Format 2 (written by an older rstore, in both databases): the compaction brings it to
    the current format first, as every open that may write it does, then compacts it; every record
    stays."""
    kept = state(populated)
    for path in (populated, populated / "db3"):
        downgrade(str(path), 2)
        assert not (path / "wal.log").exists()
    sizes = [data_size(populated), data_size(populated / "db3")]
    report = rstore.compact_store(populated)
    assert [(d.db, d.format) for d in report.databases] == [
        (0, rstore.FORMAT_VERSION),
        (3, rstore.FORMAT_VERSION),
    ]
    assert [d.bytes_after for d in report.databases] < sizes
    assert state(populated) == uncounted(kept)  # counted when a stream is first asked for


def test_a_compacted_store_recovers_after_a_power_loss(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes after the compaction, then a restart (another boot id): recovery starts from the
    compacted copy's checkpoint and redoes the new log generation's records."""
    rstore.compact_store(populated)
    with rstore.Store(populated, sync=False) as store:
        for i in range(50):
            store.xadd("kept", {"i": i})
        store.sync()
        written = {n: records(store.database(n)) for n in store.databases()}
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))
    assert state(populated) == written


def test_compacting_twice_and_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    rstore.Store(path).close()
    for n in range(2):
        report = rstore.compact_store(path)
        assert report.databases[0].bytes_after <= report.databases[0].bytes_before
        with rstore.Store(path) as store:
            assert (store.xlen("s"), store.check()) == (n, [])
            store.xadd("s", {"f": "v"})
    with rstore.Store(path) as store:
        assert store.xlen("s") == 2


def test_progress_counts_the_bytes_copied(populated: Path) -> None:
    calls: list[tuple[int, int]] = []
    report = rstore.compact_store(
        populated, progress=lambda done, total: calls.append((done, total))
    )
    total = calls[-1][1]
    assert calls[-1] == (total, total)
    assert all(b >= a for (a, _), (b, _) in itertools.pairwise(calls))
    assert {t for _, t in calls} == {total}
    # what is counted is what is copied: the pages in use (the copy's few more are the log
    # position moved, written once the copy is done)
    assert total <= sum(d.bytes_after for d in report.databases)


def test_progress_reports_the_end_of_a_copy_that_ended_before_it_was_watched(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the copy may be over before the calling thread first looks: its end
    is reported all the same (it once was not: no call at all)."""
    real_start = threading.Thread.start

    def start_and_finish(self: threading.Thread) -> None:
        real_start(self)
        self.join()

    monkeypatch.setattr(threading.Thread, "start", start_and_finish)
    calls: list[tuple[int, int]] = []
    rstore.compact_store(populated, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1] > 0


def test_a_store_open_in_this_process_is_refused(populated: Path) -> None:
    before = state(populated)
    with rstore.Store(populated), pytest.raises(rstore.StorageError, match="open in this process"):
        rstore.compact_store(populated)
    with (
        rstore.Store(populated / "db3"),
        pytest.raises(rstore.StorageError, match="db3 is open in this process"),
    ):
        rstore.compact_store(populated)
    assert state(populated) == before
    assert not (populated / compact_intent.COPY_FILE).exists()


def test_opening_the_store_meanwhile_in_this_process_is_refused(populated: Path) -> None:
    """A thread of the compacting process may not open the store while the compaction runs
    (its LMDB lock would be the compaction's own)."""
    reached, go = threading.Event(), threading.Event()

    def progress(done: int, total: int) -> None:
        reached.set()
        go.wait(10)

    worker = threading.Thread(target=rstore.compact_store, args=(populated,),
                              kwargs={"progress": progress})  # fmt: skip
    worker.start()
    try:
        assert reached.wait(10)
        with pytest.raises(rstore.StorageError, match="being compacted by this process"):
            rstore.Store(populated)
        with pytest.raises(rstore.StorageError, match="being compacted by another thread"):
            rstore.compact_store(populated)
    finally:
        go.set()
        worker.join(30)
    with rstore.Store(populated) as store:
        assert store.check() == []


def test_refusals(tmp_path: Path, populated: Path) -> None:
    with pytest.raises(rstore.StoreNotFoundError):
        rstore.compact_store(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(rstore.NotAStoreError):
        rstore.compact_store(tmp_path / "file")
    for bad in (-1, "1", float("nan"), True):
        with pytest.raises(ValueError, match="wait must be"):
            rstore.compact_store(populated, wait=bad)  # type: ignore[arg-type]


def test_a_damaged_store_is_refused_and_left_as_it_is(populated: Path) -> None:
    data = populated / "data.mdb"
    assert zero_pages_holding(data, VALUE_MARK)  # a node of the 'marked' stream
    damaged = data.read_bytes()
    with pytest.raises(rstore.CorruptStoreError):
        rstore.compact_store(populated)
    assert data.read_bytes() == damaged
    assert not (populated / compact_intent.COPY_FILE).exists()
