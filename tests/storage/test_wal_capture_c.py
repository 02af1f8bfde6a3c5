"""The C capture (rstore/storage/engine/_capture.c) records what the Python reference
(rstore.storage.engine.wal_capture.LoggedTxn) records: the same random transactions, run through
each
on its own LMDB environment, give the same encoded pieces (spills included), the same replies
and the same databases; a change LMDB refuses leaves nothing recorded; the same calls are
refused."""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import lmdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.storage.engine import wal_capture, wal_log

try:
    C: Any = importlib.import_module("rstore.storage.engine._capture")
except ImportError:  # a pure-Python install
    C = None
else:  # what wal_capture does when it uses it (it does not under RSTORE_NO_SPEEDUPS=1)
    C.configure(wal_capture._PUTS, wal_capture._DELETES, wal_capture.SPILL_BYTES)

pytestmark = pytest.mark.skipif(C is None, reason="the C capture (_capture.c) is not built")

NAMES = (b"nodes", b"groups")
keys = st.binary(min_size=1, max_size=4)
values = st.binary(max_size=40)
kwargs = st.booleans()  # key and value passed by name (the generic call path), or by position
step = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMES), keys, values, kwargs),
    st.tuples(st.just("put_new"), st.sampled_from(NAMES), keys, values, kwargs),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), keys, kwargs),
    st.tuples(st.just("cursor_put"), st.sampled_from(NAMES), keys, values, kwargs),
    st.tuples(st.just("cursor_put_new"), st.sampled_from(NAMES), keys, values, kwargs),
    st.tuples(st.just("cursor_delete"), st.sampled_from(NAMES), keys),
    st.tuples(st.just("putmulti"), st.sampled_from(NAMES), st.lists(st.tuples(keys, values))),
    st.tuples(st.just("clear"), st.sampled_from(NAMES)),
)
mode = st.sampled_from(["commit", "abort"])
# A nested transaction, committed or aborted, with its steps and nested transactions of its own.
nested = st.tuples(
    st.just("nested"),
    mode,
    st.lists(st.one_of(step, st.tuples(st.just("nested"), mode, st.lists(step)))),
)
# Outer transactions, committed or aborted.
program = st.lists(st.tuples(mode, st.lists(st.one_of(step, nested))), max_size=4)


@contextmanager
def spill_at(n: int) -> Iterator[None]:
    """Both implementations spill past ``n`` bytes (then SPILL_BYTES again)."""
    saved = wal_capture.SPILL_BYTES
    wal_capture.SPILL_BYTES = n
    C.configure(wal_capture._PUTS, wal_capture._DELETES, n)
    try:
        yield
    finally:
        wal_capture.SPILL_BYTES = saved
        C.configure(wal_capture._PUTS, wal_capture._DELETES, saved)


class Side:
    """One implementation on its own environment."""

    def __init__(self, path: str, make: Callable[..., Any], map_size: int = 1 << 24) -> None:
        self.env = lmdb.open(path, max_dbs=4, map_size=map_size)
        self.dbs = {name: self.env.open_db(name) for name in NAMES}
        self.names = {db: name for name, db in self.dbs.items()}
        self.make = make
        self.replies: list[Any] = []
        self.pieces: list[bytes] = []  # spilled, then what commit takes
        self.committed: list[bytes] = []  # the pieces of the transactions committed

    def contents(self) -> dict[bytes, list[tuple[bytes, bytes]]]:
        with self.env.begin() as txn:
            return {name: list(txn.cursor(db=db)) for name, db in self.dbs.items()}

    def reset(self, initial: list[tuple[bytes, bytes, bytes]]) -> None:
        with self.env.begin(write=True) as txn:
            for db in self.dbs.values():
                txn.drop(db, delete=False)
            for name, key, value in initial:
                txn.put(key, value, db=self.dbs[name])

    def run(self, txn: Any, items: list[tuple[Any, ...]], buffers: bool) -> None:
        reply = self.replies.append
        for kind, *args in items:
            if kind == "nested":
                child = self.make(
                    self.env.begin(write=True, parent=txn.raw, buffers=buffers), self.names, txn
                )
                self.run(child, args[1], buffers)
                child.commit() if args[0] == "commit" else child.abort()
                continue
            db = self.dbs[args[0]]
            if kind in ("put", "put_new"):
                key, value, by_name = args[1:]
                extra = {"overwrite": False} if kind == "put_new" else {}
                if by_name:
                    reply(txn.put(key=key, value=value, db=db, **extra))
                else:
                    reply(txn.put(key, value, db=db, **extra))
            elif kind == "delete":
                reply(txn.delete(key=args[1], db=db) if args[2] else txn.delete(args[1], db=db))
            elif kind in ("cursor_put", "cursor_put_new"):
                key, value, by_name = args[1:]
                cur = txn.cursor(db=db)
                extra = {"overwrite": False} if kind == "cursor_put_new" else {}
                if by_name:
                    reply(cur.put(key=key, value=value, **extra))
                else:
                    reply(cur.put(key, value, **extra))
            elif kind == "cursor_delete":
                cur = txn.cursor(db)
                cur.set_range(args[1])  # past the last key: unpositioned, nothing deleted
                reply(cur.delete())
            elif kind == "putmulti":
                reply(txn.cursor(db).putmulti(iter(args[1])))
            else:
                reply(txn.drop(db, delete=False))

    def transaction(self, outcome: str, items: list[tuple[Any, ...]], buffers: bool) -> None:
        txn = self.make(self.env.begin(write=True, buffers=buffers), self.names)
        first = len(self.pieces)
        txn.spill = self.pieces.append
        self.run(txn, items, buffers)
        if outcome == "commit":
            self.pieces.append(txn.take())
            txn.commit()
            self.committed += self.pieces[first:]
        else:
            txn.abort()
            self.pieces.append(txn.take())  # nothing: an abort drops what was recorded


