"""Where the log's next record goes, as LMDB holds it: the ``wal`` record of the store's ``meta``
sub-database (generation, offset, next sequence number, checksum of the last record).

A writer reads it in its write transaction and moves it past its record in the same
transaction, so the position always belongs to a *committed* LMDB state: a record whose
transaction did not commit is overwritten by the next writer (docs/durability.md, "Records").
"""

from __future__ import annotations

import struct
from typing import Any

from rstore.errors import StorageError
from rstore.storage.engine.wal_log import Position
from rstore.storage.records import layout

__all__ = ["META_WAL", "committed", "read", "read_of", "write"]

META_WAL = b"wal"
_POSITION = struct.Struct("<QQQI")


def read(raw: Any, meta_db: Any) -> Position:
    """The log position recorded in LMDB (sealed like every record of format 2 and later)."""
    value = raw.get(META_WAL, db=meta_db)
    return _decoded(None if value is None else layout.unseal(META_WAL, value))


def _decoded(payload: bytes | None) -> Position:
    if payload is None or len(payload) != _POSITION.size:
        raise StorageError("the store has a write-ahead log but no valid log position")
    return Position(*_POSITION.unpack(payload))


def committed(lmdb_env: Any, dbs: dict[bytes, Any]) -> Position:
    """The log position of the last commit, read in a read transaction of py-lmdb's
    environment ``lmdb_env`` (at open, before an :class:`Env` exists)."""
    with lmdb_env.begin() as raw:
        return read(raw, dbs[layout.DB_META])


def read_of(env: Any) -> Position:
    """The log position of the last commit of ``env`` (an :class:`Env`; tests, diagnostics)."""
    return env.read(lambda txn: _decoded(txn.get(layout.DB_META, META_WAL)))  # type: ignore[no-any-return]


def write(raw: Any, meta_db: Any, position: Position) -> None:
    raw.put(META_WAL, layout.seal(META_WAL, _POSITION.pack(*position)), db=meta_db)
