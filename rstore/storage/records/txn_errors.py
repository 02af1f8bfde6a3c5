"""The errors a transaction raises for damaged records.

A damaged record is named by its sub-database and, where the transaction can tell, its stream
(and for a group's records, the group and the consumer or entry its key holds); records that
disagree are named as such.  :class:`~rstore.storage.records.txn.Txn`'s ``corrupt`` and
``inconsistent`` build them here.  Errors only: nothing here runs on the path of a sound read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rstore.errors import CorruptStoreError
from rstore.storage.records import layout

if TYPE_CHECKING:
    from rstore.storage.records.txn import Txn

__all__ = ["corrupt", "inconsistent"]


def corrupt(
    txn: Txn, names: dict[int, bytes], path: str, db: bytes, key: bytes, what: str
) -> CorruptStoreError:
    """The error for a damaged record of ``db`` at ``key`` read in ``txn``, naming its stream
    if known (``names``: stream handle -> key name, as far as the transaction has seen;
    ``path``: the data file)."""
    stream = None
    if db == layout.DB_KEYS and len(key) > 8:
        stream = key[8:]
    elif db in (layout.DB_STREAMS, layout.DB_NODES, layout.DB_GROUPS) and len(key) >= 8:
        stream = names.get(layout.unpack_u64(key[:8]))
    elif db in (layout.DB_CONSUMERS, layout.DB_PEL, layout.DB_CONSUMER_PEL):
        from rstore.storage.records.group_records import whose  # noqa: PLC0415 - it imports txn

        stream, what = whose(txn, db, key, what)
    if stream is None:
        what = f"{what} (record key {key.hex()})"
    return CorruptStoreError(
        what, path=path, db=db.decode(), key=stream,
        hint="nothing was read from it; `rstore check` lists every damaged place",
    )  # fmt: skip


def inconsistent(path: str, db: bytes, what: str, stream: bytes | None = None) -> CorruptStoreError:
    """The error for records that disagree (each one sound on its own): a counter, an index
    or a reference naming what is not there -- damage a checksum cannot see, such as a record
    whose key was damaged, found missing by a lookup."""
    return CorruptStoreError(
        f"the store's records disagree: {what}", path=path, db=db.decode(), key=stream,
        hint="nothing was changed; `rstore check` lists every damaged place",
    )  # fmt: skip
