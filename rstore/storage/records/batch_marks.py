"""The last batch number applied per name (``Store.append_entries(batch=...)``): one u64 record
``meta/batch:<name>`` each; and the bookmarks (``Store.append_entries(bookmark=...)``): one
record of raw bytes ``meta/checkpoint:<name>`` each (docs/format.md#meta)."""

from __future__ import annotations

from rstore.storage.records import layout
from rstore.storage.records.txn import Txn

__all__ = ["batch_get", "batch_put", "bookmark_get", "bookmark_put"]


def batch_get(txn: Txn, name: bytes) -> int | None:
    """The last batch number recorded under ``name``, or ``None``."""
    key = layout.META_BATCH_PREFIX + name
    raw = txn.get(layout.DB_META, key)
    return None if raw is None else txn.decode(layout.DB_META, key, layout.unpack_u64, raw)


def batch_put(txn: Txn, name: bytes, number: int) -> None:
    txn.put(layout.DB_META, layout.META_BATCH_PREFIX + name, layout.pack_u64(number))


def bookmark_get(txn: Txn, name: bytes) -> bytes | None:
    """The value recorded under bookmark ``name``, or ``None``."""
    raw = txn.get(layout.DB_META, layout.META_BOOKMARK_PREFIX + name)
    return None if raw is None else bytes(raw)


def bookmark_put(txn: Txn, name: bytes, value: bytes) -> None:
    txn.put(layout.DB_META, layout.META_BOOKMARK_PREFIX + name, value)
