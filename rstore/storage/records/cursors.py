"""Placing an LMDB cursor on a stream's nodes (for
:meth:`rstore.storage.records.txn.Txn.iter_nodes`)."""

from __future__ import annotations

from typing import Any

__all__ = ["seek_node"]


def seek_node(cur: Any, prefix: bytes, start: bytes, *, reverse: bool) -> bool:
    """Put ``cur`` (on the ``nodes`` sub-database) on the node that may hold the entry of the
    node key ``start`` (whose first 8 bytes are the stream's ``prefix``): that node when its key
    is ``start``, else the last node before it -- or, going forward, the stream's first node
    when there is none before.  Whether the cursor is on a node of the stream."""
    positioned = cur.set_range(start)
    if positioned and cur.key()[:8] == prefix and cur.key() == start:
        return True
    if not positioned:  # past the end of the sub-database
        return bool(cur.last()) and cur.key()[:8] == prefix
    if cur.prev() and cur.key()[:8] == prefix:
        return True
    return not reverse and bool(cur.set_range(prefix)) and cur.key()[:8] == prefix
