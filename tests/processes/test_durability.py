"""Durability settings, reopening, and the errors that guard a store directory.

What cannot be tested here: that ``sync=True`` survives a power cut (no test can pull the
plug).  What is tested: that the setting reaches LMDB, that a killed process loses nothing in
either mode, that a closed and reopened store has everything, and that anything which is not
a usable store is refused with a clear error instead of being misread or overwritten.
"""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
import pytest
from store_formats import legacy_store

import rstore
from rstore.storage.engine import log_flush
from rstore.storage.records import layout

from . import helpers_mp as h
from .children import Children, collect

KEY = h.KEY


def _lmdb_flags(store: rstore.Store) -> dict[str, bool]:
    """The flags LMDB was opened with (white box: the storage layer's handle)."""
    flags: dict[str, bool] = store._live_env().lmdb_flags()
    return flags


def _write_sample(store: rstore.Store) -> list[bytes]:
    """Single XADDs, a pipeline and a second key; returns the IDs written to ``KEY``."""
    ids = [store.xadd(KEY, {"w": 0, "seq": seq}) for seq in range(3)]
    pipe = store.pipeline()
    for seq in range(3, 103):
        pipe.xadd(KEY, {"w": 0, "seq": seq})
    ids += pipe.execute()
    store.xadd("other", {"k": "v"})
    return ids


# --------------------------------------------------------------------------- sync modes


def _assert_written_through_the_log(store: rstore.Store, sync: bool) -> None:
    """Format 3: LMDB itself never flushes (MDB_NOSYNC); ``sync=True`` flushes the log after
    each commit (made or skipped because another flush covered it), ``sync=False`` never."""
    flags = _lmdb_flags(store)
    env = store._live_env()
    assert (store.format, store.wal) == (rstore.FORMAT_VERSION, True)
    assert flags["sync"] is False and env._wal is not None
    assert env.flushes_after_commit is sync
    assert flags["map_async"] is False and flags["writemap"] is False
    assert repr(store).endswith(" sync>" if sync else " nosync>")
    before = log_flush.counters.flushes + log_flush.counters.skipped
    store.xadd(KEY, {"w": 0, "seq": 0})
    after = log_flush.counters.flushes + log_flush.counters.skipped
    assert after - before == (1 if sync else 0)


@pytest.mark.parametrize("sync", [True, False])
def test_sync_setting_reaches_lmdb(path: str, sync: bool) -> None:
    """Every store is written through the write-ahead log (format 3): a new one, and one of an
    older format (2) once a writable open upgraded it.  ``wal=`` is deprecated and ignored:
    it warns and changes nothing, whether the store is already open in this process or not."""
    with rstore.Store(path, sync=sync) as store:
        _assert_written_through_the_log(store, sync)
        for wal in (False, True):
            with (
                pytest.warns(DeprecationWarning, match=r"Store\(wal=\.\.\.\) is deprecated"),
                rstore.Store(path, sync=sync, wal=wal) as same,  # already open in this process
            ):
                assert same.format == rstore.FORMAT_VERSION
    for wal in (False, True):
        with (
            pytest.warns(DeprecationWarning, match=r"Store\(wal=\.\.\.\) is deprecated"),
            rstore.Store(path, sync=sync, wal=wal) as store,  # opened afresh
        ):
            assert store.format == rstore.FORMAT_VERSION and store.xlen(KEY) == 1
    older = legacy_store(path + "-format2")
    with rstore.Store(older, sync=sync) as store:  # upgraded by this open
        _assert_written_through_the_log(store, sync)


@pytest.mark.parametrize("sync", [True, False])
def test_sync_flushes_and_other_processes_read_the_data(
    path: str, children: Children, sync: bool
) -> None:
    """``store.sync()`` works in both modes; a process started afterwards reads every write."""
    with rstore.Store(path, sync=sync) as store:
        ids = _write_sample(store)
        store.sync()
        ctx = children.ctx
        results = ctx.Queue()
        children.start(h.tail_reader_once, path, results)
        assert collect(results, 1, children)["reader"] == [len(ids), ids[-1]]
        children.join()