@pytest.fixture(scope="module")
def sides() -> Iterator[tuple[Side, Side]]:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        py, c = Side(a, wal_capture.LoggedTxn), Side(b, C.LoggedTxn)
        yield py, c
        py.env.close()
        c.env.close()


@settings(max_examples=150, deadline=None)
@given(
    initial=st.lists(st.tuples(st.sampled_from(NAMES), keys, values), max_size=8),
    txns=program,
    spill=st.sampled_from([0, 60, 200, 1 << 20]),
    buffers=st.booleans(),
)
def test_c_and_python_record_the_same_bytes_and_leave_the_same_databases(
    sides: tuple[Side, Side],
    initial: list[tuple[bytes, bytes, bytes]],
    txns: list[tuple[str, list[tuple[Any, ...]]]],
    spill: int,
    buffers: bool,
) -> None:
    py, c = sides
    with spill_at(spill):
        for side in sides:
            side.reset(initial)
            side.replies.clear()
            side.pieces.clear()
            side.committed.clear()
        for outcome, items in txns:
            for side in sides:
                side.transaction(outcome, items, buffers)
            assert c.pieces == py.pieces
            assert c.replies == py.replies
            assert c.contents() == py.contents()
    # what was recorded, redone on the state before, gives the state after (once spilled too)
    after = py.contents()
    py.reset(initial)
    with py.env.begin(write=True) as txn:
        wal_capture.redo(txn, py.dbs, wal_log.decode_ops(b"".join(c.committed)))
    assert py.contents() == after


@pytest.fixture(params=["python", "c"])
def side(request: Any, tmp_path: Any) -> Iterator[Side]:
    make = wal_capture.LoggedTxn if request.param == "python" else C.LoggedTxn
    s = Side(str(tmp_path), make, map_size=1 << 20)
    yield s
    s.env.close()


def _begin(side: Side, spill: Callable[[bytes], None] | None = None) -> Any:
    txn = side.make(side.env.begin(write=True), side.names)
    txn.spill = spill
    return txn


def test_a_put_lmdb_refuses_is_not_recorded(side: Side) -> None:
    txn = _begin(side)
    nodes = side.dbs[b"nodes"]
    assert txn.put(b"a", b"1", db=nodes)
    with pytest.raises(TypeError):
        txn.put(b"b", 12, db=nodes)  # not a buffer: LMDB's put raises
    with pytest.raises(lmdb.BadValsizeError):
        txn.put(b"", b"2", db=nodes)  # an empty key
    assert txn.put(b"c", b"3", db=nodes, overwrite=False)
    assert not txn.put(b"a", b"4", db=nodes, overwrite=False)  # there: not stored
    cur = txn.cursor(nodes)
    with pytest.raises(lmdb.BadValsizeError):
        cur.put(b"", b"5")
    assert not txn.delete(b"zz", db=nodes)  # not there: nothing deleted
    assert txn.ops == [(b"nodes", b"a", b"1"), (b"nodes", b"c", b"3")]
    txn.commit()
    assert side.contents()[b"nodes"] == [(b"a", b"1"), (b"c", b"3")]


