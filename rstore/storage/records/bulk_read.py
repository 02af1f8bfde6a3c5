"""A stream's records as they sit in the store, for saving (``Store.save``, DUMP).

:func:`nodes`, :func:`pending` and :func:`owned_ids` return a
:class:`~rstore.codec.sealed_records.SealedRecords`: iterated, it reads the records one by
one through the checked reads of :class:`~rstore.storage.records.txn.Txn` and
:mod:`~rstore.storage.records.group_records` (the reference); its ``raw()`` hands LMDB's ``(key,
value)`` views of the same key range to the C packer, which verifies each record's seal
itself.  A record the packer stops at is read again through the checked path, so a damaged
record raises the same :class:`~rstore.errors.CorruptStoreError` (sub-database, stream) either
way.  A format 1 store (no seals) gets the plain readers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from rstore.codec.sealed_records import IDS, NODES, PENDING, SealedRecords
from rstore.model import ID, PendingEntry, StreamNode
from rstore.storage.records import group_records, layout
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn

__all__ = ["nodes", "owned_ids", "pending"]

T = TypeVar("T")


def nodes(txn: Txn, handle: int) -> Iterable[StreamNode]:
    """The stream's nodes, ascending."""

    def each() -> Iterator[StreamNode]:
        return (StreamNode(mid, node) for mid, node in txn.iter_nodes(handle))

    return _sealed(txn, NODES, layout.DB_NODES, layout.pack_u64(handle), each, None)


def pending(txn: Txn, group: GroupMeta) -> Iterable[PendingEntry]:
    """The group's pending entries, ascending (without their owners)."""

    def each() -> Iterator[PendingEntry]:
        entries = group_records.pel_entries(txn, group)
        return (PendingEntry(eid, t, n) for eid, (t, n, _) in entries)

    prefix = layout.pack_u64(group.handle)
    return _sealed(txn, PENDING, layout.DB_PEL, prefix, each, layout.unpack_nack)


def owned_ids(txn: Txn, group: GroupMeta, consumer: bytes) -> Iterable[ID]:
    """The IDs ``consumer`` owns, ascending."""

    def each() -> Iterator[ID]:
        return group_records.consumer_pel_ids(txn, group, consumer)

    prefix = layout.consumer_pel_prefix(group.handle, consumer)
    return _sealed(txn, IDS, layout.DB_CONSUMER_PEL, prefix, each, None)


def _sealed(
    txn: Txn,
    kind: int,
    db: bytes,
    prefix: bytes,
    each: Callable[[], Iterator[T]],
    decode: Callable[[bytes], object] | None,
) -> Iterable[T]:
    if not txn.sealed:
        return _Lazy(each)

    def raw() -> Iterator[tuple[object, object]]:
        cur = txn.cursor(db)
        return cur.iternext() if cur.set_range(prefix) else iter(())

    def problem(key: bytes) -> Exception:
        payload = txn.get(db, key)  # a failed checksum raises here, as the reference path does
        if payload is not None and decode is not None:
            txn.decode(db, key, decode, payload)
        return txn.corrupt(db, key, "malformed record")

    return SealedRecords(kind, prefix, raw, each, problem)


class _Lazy(Generic[T]):
    """Records read when iterated, each time afresh."""

    __slots__ = ("_each",)

    def __init__(self, each: Callable[[], Iterator[T]]) -> None:
        self._each = each

    def __iter__(self) -> Iterator[T]:
        return self._each()
