"""A checkpoint's meta page, captured and written back, reopens the store at that checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
import pytest

from rstore.storage.engine import wal_meta


def _contents(env: lmdb.Environment) -> list[tuple[bytes, bytes]]:
    with env.begin() as txn:
        return list(txn.cursor())


def _write(env: lmdb.Environment, start: int, count: int) -> None:
    for i in range(start, start + count):
        with env.begin(write=True) as txn:
            txn.put(b"k%05d" % i, b"v" * (i % 700))
            if i % 3 == 0:
                txn.delete(b"k%05d" % (i - 2))


def test_restoring_a_pinned_checkpoints_meta_page_reopens_exactly_that_state(
    tmp_path: Path,
) -> None:
    env = lmdb.open(str(tmp_path), sync=False, map_size=1 << 24)
    _write(env, 0, 200)
    data = os.open(tmp_path / "data.mdb", os.O_RDWR)
    try:
        writer = env.begin(write=True)  # LMDB's writer lock: the last commit is current
        checkpoint = writer.id() - 1
        meta = wal_meta.capture(data, checkpoint)
        pin = env.begin()  # the checkpoint's tree stays untouched while this is open
        writer.abort()
        assert pin.id() == checkpoint and wal_meta.txnid_of(meta) == checkpoint
        expected = list(pin.cursor())
        _write(env, 200, 300)  # the trees move on, over both meta slots many times
        assert _contents(env) != expected
        pin.abort()
        env.close()
        wal_meta.restore(data, meta)
    finally:
        os.close(data)
    env = lmdb.open(str(tmp_path), sync=False, map_size=1 << 24)
    try:
        assert env.info()["last_txnid"] == checkpoint
        assert _contents(env) == expected
        _write(env, 500, 50)  # and it goes on from there
        assert len(_contents(env)) > len(expected)
    finally:
        env.close()


def test_capture_refuses_a_transaction_no_meta_page_holds(tmp_path: Path) -> None:
    env = lmdb.open(str(tmp_path), sync=False, map_size=1 << 24)
    _write(env, 0, 5)
    last = env.info()["last_txnid"]
    env.close()
    data = os.open(tmp_path / "data.mdb", os.O_RDWR)
    try:
        assert wal_meta.txnid_of(wal_meta.capture(data, last)) == last
        with pytest.raises(wal_meta.MetaError):
            wal_meta.capture(data, last - 2)  # overwritten by the commit after it
        with pytest.raises(wal_meta.MetaError):
            wal_meta.restore(data, bytes(wal_meta.META_BYTES))  # not a meta page
    finally:
        os.close(data)
