"""What a logged write transaction records, redone elsewhere, gives the same store."""

from __future__ import annotations

import tempfile
from typing import Any

import lmdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.storage.engine import wal_capture, wal_log

NAMES = (b"nodes", b"groups")
keys = st.binary(min_size=1, max_size=3)
values = st.binary(max_size=8)
step = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMES), keys, values),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), keys),
    st.tuples(st.just("cursor_delete"), st.sampled_from(NAMES), keys),
    st.tuples(st.just("putmulti"), st.sampled_from(NAMES), st.lists(st.tuples(keys, values))),
    st.tuples(st.just("clear"), st.sampled_from(NAMES)),
)
# A transaction: steps run in the outer transaction, or in a nested one committed or aborted.
program = st.lists(
    st.tuples(st.sampled_from(["outer", "nested-commit", "nested-abort"]), st.lists(step)),
    max_size=5,
)


def _open(path: str) -> tuple[Any, dict[bytes, Any]]:
    env = lmdb.open(path, max_dbs=4, map_size=1 << 24)
    return env, {name: env.open_db(name) for name in NAMES}


def _contents(env: Any, dbs: dict[bytes, Any]) -> dict[bytes, list[tuple[bytes, bytes]]]:
    with env.begin() as txn:
        return {name: list(txn.cursor(db=db)) for name, db in dbs.items()}


def _run(txn: Any, dbs: dict[bytes, Any], steps: list[tuple[Any, ...]]) -> None:
    for kind, name, *args in steps:
        db = dbs[name]
        if kind == "put":
            txn.put(args[0], args[1], db=db)
        elif kind == "delete":
            txn.delete(args[0], db=db)
        elif kind == "cursor_delete":
            cur = txn.cursor(db)
            if cur.set_range(args[0]):
                cur.delete()
        elif kind == "putmulti":
            txn.cursor(db).putmulti(args[0])
        else:
            txn.drop(db, delete=False)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), keys, values), max_size=6), program)
def test_redoing_the_recorded_ops_on_the_state_before_gives_the_state_after(
    initial: list[tuple[bytes, bytes, bytes]], txns: list[tuple[str, list[tuple[Any, ...]]]]
) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        env_a, dbs_a = _open(a)
        env_b, dbs_b = _open(b)
        for env, dbs in ((env_a, dbs_a), (env_b, dbs_b)):
            with env.begin(write=True) as txn:
                for name, key, value in initial:
                    txn.put(key, value, db=dbs[name])
        names = {db: name for name, db in dbs_a.items()}
        recorded: list[wal_log.Op] = []
        for mode, steps in txns:  # one logged write transaction each
            outer = wal_capture.LoggedTxn(env_a.begin(write=True), names)
            if mode == "outer":
                _run(outer, dbs_a, steps)
            else:
                child = wal_capture.LoggedTxn(
                    env_a.begin(write=True, parent=outer.raw), names, parent=outer
                )
                _run(child, dbs_a, steps)
                child.commit() if mode == "nested-commit" else child.abort()
            outer.commit()
            recorded += outer.ops
        after = _contents(env_a, dbs_a)
        with env_b.begin(write=True) as txn:
            wal_capture.redo(txn, dbs_b, recorded)
        assert _contents(env_b, dbs_b) == after
        # Redone again over the result (a recovery interrupted and started over): the same.
        with env_b.begin(write=True) as txn:
            wal_capture.redo(txn, dbs_b, recorded)
        assert _contents(env_b, dbs_b) == after
        env_a.close()
        env_b.close()


def test_a_write_call_that_would_go_unrecorded_raises(tmp_path: Any) -> None:
    env, dbs = _open(str(tmp_path))
    txn = wal_capture.LoggedTxn(env.begin(write=True), {db: n for n, db in dbs.items()})
    with pytest.raises(AttributeError):
        txn.replace(b"k", b"v", db=dbs[b"nodes"])  # not wrapped: refused, not unrecorded
    with pytest.raises(ValueError):
        txn.drop(dbs[b"nodes"])  # deleting the sub-database itself is never logged
    txn.abort()
    env.close()
