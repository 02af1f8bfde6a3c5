"""Saving reads the store's records in bulk (rstore/storage/records/bulk_read.py, packed by
``_rdbpack.pack_sealed``): the files and DUMP payloads are the bytes the reference path writes
(records read one by one and encoded in Python), and a damaged record stops the save with the
error the reference path raises, naming the sub-database and the stream."""

from __future__ import annotations

import os
import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_formats import downgrade_to_format_1

import rstore
from rstore.codec import speedups
from rstore.rdb import writer
from rstore.storage.records import group_records, layout

from .helpers import copy_store, find, flip_bit, populate, stored_value

PATHS = ("bulk", "records", "python")  # pack_sealed; pack of model records; no C at all


def _path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    if path == "bulk" and speedups.c_pack_sealed is None:
        pytest.skip("the C accelerator is not built (pure-Python install)")
    if path != "bulk":
        monkeypatch.setattr(writer, "c_pack_sealed", None)
    if path == "python":
        monkeypatch.setattr(writer, "c_pack", None)


def _saved(store: rstore.Store, target: str, path: str, compress: bool, version: int) -> bytes:
    with pytest.MonkeyPatch.context() as m:
        _path(m, path)
        m.setattr(writer, "time", types.SimpleNamespace(time=lambda: 1_700_000_000.0))
        store.save(target, compress=compress, rdb_version=version)
    with open(target, "rb") as f:
        return f.read()


def _dumps(store: rstore.Store, path: str) -> list[bytes | None]:
    with pytest.MonkeyPatch.context() as m:
        _path(m, path)
        return [store.dump(k) for k in sorted(store.keys())]


def _pending(s: rstore.Store) -> list[tuple[bytes, bytes, int]]:
    rows = s.xpending_range("big", "workers", "-", "+", 5000)
    return [(r["message_id"], r["consumer"], r["times_delivered"]) for r in rows]


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("bulk") / "store")
    populate(path, entries=3000)
    return path


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("version", [9, 10, 11])
def test_the_file_is_the_reference_paths(
    populated: str, tmp_path: os.PathLike[str], compress: bool, version: int
) -> None:
    with rstore.Store(populated, readonly=True) as s:
        files = {
            p: _saved(s, os.path.join(tmp_path, f"{p}.rdb"), p, compress, version) for p in PATHS
        }
    assert files["bulk"] == files["records"] == files["python"]
    with rstore.Store(os.path.join(tmp_path, "back")) as back:
        back.restore_file(os.path.join(tmp_path, "bulk.rdb"))
        with rstore.Store(populated, readonly=True) as s:
            assert back.xrange("big") == s.xrange("big")
            assert _pending(back) == _pending(s)


def test_a_format_1_store_saves_the_same_file(populated: str, tmp_path: os.PathLike[str]) -> None:
    """A store without seals is read record by record (the checked reads of format 1), into
    the same bytes."""
    old = copy_store(populated, os.path.join(tmp_path, "old"))
    with rstore.Store(populated, readonly=True) as s:
        expected = _saved(s, os.path.join(tmp_path, "new.rdb"), "bulk", True, 11)
        dumps = _dumps(s, "bulk")
    downgrade_to_format_1(old)
    with rstore.Store(old, readonly=True) as s:
        assert _saved(s, os.path.join(tmp_path, "old.rdb"), "bulk", True, 11) == expected
        assert _dumps(s, "bulk") == dumps


def test_nodes_over_many_chunks(tmp_path: os.PathLike[str]) -> None:
    """Nodes of 3 MiB in all: the C packer hands them over in several calls."""
    with rstore.Store(os.path.join(tmp_path, "s"), node_max_bytes=8192) as s:
        with s.pipeline() as pipe:
            for i in range(3000):
                pipe.xadd("k", {"v": os.urandom(1000), "n": str(i)})
            pipe.execute()
        files = {p: _saved(s, os.path.join(tmp_path, f"{p}.rdb"), p, True, 11) for p in PATHS}
    assert len(files["bulk"]) > 1 << 21
    assert files["bulk"] == files["records"] == files["python"]