@pytest.mark.slow
@pytest.mark.parametrize("sync", [True, False])
def test_writes_survive_sigkill_of_the_writer(path: str, children: Children, sync: bool) -> None:
    """Killing the writer loses nothing it was told was written -- with ``sync=False`` too:
    committed pages sit in the OS page cache, which outlives the process."""
    rstore.Store(path, sync=sync).close()
    acknowledged = h.kill_xadd_writer(children, path, sync=sync, kill_after=200)
    with rstore.Store(path, sync=sync) as store:
        ids = [eid for eid, _ in h.check_stream(store)]
        assert ids[: len(acknowledged)] == acknowledged
        assert len(ids) - len(acknowledged) <= 1  # at most the XADD in flight
        store.xadd(KEY, {"w": 0, "seq": 0})


@pytest.mark.parametrize("sync", [True, False])
def test_reopen_after_close_sees_everything(path: str, sync: bool) -> None:
    with rstore.Store(path, sync=sync) as store:
        ids = _write_sample(store)
        before = h.check_stream(store)
    with rstore.Store(path, sync=sync) as store:
        assert h.check_stream(store) == before
        assert [eid for eid, _ in before] == ids
        assert store.xlen("other") == 1
        ids.append(store.xadd(KEY, {"w": 0, "seq": 103}))
    with rstore.Store(path, sync=not sync) as store:  # the mode is per open, not per store
        assert [eid for eid, _ in h.check_stream(store)] == ids


def test_reopen_keeps_node_settings(path: str) -> None:
    with rstore.Store(path, node_max_entries=7, node_max_bytes=512) as store:
        for seq in range(20):
            store.xadd(KEY, {"w": 0, "seq": seq})
        nodes = store.xinfo_stream(KEY)["radix-tree-keys"]
    with rstore.Store(path) as store:
        assert (store.config.node_max_entries, store.config.node_max_bytes) == (7, 512)
        assert store.xinfo_stream(KEY)["radix-tree-keys"] == nodes == 3


# --------------------------------------------------------------------------- not a store


def _lmdb_env(path: str, puts: dict[bytes, bytes], named_db: bytes | None = None) -> None:
    env = lmdb.open(path, max_dbs=4)
    try:
        db = env.open_db(named_db) if named_db is not None else None
        with env.begin(write=True) as txn:
            for k, v in puts.items():
                txn.put(k, v, db=db)
    finally:
        env.close()


def test_a_file_is_not_a_store(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"hello")
    with pytest.raises(rstore.NotAStoreError, match="is a file, not a store directory"):
        rstore.Store(target)
    assert target.read_bytes() == b"hello"


def test_a_directory_with_other_files_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(rstore.NotAStoreError, match=r"holds other files and no data\.mdb"):
        rstore.Store(tmp_path)
    assert os.listdir(tmp_path) == ["notes.txt"]  # nothing was created in it


def test_a_data_file_that_is_not_lmdb_is_refused(tmp_path: Path) -> None:
    garbage = bytes(range(256)) * 64
    (tmp_path / "data.mdb").write_bytes(garbage)
    with pytest.raises(rstore.NotAStoreError, match="not a readable rstore store") as info:
        rstore.Store(tmp_path)
    assert str(tmp_path) in str(info.value)
    assert (tmp_path / "data.mdb").read_bytes() == garbage


def test_an_lmdb_environment_of_another_program_is_refused(tmp_path: Path) -> None:
    _lmdb_env(str(tmp_path), {b"k": b"v"}, named_db=b"theirs")
    with pytest.raises(rstore.NotAStoreError, match="LMDB environment but not an rstore store"):
        rstore.Store(tmp_path)
    _lmdb_env(str(tmp_path), {b"k2": b"v2"}, named_db=b"theirs")  # ours released the handle


def test_an_lmdb_environment_with_a_plain_meta_key_is_refused(tmp_path: Path) -> None:
    """Another program's LMDB file whose main database has a key named like our sub-db."""
    _lmdb_env(str(tmp_path), {b"meta": b"their value"})
    with pytest.raises(rstore.NotAStoreError):
        rstore.Store(tmp_path)


