"""A store's databases (``Store.database`` / ``Store.databases``) and RDB files holding several:
``Store.save`` writes every database, ``Store.restore_file(path, db=None)`` imports every one,
all or nothing.  (Against the real servers: tests/oracle/test_served_databases.py.)"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from databases import database_contents

import rstore
from rstore.codec.crc64 import crc64

contents = database_contents


@pytest.fixture
def three(tmp_path: Path) -> rstore.Store:
    """A store with streams in databases 0, 3 and 15 (``shared`` in each, other contents)."""
    store = rstore.Store(tmp_path / "three", sync=False)
    for db in (0, 3, 15):
        part = store.database(db)
        for i in range(1, db + 3):
            part.xadd("shared", {"db": str(db), "i": str(i)}, id=f"1-{i}")
        part.xadd(f"only{db}", {"x": "y"}, id="5-5")
        part.xgroup_create(f"only{db}", "g", "0")
        part.xreadgroup("g", "alice", {f"only{db}": ">"})
    yield store
    store.close()


# ----------------------------------------------------------------------------- databases


def test_database_zero_is_the_store_and_others_live_under_it(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s", sync=False, decode_responses=True) as store:
        assert store.database(0) is store
        db3 = store.database(3)
        assert db3 is store.database(3)
        assert db3.path == str(tmp_path / "s" / "db3")
        assert repr(db3).endswith("nosync>")  # the parent's sync setting
        db3.xadd("k", {"f": "v"}, id="1-1")
        assert db3.xrange("k") == [("1-1", {"f": "v"})]  # the parent's decode_responses
        assert store.xlen("k") == 0
        assert store.databases() == [0, 3]
        for bad in (-1, 16, True, "3"):
            with pytest.raises(ValueError, match="0 to 15"):
                store.database(bad)  # type: ignore[arg-type]
    assert db3.closed  # closed with its parent
    with rstore.Store(tmp_path / "s") as again:
        assert again.databases() == [0, 3]  # found on disk
        assert again.database(3).xlen("k") == 1


def test_one_database_store_per_number_across_threads(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s", sync=False) as store:
        got: list[rstore.Store] = []
        start = threading.Barrier(8)

        def grab() -> None:
            start.wait()
            got.append(store.database(7))

        threads = [threading.Thread(target=grab) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 8 and all(s is got[0] for s in got)
        got[0].close()  # closed by its user: the next call opens it again
        assert not store.database(7).closed


def test_a_read_only_parent_opens_read_only_and_creates_nothing(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store:
        store.database(2).xadd("k", {"f": "v"}, id="1-1")
    with rstore.Store(tmp_path / "s", readonly=True) as ro:
        assert ro.database(2).xlen("k") == 1
        with pytest.raises(rstore.ReadOnlyStoreError):
            ro.database(2).xadd("k", {"f": "v"})
        with pytest.raises(rstore.StoreNotFoundError):
            ro.database(4)
    assert not (tmp_path / "s" / "db4").exists()


# ----------------------------------------------------------------------------- save


def test_save_writes_every_database_that_holds_keys(three: rstore.Store, tmp_path: Path) -> None:
    three.database(9)  # present, empty: not written
    assert three.databases() == [0, 3, 9, 15]
    report = three.save(tmp_path / "all.rdb")
    assert report.databases == {0: (2, 3), 3: (2, 6), 15: (2, 18)}
    assert (report.streams, report.entries) == (6, 27)
    summary = rstore.inspect_rdb(str(tmp_path / "all.rdb"))
    assert {db: t["stream"].keys for db, t in summary.databases.items()} == {0: 2, 3: 2, 15: 2}
    only = three.save(tmp_path / "three.rdb", databases=[3, 4])  # 4 does not exist: nothing
    assert only.databases == {3: (2, 6)}
    assert list(rstore.inspect_rdb(str(tmp_path / "three.rdb")).databases) == [3]
    assert not (Path(three.path) / "db4").exists()
    with pytest.raises(ValueError, match="0 to 15"):
        three.save(tmp_path / "bad.rdb", databases=[16])


def test_save_and_restore_every_database_round_trip(three: rstore.Store, tmp_path: Path) -> None:
    three.save(tmp_path / "all.rdb")
    with rstore.Store(tmp_path / "copy", sync=False) as copy:
        report = copy.restore_file(tmp_path / "all.rdb", db=None)
        assert report.db is None
        assert sorted(report.databases) == [0, 3, 15]
        assert report.databases[15].entries == 18 and report.entries == 27
        names = [b"shared", b"only0", b"shared", b"only3", b"shared", b"only15"]
        assert sorted(report.streams) == sorted(names)
        assert contents(copy) == contents(three)
        assert copy.check() == [] and copy.database(15).check() == []


def test_restoring_one_database_counts_the_others(three: rstore.Store, tmp_path: Path) -> None:
    three.save(tmp_path / "all.rdb")
    with rstore.Store(tmp_path / "copy", sync=False) as copy:
        report = copy.restore_file(tmp_path / "all.rdb", db=3)
        assert sorted(report.streams) == [b"only3", b"shared"]
        assert report.other_dbs == {0: 2, 15: 2}
        assert copy.databases() == [0]  # database 3 of the file went into this store
        assert copy.xlen("shared") == 5


# ----------------------------------------------------------------------------- all or nothing


def _target(tmp_path: Path) -> rstore.Store:
    """A store that already holds something in databases 0 and 3."""
    store = rstore.Store(tmp_path / "target", sync=False)
    store.xadd("mine", {"a": "1"}, id="1-1")
    store.database(3).xadd("mine3", {"a": "1"}, id="1-1")
    return store


def test_a_name_taken_in_any_database_changes_no_database(
    three: rstore.Store, tmp_path: Path
) -> None:
    three.save(tmp_path / "all.rdb")
    with _target(tmp_path) as target:
        target.database(15).xadd("only15", {"taken": "here"}, id="9-9")
        before = contents(target)
        with pytest.raises(rstore.KeyExistsError, match="in database 15") as caught:
            target.restore_file(tmp_path / "all.rdb", db=None)
        assert caught.value.key == b"only15"
        assert contents(target) == before  # database 0 and 3 too
        report = target.restore_file(tmp_path / "all.rdb", db=None, replace=True)
        assert report.databases[15].replaced == [b"only15"]
        assert target.database(15).xrange("only15") == three.database(15).xrange("only15")
        assert target.xlen("mine") == 1  # replace replaces what the file holds, no more


def test_a_damaged_file_changes_no_database_and_creates_none(
    three: rstore.Store, tmp_path: Path
) -> None:
    three.save(tmp_path / "all.rdb")
    data = (tmp_path / "all.rdb").read_bytes()
    (tmp_path / "cut.rdb").write_bytes(data[: len(data) - 40])  # inside database 15's part
    with _target(tmp_path) as target:
        before = contents(target)
        with pytest.raises(rstore.CorruptRDBError):
            target.restore_file(tmp_path / "cut.rdb", db=None)
        assert contents(target) == before
        assert target.databases() == [0, 3]  # no db15 created


def test_a_database_above_15_is_refused_whole(three: rstore.Store, tmp_path: Path) -> None:
    three.save(tmp_path / "all.rdb")
    data = bytearray((tmp_path / "all.rdb").read_bytes())
    at = data.index(b"\xfe\x0f\xfb")  # SELECTDB 15, RESIZEDB
    data[at + 1] = 20
    data[-8:] = crc64(bytes(data[:-8])).to_bytes(8, "little")
    (tmp_path / "db20.rdb").write_bytes(bytes(data))
    with _target(tmp_path) as target:
        before = contents(target)
        with pytest.raises(rstore.UnsupportedRDBError, match="database 20"):
            target.restore_file(tmp_path / "db20.rdb", db=None)
        assert contents(target) == before
        assert target.restore_file(tmp_path / "db20.rdb", db=20).streams  # alone, it is fine


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_a_name_taken_after_the_check_names_what_was_restored(
    three: rstore.Store, tmp_path: Path
) -> None:
    """The documented window: another writer creating a name of the file in database 15
    while database 3 is being imported (after the check of step 1)."""
    three.save(tmp_path / "all.rdb")
    with rstore.Store(tmp_path / "target", sync=False) as target:
        size = (tmp_path / "all.rdb").stat().st_size
        racer = rstore.Store(tmp_path / "target" / "db15", sync=False)

        def progress(done: int, total: int | None) -> None:
            if done > size and not racer.exists("only15"):  # step 2 is under way
                racer.xadd("only15", {"raced": "1"}, id="1-1")

        with pytest.raises(rstore.KeyExistsError) as caught:
            target.restore_file(tmp_path / "all.rdb", db=None, progress=progress)
        racer.close()
        assert caught.value.__notes__ == [
            "databases restored before this error: 0, 3; the others are unchanged"
        ]
        assert contents(target)[3] == contents(three)[3]
        assert target.database(15).xrange("only15") == [(b"1-1", {b"raced": b"1"})]
