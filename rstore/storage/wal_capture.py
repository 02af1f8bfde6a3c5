"""Collecting what a write transaction changes, for the write-ahead log, and redoing it.

:class:`LoggedTxn` stands in for a py-lmdb write transaction: every change made through it, or
through its cursors, is forwarded to LMDB and recorded as an :class:`~rstore.storage.wal_log.Op`
(sub-database name, key, the bytes stored or ``None`` for a delete; an empty sub-database name
never occurs, so a whole sub-database emptied is recorded as a delete with an empty key and the
``CLEAR`` marker value).  A nested transaction records into its own list, handed to its
parent when it commits and dropped when it aborts, so the list of the outermost transaction is
exactly what its commit stores.  :func:`redo` applies such a list to another transaction:
after-images in order, so applying them again onto a later state gives the same result.

Reads pass straight through (``__getattr__``); only the write calls rstore uses are wrapped,
and a write call that is not wrapped raises instead of going unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from rstore.storage.wal_log import Op

__all__ = ["CLEAR", "SPILL_BYTES", "LoggedCursor", "LoggedTxn", "redo"]

#: The key of the operation that empties a whole sub-database (``value`` is ``None``).
CLEAR = b""
#: An outermost transaction hands its recorded changes to the log in pieces of about this size.
SPILL_BYTES = 256 << 10

_UNWRAPPED = frozenset({"replace", "pop"})


class LoggedTxn:
    """A write transaction whose changes are recorded in :attr:`ops`.

    ``spill``: for an outermost transaction, called with the operations recorded so far
    whenever they pass :data:`SPILL_BYTES` (the log writes them at once), so that a large
    transaction never holds its whole write set in memory."""

    __slots__ = ("_names", "_parent", "_size", "get", "id", "ops", "raw", "spill")

    def __init__(
        self,
        raw: Any,
        names: Mapping[Any, bytes],
        parent: LoggedTxn | None = None,
        spill: Callable[[list[Op]], None] | None = None,
    ) -> None:
        self.raw = raw
        self.get = raw.get  # the hot reads, bound once (the rest goes through __getattr__)
        self.id = raw.id
        self._names = names  # sub-database handle -> name
        self._parent = parent
        self.spill = spill
        self.ops: list[Op] = []
        self._size = 0

    def __getattr__(self, name: str) -> Any:
        if name in _UNWRAPPED:
            raise AttributeError(f"{name}() is not recorded for the write-ahead log")
        return getattr(self.raw, name)

    def record(self, op: Op) -> None:
        self.ops.append(op)
        self._size += len(op.key) + (0 if op.value is None else len(op.value)) + 16
        if self._size > SPILL_BYTES and self.spill is not None:
            self.spill(self.ops)
            self.ops.clear()
            self._size = 0

    def put(self, key: bytes, value: bytes, *, db: Any, **kw: Any) -> bool:
        done = bool(self.raw.put(key, value, db=db, **kw))
        if done:
            self.record(Op(self._names[db], bytes(key), bytes(value)))
        return done

    def delete(self, key: bytes, *, db: Any) -> bool:
        found = bool(self.raw.delete(key, db=db))
        if found:
            self.record(Op(self._names[db], bytes(key), None))
        return found

    def drop(self, db: Any, delete: bool = True) -> None:
        if delete:
            raise ValueError("deleting a sub-database is not recorded for the write-ahead log")
        self.raw.drop(db, delete=False)
        self.record(Op(self._names[db], CLEAR, None))

    def cursor(self, db: Any) -> LoggedCursor:
        return LoggedCursor(self.raw.cursor(db=db), self._names[db], self)

    def commit(self) -> None:
        self.raw.commit()
        if self._parent is not None:
            for op in self.ops:
                self._parent.record(op)

    def abort(self) -> None:
        self.raw.abort()
        self.ops = []


class LoggedCursor:
    """A cursor of a :class:`LoggedTxn`: its changes are recorded by the transaction."""

    __slots__ = ("_db", "_txn", "raw")

    def __init__(self, raw: Any, db: bytes, txn: LoggedTxn) -> None:
        self.raw = raw
        self._db = db
        self._txn = txn

    def __getattr__(self, name: str) -> Any:
        if name in _UNWRAPPED:
            raise AttributeError(f"{name}() is not recorded for the write-ahead log")
        return getattr(self.raw, name)

    def __iter__(self) -> Any:
        return iter(self.raw)

    def put(self, key: bytes, value: bytes, **kw: Any) -> bool:
        done = bool(self.raw.put(key, value, **kw))
        if done:
            self._txn.record(Op(self._db, bytes(key), bytes(value)))
        return done

    def delete(self) -> bool:
        key = bytes(self.raw.key())
        found = bool(self.raw.delete())
        if found:
            self._txn.record(Op(self._db, key, None))
        return found

    def putmulti(self, items: Iterable[tuple[bytes, bytes]], **kw: Any) -> tuple[int, int]:
        if kw.get("overwrite", True) is False or kw.get("dupdata"):
            raise ValueError("putmulti without overwrite is not recorded for the write-ahead log")
        given = 0

        def passing() -> Iterator[tuple[bytes, bytes]]:  # each pair recorded once LMDB took it
            nonlocal given
            for k, v in items:
                key, value = bytes(k), bytes(v)
                given += 1
                yield key, value
                self._txn.record(Op(self._db, key, value))

        consumed, added = self.raw.putmulti(passing(), **kw)
        if consumed != given:
            raise RuntimeError("putmulti stopped early; the transaction must be aborted")
        return consumed, added


def redo(raw: Any, handles: Mapping[bytes, Any], ops: Iterable[Op]) -> None:
    """Apply ``ops`` to the write transaction ``raw`` (sub-database name -> handle)."""
    for db, key, value in ops:
        handle = handles[db]
        if value is not None:
            raw.put(key, value, db=handle)
        elif key == CLEAR:
            raw.drop(handle, delete=False)
        else:
            raw.delete(key, db=handle)
