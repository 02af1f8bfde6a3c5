"""A damaged record of a consumer group -- a pending entry, a consumer, a consumer's index
entry -- is refused with an error naming its stream (the error's ``key``, as for a damaged
node or group record), its group, and the consumer or entry where the record's key holds them:
the user can tell which stream to repair or delete.  (These records are keyed by the group's
handle, not the stream's, and the error once named neither, only the record's key in hex.)"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

import rstore
from rstore.storage.records import group_records, layout

from .helpers import find, flip_bit, populate, stored_value

LONG_KEY, LONG_GROUP, LONG_CONSUMER = "L" * 600, "G" * 450, "C" * 450  # populate's


@pytest.fixture
def store_path(tmp_path: os.PathLike[str]) -> str:
    path = str(tmp_path / "store")
    populate(path, entries=400)
    return path


def _group_handle(store: rstore.Store, key: str, group: str) -> int:
    def read(txn: Any) -> int:
        stream = txn.key_get(key.encode()).handle
        meta = group_records.group_get(txn, stream, group.encode())
        assert meta is not None
        return int(meta.handle)

    return int(store._live_env().read(read))


def _damage(path: str, db: bytes, key: bytes) -> None:
    """Flip a bit of the record's checksum (its last byte): the record no longer verifies."""
    with rstore.Store(path) as s:
        value = stored_value(s, db, key)
    flip_bit(path, find(path, key + value), len(key) + len(value) - 1)


def _refused(read: Callable[[], object], stream: bytes, db: str, what: str) -> None:
    with pytest.raises(rstore.CorruptStoreError) as info:
        read()
    err = info.value
    assert (err.key, err.db) == (stream, db)
    assert f"checksum mismatch: the record is damaged ({what})" in str(err)
    assert "record key" not in str(err)  # the names say where it is


def test_a_damaged_pending_entry_names_its_stream_and_group(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        first = s.xpending_range("big", "workers", "-", "+", 1)[0]
        entry = first["message_id"]
        ms, seq = (int(x) for x in entry.split(b"-"))
        key = layout.pel_key(_group_handle(s, "big", "workers"), (ms, seq))
    _damage(store_path, layout.DB_PEL, key)
    what = f"group 'workers', pending entry {entry.decode()}"
    with rstore.Store(store_path) as s:
        for read in (
            lambda: s.xpending("big", "workers"),
            lambda: s.xpending_range("big", "workers", "-", "+", 10),
            lambda: s.xack("big", "workers", entry),
            lambda: s.xclaim("big", "workers", "dave", 0, [entry]),
            lambda: s.execute("XINFO", "STREAM", "big", "FULL"),
            lambda: s.dump("big"),
        ):
            _refused(read, b"big", "pel", what)
        assert s.xlen("small:3") == 1  # the rest of the store is untouched


def test_a_damaged_consumer_names_its_stream_group_and_consumer(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        key = layout.consumer_key(_group_handle(s, "big", "workers"), b"carol")
    _damage(store_path, layout.DB_CONSUMERS, key)
    with rstore.Store(store_path) as s:
        _refused(
            lambda: s.xinfo_consumers("big", "workers"),
            b"big",
            "consumers",
            "group 'workers', consumer 'carol'",
        )


def test_a_damaged_consumer_index_entry_names_all_it_can(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        mine = s.xpending_range("big", "workers", "-", "+", 1, consumername="alice")[0]
        entry = mine["message_id"]
        ms, seq = (int(x) for x in entry.split(b"-"))
        handle = _group_handle(s, "big", "workers")
        key = layout.consumer_pel_prefix(handle, b"alice") + layout.ID_PACK(ms, seq)
    _damage(store_path, layout.DB_CONSUMER_PEL, key)
    with rstore.Store(store_path) as s:
        _refused(
            lambda: s.xpending_range("big", "workers", "-", "+", 10, consumername="alice"),
            b"big",
            "consumer_pel",
            f"group 'workers', consumer 'alice', pending entry {entry.decode()}",
        )


def test_long_names_are_named_where_the_key_holds_them_whole(store_path: str) -> None:
    """A group name longer than a key holds is read from the group record; a consumer's is
    a prefix and a hash in the key of its records, and left out rather than shown so."""
    with rstore.Store(store_path) as s:
        handle = _group_handle(s, LONG_KEY, LONG_GROUP)
        key = layout.consumer_key(handle, LONG_CONSUMER.encode())
    _damage(store_path, layout.DB_CONSUMERS, key)
    with rstore.Store(store_path) as s:
        _refused(
            lambda: s.xinfo_consumers(LONG_KEY, LONG_GROUP),
            LONG_KEY.encode(),
            "consumers",
            f"group '{LONG_GROUP}'",
        )


def test_an_entry_a_consumer_lists_but_the_group_lacks_names_its_stream(store_path: str) -> None:
    """Damage a checksum cannot see -- the group's record of an entry gone (as when its key
    was damaged), its owner's index still listing it -- is told with the stream named too."""
    with rstore.Store(store_path) as s:
        mine = s.xpending_range("big", "workers", "-", "+", 1, consumername="alice")[0]
        entry = mine["message_id"]
        ms, seq = (int(x) for x in entry.split(b"-"))
        key = layout.pel_key(_group_handle(s, "big", "workers"), (ms, seq))
        assert s._live_env().write(lambda txn: txn.delete(layout.DB_PEL, key))
        with pytest.raises(rstore.CorruptStoreError) as info:
            s.xpending_range("big", "workers", "-", "+", 10, consumername="alice")
    assert (info.value.key, info.value.db) == (b"big", "pel")
    assert f"lists entry {entry.decode()}, which the group's pending entries lack" in str(
        info.value
    )