def test_a_full_map_leaves_the_failed_put_unrecorded(side: Side) -> None:
    txn = _begin(side)
    stored = []
    with pytest.raises(lmdb.MapFullError):
        for i in range(1000):
            key, value = b"%04d" % i, bytes(3000)
            txn.put(key, value, db=side.dbs[b"groups"])
            stored.append((b"groups", key, value))
    assert 0 < len(stored) < 1000
    assert txn.ops == stored
    txn.abort()
    assert not txn.pending


def test_putmulti_records_the_pairs_lmdb_took_before_an_error(side: Side) -> None:
    txn = _begin(side)
    cur = txn.cursor(side.dbs[b"nodes"])
    with pytest.raises(lmdb.BadValsizeError):
        cur.putmulti([(b"a", b"1"), (bytearray(b"b"), memoryview(b"2")), (b"", b"x"), (b"d", b"")])
    with pytest.raises(TypeError):
        cur.putmulti([(b"e", b"5"), (b"f", "not bytes")])  # bytes() refuses a str
    assert txn.ops == [(b"nodes", b"a", b"1"), (b"nodes", b"b", b"2"), (b"nodes", b"e", b"5")]
    with txn.raw.cursor(db=side.dbs[b"nodes"]) as raw:
        assert list(raw) == [(b"a", b"1"), (b"b", b"2"), (b"e", b"5")]
    txn.abort()


@pytest.mark.parametrize(
    "kw", [{"overwrite": False}, {"overwrite": 0}, {"dupdata": True}, {"append": True}]
)
def test_putmulti_that_may_skip_pairs_is_refused(side: Side, kw: dict[str, Any]) -> None:
    txn = _begin(side)
    with pytest.raises(ValueError, match="not recorded"):
        txn.cursor(side.dbs[b"nodes"]).putmulti([(b"a", b"1")], **kw)
    assert not txn.pending
    assert txn.raw.get(b"a", db=side.dbs[b"nodes"]) is None  # LMDB was not asked either
    txn.abort()


def test_calls_that_would_go_unrecorded_are_refused(side: Side) -> None:
    txn = _begin(side)
    nodes = side.dbs[b"nodes"]
    for target in (txn, txn.cursor(nodes)):
        for name in ("replace", "pop"):
            with pytest.raises(AttributeError, match="not recorded"):
                getattr(target, name)
    with pytest.raises(ValueError, match="not recorded"):
        txn.drop(nodes)  # deleting the sub-database itself
    with pytest.raises(ValueError, match="not recorded"):
        txn.drop(nodes, delete=True)
    with pytest.raises(TypeError):
        txn.put(b"k", b"v")  # which sub-database: no default one
    assert not txn.pending
    txn.abort()


def test_reads_pass_through_to_lmdb(side: Side) -> None:
    txn = _begin(side)
    nodes = side.dbs[b"nodes"]
    txn.put(b"a", b"1", db=nodes)
    txn.put(b"b", b"2", db=nodes)
    assert txn.id() == txn.raw.id()
    assert txn.get(b"a", db=nodes) == b"1"
    assert txn.stat(nodes)["entries"] == 2
    cur = txn.cursor(db=nodes)
    assert cur.set_range(b"b") and cur.key() == b"b"
    assert list(cur) == [(b"b", b"2")]
    assert cur.raw.__class__ is lmdb.Cursor
    txn.abort()


def test_a_spill_that_raises_reaches_the_caller(side: Side) -> None:
    def spill(body: bytes) -> None:
        raise OSError("the log's disk is full")

    with spill_at(10):
        txn = _begin(side, spill)
        txn.delete(b"a", db=side.dbs[b"nodes"])  # a delete never spills
        with pytest.raises(OSError, match="disk is full"):
            txn.put(b"a", b"0123456789", db=side.dbs[b"nodes"])
    txn.abort()


def test_a_nested_commit_hands_its_changes_to_the_parent_and_an_abort_drops_them(
    side: Side,
) -> None:
    outer = _begin(side)
    nodes = side.dbs[b"nodes"]
    for value, end in ((b"1", "abort"), (b"2", "commit")):
        child = side.make(side.env.begin(write=True, parent=outer.raw), side.names, outer)
        child.put(b"k", value, db=nodes)
        child.commit() if end == "commit" else child.abort()
    assert outer.ops == [(b"nodes", b"k", b"2")]
    outer.commit()


def test_the_c_parent_must_be_a_c_transaction(tmp_path: Any) -> None:
    side = Side(str(tmp_path), wal_capture.LoggedTxn)
    outer = _begin(side)
    with pytest.raises(TypeError):
        C.LoggedTxn(side.env.begin(write=True, parent=outer.raw), side.names, outer)
    outer.abort()
    side.env.close()