def test_dump_in_a_pipeline_sees_the_nodes_it_wrote(tmp_path: os.PathLike[str]) -> None:
    """A write transaction's cached nodes are written before the bulk read (Txn.cursor)."""
    if speedups.c_pack_sealed is None:
        pytest.skip("the C accelerator is not built (pure-Python install)")
    with rstore.Store(os.path.join(tmp_path, "s")) as s:
        s.xadd("k", {"a": "1"}, id="1-1")
        with s.pipeline() as pipe:
            pipe.xadd("k", {"b": "2"}, id="2-1")
            pipe.dump("k")
            _, payload = pipe.execute()
        assert payload == s.dump("k")
        s.delete("k")
        s.restore("k", 0, payload)
        assert [i for i, _ in s.xrange("k")] == [b"1-1", b"2-1"]


# Random streams: entries, deletions, groups, consumers, acks, claims -- the same bytes.
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 4), st.sampled_from([b"1", b"x" * 40, b"-7"])),
        st.tuples(st.just("del"), st.integers(0, 30), st.just(b"")),
        st.tuples(st.just("read"), st.integers(1, 20), st.sampled_from([b"c1", b"c2", b"c" * 9])),
        st.tuples(st.just("ack"), st.integers(0, 10), st.just(b"")),
        st.tuples(st.just("claim"), st.integers(0, 10), st.sampled_from([b"c1", b"c3"])),
    ),
    max_size=40,
)


def _apply(s: rstore.Store, steps: list[tuple[str, int, bytes]]) -> None:
    s.xadd("s", {"f": "v"})
    s.xgroup_create("s", "g", "0")
    s.xgroup_create("s", "h", "$")
    for op, n, arg in steps:
        if op == "add":
            for i in range(n):
                s.xadd("s", {"field": arg, "i": str(i)})
        elif op == "del":
            ids = [i for i, _ in s.xrange("s")]
            if ids:
                s.xdel("s", ids[n % len(ids)])
        elif op == "read":
            s.xreadgroup("g", arg.decode(), {"s": ">"}, count=n)
            s.xreadgroup("h", arg.decode(), {"s": ">"}, count=1)
        else:
            pending = [p["message_id"] for p in s.xpending_range("s", "g", "-", "+", 50)]
            chosen = pending[n % len(pending) :][:3] if pending else []
            if chosen and op == "ack":
                s.xack("s", "g", *chosen)
            elif chosen:
                s.xclaim("s", "g", arg.decode(), 0, chosen)


@given(ops, st.integers(2, 12))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_streams_dump_alike_on_every_path(
    steps: list[tuple[str, int, bytes]], node_entries: int
) -> None:
    import tempfile

    with (
        tempfile.TemporaryDirectory() as tmp,
        rstore.Store(os.path.join(tmp, "s"), node_max_entries=node_entries) as s,
    ):
        _apply(s, steps)
        dumps = {p: _dumps(s, p) for p in PATHS}
    assert dumps["bulk"] == dumps["records"] == dumps["python"]


# ----------------------------------------------------------------------------- damage


def _damaged_copy(populated: str, tmp_path: os.PathLike[str], db: bytes) -> str:
    """A copy of the populated store with one bit flipped in a record of ``db`` that belongs
    to the stream ``big``: its first node, the first entry of its group PEL, or that entry in
    its owner's index."""
    path = copy_store(populated, os.path.join(tmp_path, "damaged"))
    with rstore.Store(path) as s:

        def record_key(txn: Any) -> bytes:
            handle = txn.key_get(b"big").handle
            if db == layout.DB_NODES:
                return layout.node_key(handle, txn.node_ids(handle)[0])
            group = group_records.group_get(txn, handle, b"workers")
            assert group is not None
            entry, (_, _, owner) = next(iter(group_records.pel_entries(txn, group)))
            if db == layout.DB_PEL:
                return layout.pel_key(group.handle, entry)
            return layout.consumer_pel_prefix(group.handle, owner) + layout.ID_PACK(*entry)

        key = s._live_env().read(record_key)
        value = stored_value(s, db, key)
    # a bit of the seal's last byte; a node lies in an overflow page, away from its key
    needle = value if db == layout.DB_NODES else key + value
    flip_bit(path, [o + len(needle) - 1 for o in find(path, needle)], 0, 2)
    return path


