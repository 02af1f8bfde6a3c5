"""A read snapshot of a store for code that plans and reads large parts of it (Spark, exports,
replay): stream names, states and node indexes, and the raw nodes of a range -- all from one
LMDB read transaction, so that they agree with each other.

Obtained with :meth:`rstore.Store.view`, valid only inside the function given to it::

    def plan(view):
        return {key: view.node_index(key) for key in view.keys(b"events:*")}

    index = store.view(plan)

Decode nodes with :func:`rstore.iter_columns` (columns) or keep them as bytes: a node is a
Redis listpack (``docs/listpack.md``).  Copy out what the plan needs and let the function
return: a read transaction held open keeps the pages it sees from being reused, so a long one
makes the store file grow under writers.
"""

from __future__ import annotations

from collections.abc import Iterator

from rstore import glob
from rstore.codec import stream_node as sn
from rstore.errors import RStoreError
from rstore.ids import MAX_ID, MIN_ID
from rstore.model import ID, NodeSpan, StreamState
from rstore.storage.records.txn import Txn
from rstore.streams.dump import stream_keys
from rstore.streams.keyspace import StreamRef, lookup_stream

__all__ = ["StoreView"]


class StoreView:
    """One consistent read snapshot of a store (see the module docstring).  Keys are bytes;
    IDs are ``(ms, seq)`` tuples."""

    def __init__(self, txn: Txn) -> None:
        self._txn: Txn | None = txn

    def _live(self) -> Txn:
        if self._txn is None:
            raise RStoreError(
                "this StoreView was used after the function given to Store.view returned"
            )
        return self._txn

    def _close(self) -> None:
        self._txn = None

    def _stream(self, key: bytes) -> StreamRef | None:
        return lookup_stream(self._live(), key)

    def keys(self, pattern: bytes | None = None) -> list[bytes]:
        """The names of every stream, sorted; only those matching the glob-style ``pattern``
        (KEYS's syntax) when given."""
        names = [name for name, _ in stream_keys(self._live())]
        if pattern is not None:
            names = [name for name in names if glob.match(pattern, name)]
        return sorted(names)

    def state(self, key: bytes) -> StreamState | None:
        """The stream's state (length, last ID, first ID, max deleted ID, entries added, group
        count), ``None`` if there is no such key; a WRONGTYPE error for a key of another type."""
        stream = self._stream(key)
        return None if stream is None else stream.meta.state()

    def _walk(self, key: bytes, start: ID, end: ID) -> Iterator[tuple[ID, bytes]]:
        txn = self._live()
        stream = lookup_stream(txn, key)
        if stream is None or start > end:
            return
        for master_id, node in txn.iter_nodes(stream.handle, start):
            if master_id > end:
                return
            if master_id < start and sn.last_entry_id(node, master_id) < start:
                continue  # the node before the range holds nothing of it
            yield master_id, node

    def nodes(self, key: bytes, start: ID = MIN_ID, end: ID = MAX_ID) -> Iterator[tuple[ID, bytes]]:
        """The stream's nodes that may hold entries with ``start <= id <= end``, in ascending
        order, as ``(master_id, listpack)`` (copies, valid after the view ends).  Nothing for a
        missing key."""
        for master_id, node in self._walk(key, start, end):
            yield master_id, bytes(node)

    def node_index(self, key: bytes, start: ID = MIN_ID, end: ID = MAX_ID) -> list[NodeSpan]:
        """Master ID and live entries of every node :meth:`nodes` would give, to plan reads
        that split a stream at node boundaries."""
        return [
            NodeSpan(master_id, sn.node_counts(node)[0])
            for master_id, node in self._walk(key, start, end)
        ]
