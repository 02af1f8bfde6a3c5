"""Collecting what a write transaction changes, for the write-ahead log, and redoing it.

:class:`LoggedTxn` stands in for a py-lmdb write transaction: every change made through it, or
through its cursors, is forwarded to LMDB and recorded as an
:class:`~rstore.storage.engine.wal_log.Op`
(sub-database name, key, the bytes stored or ``None`` for a delete; an empty sub-database name
never occurs, so a whole sub-database emptied is recorded as a delete with an empty key and the
``CLEAR`` marker value).  A nested transaction records into its own list, handed to its
parent when it commits and dropped when it aborts, so the list of the outermost transaction is
exactly what its commit stores.  :func:`redo` applies such a list to another transaction:
after-images in order, so applying them again onto a later state gives the same result.

Reads pass straight through (``__getattr__``); only the write calls rstore uses are wrapped,
and a write call that is not wrapped raises instead of going unrecorded.

``rstore/storage/engine/_capture.c`` (optional, like the codecs' accelerators) holds the same two
classes in C: the same calls to py-lmdb, the same bytes appended to one growing buffer, the
same spills.  :func:`new_txn` builds the C one when it is built and ``RSTORE_NO_SPEEDUPS`` is
not set; the classes here are the reference and the fallback
(``tests/storage/test_wal_capture_c.py`` drives both through the same random transactions).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from rstore.storage.engine import wal_log
from rstore.storage.engine.wal_log import Op
from rstore.storage.records import layout

__all__ = ["CLEAR", "ENABLED", "SPILL_BYTES", "LoggedCursor", "LoggedTxn", "new_txn", "redo"]

#: The key of the operation that empties a whole sub-database (``value`` is ``None``).
CLEAR = b""
#: An outermost transaction hands its recorded changes to the log in pieces of about this size.
SPILL_BYTES = 256 << 10

_U32 = struct.Struct("<I").pack
# The first bytes of an operation on each sub-database rstore has (wal_log.op_prefix).
_PUTS = {name: wal_log.op_prefix(wal_log.PUT, name) for name in layout.ALL_DBS}
_DELETES = {name: wal_log.op_prefix(wal_log.DELETE, name) for name in layout.ALL_DBS}

_UNWRAPPED = frozenset({"replace", "pop"})


class LoggedTxn:
    """A write transaction whose changes are recorded, encoded as the log stores them, in
    :attr:`parts` (:attr:`ops` decodes them).

    ``spill``: for an outermost transaction, called with the encoded operations recorded so
    far whenever they pass :data:`SPILL_BYTES` (the log writes them at once), so that a large
    transaction never holds its whole write set in memory."""

    __slots__ = ("_names", "_parent", "_size", "get", "id", "parts", "raw", "spill")

    def __init__(
        self,
        raw: Any,
        names: Mapping[Any, bytes],
        parent: LoggedTxn | None = None,
        spill: Callable[[bytes], None] | None = None,
    ) -> None:
        self.raw = raw
        self.get = raw.get  # the hot reads, bound once (the rest goes through __getattr__)
        self.id = raw.id
        self._names = names  # sub-database handle -> name
        self._parent = parent
        self.spill = spill
        self.parts: list[bytes] = []
        self._size = 0

    def __getattr__(self, name: str) -> Any:
        if name in _UNWRAPPED:
            raise AttributeError(f"{name}() is not recorded for the write-ahead log")
        return getattr(self.raw, name)

    @property
    def ops(self) -> list[Op]:
        return wal_log.decode_ops(b"".join(self.parts))

    @property
    def pending(self) -> bool:
        """Whether :meth:`take` has recorded operations to return."""
        return bool(self.parts)

    def take(self) -> bytes:
        """The encoded operations recorded so far, removed."""
        body = b"".join(self.parts)
        self.parts.clear()
        self._size = 0
        return body

    def record_put(self, db: Any, key: bytes, value: bytes) -> None:
        self.parts += (_PUTS[self._names[db]], _U32(len(key)), key, _U32(len(value)), value)
        self._size += len(key) + len(value) + 32
        if self._size > SPILL_BYTES and self.spill is not None:
            self.spill(self.take())

    def record_delete(self, db: Any, key: bytes) -> None:
        self.parts += (_DELETES[self._names[db]], _U32(len(key)), key)
        self._size += len(key) + 32

    def put(self, key: bytes, value: bytes, *, db: Any, **kw: Any) -> bool:
        if not self.raw.put(key, value, db=db, **kw):
            return False
        key, value = bytes(key), bytes(value)  # record_put, inlined: the path of every write
        self.parts += (_PUTS[self._names[db]], _U32(len(key)), key, _U32(len(value)), value)
        self._size += len(key) + len(value) + 32
        if self._size > SPILL_BYTES and self.spill is not None:
            self.spill(self.take())
        return True

    def delete(self, key: bytes, *, db: Any) -> bool:
        found = bool(self.raw.delete(key, db=db))
        if found:
            self.record_delete(db, bytes(key))
        return found

    def drop(self, db: Any, delete: bool = True) -> None:
        if delete:
            raise ValueError("deleting a sub-database is not recorded for the write-ahead log")
        self.raw.drop(db, delete=False)
        self.record_delete(db, CLEAR)

    def cursor(self, db: Any) -> LoggedCursor:
        return LoggedCursor(self.raw.cursor(db=db), db, self)

    def commit(self) -> None:
        self.raw.commit()
        parent = self._parent
        if parent is not None and self.parts:
            parent.parts += self.parts
            parent._size += self._size
            if parent._size > SPILL_BYTES and parent.spill is not None:
                parent.spill(parent.take())

    def abort(self) -> None:
        self.raw.abort()
        self.parts = []
        self._size = 0


class LoggedCursor:
    """A cursor of a :class:`LoggedTxn`: its changes are recorded by the transaction."""

    __slots__ = ("_db", "_txn", "raw")

    def __init__(self, raw: Any, db: Any, txn: LoggedTxn) -> None:
        self.raw = raw
        self._db = db  # the sub-database's handle
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
            self._txn.record_put(self._db, bytes(key), bytes(value))
        return done

    def delete(self) -> bool:
        key = bytes(self.raw.key())
        found = bool(self.raw.delete())
        if found:
            self._txn.record_delete(self._db, key)
        return found

    def putmulti(self, items: Iterable[tuple[bytes, bytes]], **kw: Any) -> tuple[int, int]:
        # LMDB counts a pair it skipped (not overwritten, or out of order) as consumed
        if not kw.get("overwrite", True) or kw.get("dupdata") or kw.get("append"):
            raise ValueError(
                "putmulti without overwrite, or with dupdata or append, is not recorded for the "
                "write-ahead log"
            )
        given = 0
        txn, db = self._txn, self._db

        def passing() -> Iterator[tuple[bytes, bytes]]:  # each pair recorded once LMDB took it
            nonlocal given
            for k, v in items:
                key, value = bytes(k), bytes(v)
                given += 1
                yield key, value
                txn.record_put(db, key, value)

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


#: ``new_txn(raw, names, parent=None, spill=None)``: a :class:`LoggedTxn`, in C when built.
new_txn: Callable[..., LoggedTxn] = LoggedTxn

if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    try:
        from rstore.storage.engine import _capture as _c  # type: ignore[attr-defined]
    except ImportError:  # not built: changes are recorded in Python
        _c: Any = None  # type: ignore[no-redef]
    if _c is not None:
        _c.configure(_PUTS, _DELETES, SPILL_BYTES)
        new_txn = _c.LoggedTxn

#: Whether the C capture is in use.
ENABLED = new_txn is not LoggedTxn
