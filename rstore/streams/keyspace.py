"""The keyspace: finding, creating and deleting keys, and the generic key commands.

rstore stores streams only, so every existing key is a stream; the WRONGTYPE path is kept for
the record types a later format may add.
"""

from __future__ import annotations

from dataclasses import dataclass

from rstore import glob, messages
from rstore.storage.records import group_records as storage_groups
from rstore.storage.records import idmp_records
from rstore.storage.records.layout import (
    DEFAULT_IDMP_DURATION,
    DEFAULT_IDMP_MAXSIZE,
    TYPE_NAMES,
    TYPE_STREAM,
    KeyRecord,
    StreamMeta,
)
from rstore.storage.records.txn import Txn

__all__ = [
    "StreamRef",
    "bind_stream",
    "create_stream",
    "dbsize",
    "delete_keys",
    "discard_stream",
    "exists",
    "flushall",
    "key_type",
    "keys",
    "lookup_stream",
    "new_unbound_stream",
    "rename_key",
    "scan",
]


@dataclass
class StreamRef:
    """A stream found in a transaction: its handle and (cached, mutable) metadata."""

    handle: int
    meta: StreamMeta


def lookup_stream(txn: Txn, name: bytes) -> StreamRef | None:
    """The stream at ``name``; ``None`` if the key is missing; WRONGTYPE for another type."""
    rec = txn.key_get(name)
    if rec is None:
        return None
    if rec.type != TYPE_STREAM:
        raise messages.error(messages.WRONGTYPE)
    return StreamRef(rec.handle, txn.stream_get(rec.handle))


def create_stream(txn: Txn, name: bytes) -> StreamRef:
    """Create an empty stream at ``name`` (which must not exist)."""
    handle = txn.new_handle()
    txn.key_put(name, KeyRecord(TYPE_STREAM, handle))
    meta = StreamMeta()
    txn.stream_put(handle, meta)
    _keep_idmp_settings(txn, handle)
    return StreamRef(handle, meta)


def _keep_idmp_settings(txn: Txn, handle: int) -> None:
    """A new stream takes the store's ``stream-idmp-*`` settings of now, as Redis's streams
    take the server's when created (with the defaults nothing need be written)."""
    config = txn.config()
    if (config.idmp_duration, config.idmp_maxsize) != (DEFAULT_IDMP_DURATION, DEFAULT_IDMP_MAXSIZE):
        state = idmp_records.IdmpState(config.idmp_duration, config.idmp_maxsize)
        idmp_records.state_put(txn, handle, state)


def new_unbound_stream(txn: Txn) -> StreamRef:
    """An empty stream under a fresh handle that no key names yet (see :func:`bind_stream`)."""
    handle = txn.new_handle()
    meta = StreamMeta()
    txn.stream_put(handle, meta)
    _keep_idmp_settings(txn, handle)
    return StreamRef(handle, meta)


def bind_stream(txn: Txn, name: bytes, stream: StreamRef) -> None:
    """Make key ``name`` (which must not exist) name ``stream``."""
    txn.key_put(name, KeyRecord(TYPE_STREAM, stream.handle))


def discard_stream(txn: Txn, handle: int) -> None:
    """Remove everything stored under a stream handle (nodes, metadata, groups, what idempotent
    production remembers)."""
    storage_groups.groups_delete_all(txn, handle)
    idmp_records.delete_all(txn, handle)
    txn.stream_delete(handle)


def _delete(txn: Txn, name: bytes, rec: KeyRecord) -> None:
    discard_stream(txn, rec.handle)
    txn.key_delete(name)


def delete_keys(txn: Txn, names: list[bytes]) -> int:
    """DEL: remove the keys that exist; the number removed."""
    removed = 0
    for name in names:
        rec = txn.key_get(name)
        if rec is not None:
            _delete(txn, name, rec)
            removed += 1
    return removed


def rename_key(txn: Txn, source: bytes, target: bytes, *, only_new: bool = False) -> bool:
    """RENAME / RENAMENX: the key ``source`` (its stream, groups and all) becomes ``target``;
    an existing ``target`` is deleted first (RENAME) or left, refusing (RENAMENX: ``False``).
    ``ERR no such key`` when ``source`` does not exist."""
    rec = txn.key_get(source)
    if rec is None:
        raise messages.error(messages.NO_SUCH_KEY)
    if source == target:
        return not only_new
    existing = txn.key_get(target)
    if existing is not None:
        if only_new:
            return False
        _delete(txn, target, existing)
    txn.key_delete(source)
    txn.key_put(target, rec)
    return True


def exists(txn: Txn, names: list[bytes]) -> int:
    """EXISTS: how many of ``names`` exist (a name given twice counts twice)."""
    return sum(1 for name in names if txn.key_get(name) is not None)


def key_type(txn: Txn, name: bytes) -> str:
    """TYPE: ``"stream"`` or ``"none"``."""
    rec = txn.key_get(name)
    return "none" if rec is None else TYPE_NAMES.get(rec.type, "none")


def dbsize(txn: Txn) -> int:
    return txn.key_count()


def flushall(txn: Txn) -> None:
    txn.drop_all_data()
    idmp_records.delete_everything(txn)


def _matches(pattern: bytes | None, name: bytes) -> bool:
    return pattern is None or pattern == b"*" or glob.match(pattern, name)


def keys(txn: Txn, pattern: bytes) -> list[bytes]:
    """KEYS: every key matching the glob ``pattern`` (in rstore's hash order)."""
    return [name for _, name, _ in txn.iter_keys() if _matches(pattern, name)]


def scan(
    txn: Txn,
    cursor: int,
    count: int,
    pattern: bytes | None = None,
    type_name: str | None = None,
) -> tuple[int, list[bytes]]:
    """SCAN: visit about ``count`` keys from ``cursor``; ``(next cursor, matching names)``.

    The cursor is the 64-bit hash that orders the keyspace, so it needs no server-side state:
    keys present during the whole iteration are returned exactly once, and keys sharing a hash
    are always returned by the same call.  A next cursor of 0 ends the iteration.
    """
    found: list[bytes] = []
    visited = 0
    last_hash = -1
    for h, name, rec in txn.iter_keys(cursor):
        if visited >= count and h != last_hash:
            return h, found
        visited += 1
        last_hash = h
        if type_name is not None and TYPE_NAMES.get(rec.type) != type_name:
            continue
        if _matches(pattern, name):
            found.append(name)
    return 0, found
