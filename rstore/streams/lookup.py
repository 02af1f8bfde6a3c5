"""Fetching single entries by ID, decoding each node at most once per lookup object.

Claims and history reads ask for many IDs in ascending order, most of them in the same node;
decoding that node once and answering from a dict keeps them linear.
"""

from __future__ import annotations

from rstore.codec import stream_node as sn
from rstore.ids import ID, MAX_ID, MIN_ID
from rstore.model import Entry
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = ["EntryLookup"]


class EntryLookup:
    """Answers "is this entry live, and what are its fields?" for one stream in one transaction."""

    def __init__(self, txn: Txn, stream: StreamRef) -> None:
        self._txn = txn
        self._handle = stream.handle
        self._master: ID | None = None
        self._entries: dict[ID, list[bytes]] = {}
        self._last: ID = MIN_ID

    def get(self, entry_id: ID) -> list[bytes] | None:
        """The entry's fields and values, or ``None`` when it does not exist (or was deleted)."""
        if self._master is not None and self._master <= entry_id:
            found = self._entries.get(entry_id)
            if found is not None or entry_id <= self._last:
                return found
        for master_id, node in self._txn.iter_nodes(self._handle, entry_id):
            if master_id > entry_id:
                return None
            decoded: list[Entry] = []
            sn.scan_forward(node, master_id, MIN_ID, MAX_ID, 0, decoded)
            self._master = master_id
            self._entries = dict(decoded)
            self._last = sn.last_entry_id(node, master_id)
            return self._entries.get(entry_id)
        return None

    def exists(self, entry_id: ID) -> bool:
        return self.get(entry_id) is not None
