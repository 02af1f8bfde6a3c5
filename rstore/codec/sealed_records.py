"""A key range of the store's records, handed to the RDB writer as they sit in the store.

:class:`SealedRecords` is what :mod:`rstore.storage.records.bulk_read` gives the writer for a
stream's
nodes, a group's pending entries and a consumer's PEL IDs.  Iterating it gives model records
(:class:`~rstore.model.StreamNode`, :class:`~rstore.model.PendingEntry`, IDs) read one by one
through the store's checked reads: the reference path, and the only one without the C
extension.  :meth:`SealedRecords.raw` gives the same range as LMDB hands it over -- ``(key,
value)`` buffers, each value sealed with its CRC-32 (``docs/format.md``) and valid only inside
the read transaction -- for ``_rdbpack.pack_sealed``, which verifies each seal and packs the
RDB records in C.  When the C side finds a record it does not pack (a failed checksum, a
malformed record), :meth:`SealedRecords.problem` reads that record through the checked path
and gives the error the reference path raises there.

Pure: no lmdb here; the store supplies the callables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["IDS", "NODES", "PENDING", "SealedRecords"]

T = TypeVar("T")

#: What the records are (``pack_sealed``'s kinds).
NODES, PENDING, IDS = 0, 1, 2


class SealedRecords(Generic[T]):
    """The records of one key range: ``kind`` (:data:`NODES`, :data:`PENDING`, :data:`IDS`),
    the key ``prefix`` every record of the range starts with (an ID follows it)."""

    __slots__ = ("_each", "_problem", "_raw", "kind", "prefix")

    def __init__(
        self,
        kind: int,
        prefix: bytes,
        raw: Callable[[], Iterator[tuple[object, object]]],
        each: Callable[[], Iterator[T]],
        problem: Callable[[bytes], Exception],
    ) -> None:
        self.kind = kind
        self.prefix = prefix
        self._raw = raw
        self._each = each
        self._problem = problem

    def __iter__(self) -> Iterator[T]:
        """The records as model values, each read and checked by the store."""
        return self._each()

    def raw(self) -> Iterator[tuple[object, object]]:
        """``(key, sealed value)`` buffers from the first key of the range on; the iterator
        runs past the range's end (the caller stops at the first key outside ``prefix``)."""
        return self._raw()

    def problem(self, key: bytes) -> Exception:
        """The error for the record at ``key`` that the C packer would not pack."""
        return self._problem(key)