@pytest.mark.parametrize("db", [layout.DB_NODES, layout.DB_PEL, layout.DB_CONSUMER_PEL])
def test_a_damaged_record_stops_the_save_with_the_reference_error(
    populated: str, tmp_path: os.PathLike[str], db: bytes
) -> None:
    """The same error on every path, for a save and for DUMP: the sub-database and the stream
    (a PEL record's key holds its group's handle: the group is looked up, as every other read
    of it does)."""
    damaged = _damaged_copy(populated, tmp_path, db)
    target = os.path.join(tmp_path, "out.rdb")
    errors = []
    with rstore.Store(damaged) as s:
        for path in PATHS:
            with pytest.MonkeyPatch.context() as m:
                _path(m, path)
                with pytest.raises(rstore.CorruptStoreError) as info:
                    s.save(target)
                with pytest.raises(rstore.CorruptStoreError) as dumped:
                    s.dump("big")
            errors += [info.value, dumped.value]
        with pytest.raises(rstore.CorruptStoreError) as read:  # what a plain read reports
            if db == layout.DB_NODES:
                s.xrange("big")
            elif db == layout.DB_PEL:
                s.xpending_range("big", "workers", "-", "+", 5000)
            else:
                owners = s.xpending_range("big", "workers", "-", "+", 1)
                s.xpending_range("big", "workers", "-", "+", 5000, owners[0]["consumer"])
    first = errors[0]
    assert {(e.db, e.key, str(e)) for e in errors} == {(first.db, first.key, str(first))}
    assert first.db == db.decode() and "checksum mismatch" in str(first)
    assert (read.value.db, read.value.key) == (first.db, first.key)
    assert first.key == b"big" and "record key" not in str(first)
    if db != layout.DB_NODES:
        assert "(group 'workers', " in str(first)
    assert sorted(os.listdir(tmp_path)) == ["damaged"]  # no file, no temporary left


def _tamper_pel_count(path: str, delta: int) -> None:
    """Rewrite the group record of ``big``/``workers`` (sealed anew) with its PEL count off by
    ``delta``: records that disagree, each sound."""
    import lmdb

    env = lmdb.open(path, max_dbs=16)
    try:
        with env.begin(write=True) as txn:
            keys = env.open_db(layout.DB_KEYS, txn=txn, create=False)
            groups = env.open_db(layout.DB_GROUPS, txn=txn, create=False)
            rec = layout.unseal(
                layout.key_db_key(b"big"), txn.get(layout.key_db_key(b"big"), db=keys)
            )
            assert rec is not None
            key = layout.group_key(layout.unpack_key_record(rec).handle, b"workers")
            payload = layout.unseal(key, txn.get(key, db=groups))
            assert payload is not None
            group = layout.GroupMeta.unpack(key, payload)
            group.pel_count += delta
            txn.put(key, layout.seal(key, group.pack()), db=groups)
    finally:
        env.close()


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_pel_count_that_disagrees_is_refused_alike(
    populated: str, tmp_path: os.PathLike[str], delta: int
) -> None:
    path = copy_store(populated, os.path.join(tmp_path, "s"))
    _tamper_pel_count(path, delta)
    messages = []
    with rstore.Store(path) as s:
        for p in PATHS:
            with pytest.MonkeyPatch.context() as m:
                _path(m, p)
                with pytest.raises(rstore.InconsistentSnapshotError) as info:
                    s.save(os.path.join(tmp_path, "out.rdb"))
            messages.append(str(info.value))
    assert messages[0] == messages[1] == messages[2]
    assert "group PEL counts" in messages[0]
