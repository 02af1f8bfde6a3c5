"""XDEL: tombstone entries in place, as Redis's ``streamDeleteItem``.

The entry's flags get the DELETED bit and the node's counters move; when the node loses its
last live entry the whole node (tombstones included) is removed.  ``max_deleted_entry_id``
rises to the largest deleted ID; ``first_id`` is recomputed when the first entry goes.
"""

from __future__ import annotations

from rstore.codec import stream_node as sn
from rstore.ids import ID
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef
from rstore.streams.trim import refresh_first_id

__all__ = ["delete_entries"]


def delete_entries(txn: Txn, stream: StreamRef, ids: list[ID]) -> int:
    """Delete ``ids`` (missing or already deleted ones count 0); the number deleted."""
    meta = stream.meta
    deleted = 0
    first_deleted = False
    for entry_id in ids:
        if not _delete_one(txn, stream, entry_id):
            continue
        deleted += 1
        if entry_id == meta.first_id:
            first_deleted = True
        meta.max_deleted_entry_id = max(meta.max_deleted_entry_id, entry_id)
    if deleted:
        if meta.length == 0:
            meta.first_id = (0, 0)
        elif first_deleted:
            refresh_first_id(txn, stream)
        txn.stream_put(stream.handle, meta)
    return deleted


def _delete_one(txn: Txn, stream: StreamRef, entry_id: ID) -> bool:
    meta = stream.meta
    handle = stream.handle
    located = None
    for master_id, node in txn.iter_nodes(handle, entry_id):
        located = (master_id, node)
        break
    if located is None or located[0] > entry_id:
        return False
    master_id, node = located
    flags_pos = -1
    for eid, flags, pos in sn.iter_ids(node, master_id):
        if eid == entry_id:
            if not flags & sn.FLAG_DELETED:
                flags_pos = pos
            break
        if eid > entry_id:
            break
    if flags_pos < 0:
        return False
    count, _ = sn.node_counts(node)
    if count == 1:
        txn.node_delete(handle, master_id)
        meta.node_count -= 1
        if master_id == meta.tail_id:
            previous = txn.last_node_before(handle, master_id)
            meta.tail_id = previous if previous is not None else (0, 0)
    else:
        mutable = txn.node_for_update(handle, master_id)
        assert mutable is not None
        sn.mark_deleted(mutable, [flags_pos])
    meta.length -= 1
    return True
