"""XDEL, XDELEX and XACKDEL: tombstone entries in place, as Redis's ``streamDeleteItem``.

The entry's flags get the DELETED bit and the node's counters move; when the node loses its
last live entry the whole node (tombstones included) is removed.  ``max_deleted_entry_id``
rises to the largest deleted ID; ``first_id`` is recomputed when the first entry goes.

XDELEX and XACKDEL (Redis 8.2) answer a code per ID (:data:`NOT_FOUND`, :data:`DELETED`,
:data:`REFERENCED`) and apply a reference policy (:mod:`rstore.streams.references`).
"""

from __future__ import annotations

from rstore.codec import stream_node as sn
from rstore.ids import ID
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef
from rstore.streams.references import Policy, References
from rstore.streams.trim import refresh_first_id

__all__ = [
    "DELETED", "NOT_FOUND", "REFERENCED", "Deletion", "ack_delete", "delete_entries",
    "delete_with_policy",
]  # fmt: skip

#: XDELEX's and XACKDEL's codes: no such entry (XACKDEL: not pending in the group) ...
NOT_FOUND = -1
#: ... deleted (XACKDEL: acknowledged, and deleted if it was still there) ...
DELETED = 1
#: ... kept, because a group still references it (``ACKED``).
REFERENCED = 2


class Deletion:
    """Entries of one stream deleted one by one; the stream's metadata is written once, by
    :meth:`finish`."""

    def __init__(self, txn: Txn, stream: StreamRef) -> None:
        self._txn = txn
        self._stream = stream
        self.deleted = 0
        self._first_deleted = False

    def delete(self, entry_id: ID) -> bool:
        """Delete ``entry_id``; ``False`` when it is missing or already deleted."""
        meta = self._stream.meta
        if not _delete_one(self._txn, self._stream, entry_id):
            return False
        self.deleted += 1
        if entry_id == meta.first_id:
            self._first_deleted = True
        meta.max_deleted_entry_id = max(meta.max_deleted_entry_id, entry_id)
        return True

    def finish(self) -> None:
        meta = self._stream.meta
        if not self.deleted:
            return
        if meta.length == 0:
            meta.first_id = (0, 0)
        elif self._first_deleted:
            refresh_first_id(self._txn, self._stream)
        self._txn.stream_put(self._stream.handle, meta)


def delete_entries(txn: Txn, stream: StreamRef, ids: list[ID]) -> int:
    """XDEL: delete ``ids`` (missing or already deleted ones count 0); the number deleted."""
    deletion = Deletion(txn, stream)
    for entry_id in ids:
        deletion.delete(entry_id)
    deletion.finish()
    return deletion.deleted


def delete_with_policy(txn: Txn, stream: StreamRef, ids: list[ID], policy: Policy) -> list[int]:
    """XDELEX: each of ``ids`` deleted under ``policy``; a code per ID, in order."""
    refs = None if policy is Policy.KEEPREF else References(txn, stream)
    deletion = Deletion(txn, stream)
    out: list[int] = []
    for entry_id in ids:
        if refs is not None:
            if policy is Policy.ACKED and refs.referenced(entry_id):
                out.append(REFERENCED)
                continue
            if policy is Policy.DELREF:
                refs.drop(entry_id)  # even when the entry itself is gone
        out.append(DELETED if deletion.delete(entry_id) else NOT_FOUND)
    deletion.finish()
    return out


def ack_delete(
    txn: Txn,
    stream: StreamRef,
    refs: References,
    group: GroupMeta,
    ids: list[ID],
    policy: Policy,
) -> list[int]:
    """XACKDEL: each of ``ids`` acknowledged in ``group`` (one of ``refs.group``'s), then
    deleted under ``policy``; a code per ID, in order."""
    deletion = Deletion(txn, stream)
    out: list[int] = []
    for entry_id in ids:
        if not refs.acknowledge(group, entry_id):
            out.append(NOT_FOUND)
            continue
        if policy is Policy.DELREF:
            refs.drop(entry_id)
        elif policy is Policy.ACKED and refs.referenced(entry_id):
            out.append(REFERENCED)
            continue
        deletion.delete(entry_id)
        out.append(DELETED)  # acknowledged: 1 even when the entry was already gone
    deletion.finish()
    return out


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