def test_a_missing_store_with_create_false(tmp_path: Path) -> None:
    with pytest.raises(rstore.NotAStoreError, match="no store at"):
        rstore.Store(tmp_path / "absent", create=False)
    assert not (tmp_path / "absent").exists()
    with pytest.raises(rstore.NotAStoreError, match="no store at"):
        rstore.Store(tmp_path, create=False)  # an empty directory
    assert os.listdir(tmp_path) == []


def test_a_store_of_a_newer_format_is_refused(path: str) -> None:
    with rstore.Store(path) as store:
        store.xadd(KEY, {"w": 0, "seq": 0})
    newer = layout.FORMAT_VERSION + 1
    _lmdb_env(path, {layout.META_FORMAT: layout.pack_format(newer)}, named_db=layout.DB_META)
    with pytest.raises(rstore.UnsupportedFormatError) as info:
        rstore.Store(path)
    message = str(info.value)
    assert f"format {newer}" in message and "upgrade rstore" in message
    # The refused open released its handle, and the data was not touched.
    env = lmdb.open(path, max_dbs=len(layout.ALL_DBS) + 2)
    try:
        with env.begin() as txn:
            meta = env.open_db(layout.DB_META, txn=txn, create=False)
            assert txn.get(layout.META_FORMAT, db=meta) == layout.pack_format(newer)
    finally:
        env.close()


def test_a_store_without_a_format_record_is_refused(path: str) -> None:
    rstore.Store(path).close()
    _lmdb_env(path, {layout.META_FORMAT: b"garbage"}, named_db=layout.DB_META)
    with pytest.raises(rstore.NotAStoreError, match="no rstore format record"):
        rstore.Store(path)


# --------------------------------------------------------------------------- closed stores


def test_a_closed_store_refuses_every_use(path: str) -> None:
    store = rstore.Store(path)
    store.xadd(KEY, {"w": 0, "seq": 0})
    pipe = store.pipeline().xadd(KEY, {"w": 0, "seq": 1})
    store.close()
    assert store.closed
    uses = {
        "xadd": lambda: store.xadd(KEY, {"a": 1}),
        "xrange": lambda: store.xrange(KEY),
        "xlen": lambda: store.xlen(KEY),
        "execute": lambda: store.execute("XLEN", KEY),
        "pipeline": pipe.execute,
        "new pipeline": lambda: store.pipeline().xlen(KEY).execute(),
        "sync": store.sync,
        "config": lambda: store.config,
    }
    for name, use in uses.items():
        with pytest.raises(rstore.StoreClosedError, match="is closed") as info:
            use()
        assert path in str(info.value), name
    store.close()  # closing twice is harmless


def test_closing_one_store_leaves_another_on_the_same_path_open(path: str) -> None:
    with rstore.Store(path) as first:
        second = rstore.Store(path)
        first.xadd(KEY, {"w": 0, "seq": 0})
    assert first.closed and not second.closed
    assert second.xlen(KEY) == 1
    second.close()


# --------------------------------------------------------------------------- one handle per process


def test_same_path_with_another_sync_setting_is_refused(path: str, tmp_path: Path) -> None:
    link = tmp_path / "link"
    store = rstore.Store(path, sync=True)
    os.symlink(path, link)
    for spelling in (path, str(link), os.path.relpath(path)):
        with pytest.raises(rstore.StorageError, match="already open in this process with sync="):
            rstore.Store(spelling, sync=False)
    same = rstore.Store(link, sync=True)  # the same setting shares the handle
    same.close()
    store.xadd(KEY, {"w": 0, "seq": 0})
    store.close()
    # The refused opens took no reference: the last close really closed the handle.
    env = lmdb.open(path, max_dbs=len(layout.ALL_DBS) + 2)
    env.close()
    with rstore.Store(path, sync=False) as store:  # once closed, another setting is fine
        assert store.xlen(KEY) == 1
