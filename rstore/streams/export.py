"""Snapshots of streams, for RDB files and DUMP payloads.

Everything is lazy: nodes, PEL entries and consumer lists are read from the transaction as the
writer consumes them, so saving a store of any size takes constant memory.  The counts the
writer needs up front come from the stored counters, which :mod:`rstore.streams.check`
verifies; the writer checks them again against what it actually writes.
"""

from __future__ import annotations

from collections.abc import Iterator

from rstore.ids import ID
from rstore.model import (
    ConsumerSnapshot,
    ConsumerState,
    GroupSnapshot,
    GroupState,
    PendingEntry,
    StreamNode,
    StreamSnapshot,
    StreamState,
)
from rstore.storage import group_records
from rstore.storage.layout import TYPE_STREAM, ConsumerMeta, GroupMeta
from rstore.storage.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = ["snapshot_stream", "stream_keys"]


def stream_keys(txn: Txn) -> Iterator[tuple[bytes, StreamRef]]:
    """Every stream of the store with its metadata."""
    for _, name, rec in txn.iter_keys():
        if rec.type == TYPE_STREAM:
            yield name, StreamRef(rec.handle, txn.stream_get(rec.handle))


def snapshot_stream(txn: Txn, stream: StreamRef) -> StreamSnapshot:
    meta = stream.meta
    return StreamSnapshot(
        node_count=meta.node_count,
        nodes=(StreamNode(mid, bytes(node)) for mid, node in txn.iter_nodes(stream.handle)),
        state=StreamState(
            meta.length,
            meta.last_id,
            meta.first_id,
            meta.max_deleted_entry_id,
            meta.entries_added,
            meta.group_count,
        ),
        groups=(_group(txn, g) for g in group_records.groups_of(txn, stream.handle)),
    )


def _group(txn: Txn, g: GroupMeta) -> GroupSnapshot:
    return GroupSnapshot(
        state=GroupState(g.name, g.last_id, g.entries_read, g.pel_count, g.consumer_count),
        pending=(PendingEntry(eid, t, n) for eid, (t, n, _) in group_records.pel_entries(txn, g)),
        consumers=(_consumer(txn, g, c) for c in group_records.consumers_of(txn, g)),
    )


def _consumer(txn: Txn, g: GroupMeta, c: ConsumerMeta) -> ConsumerSnapshot:
    ids: Iterator[ID] = group_records.consumer_pel_ids(txn, g, c.name)
    return ConsumerSnapshot(ConsumerState(c.name, c.seen_time, c.active_time, c.pel_count), ids)
