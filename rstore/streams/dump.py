"""A whole stream as RDB records, out of the store and back in: what DUMP, RESTORE and RDB files
need (the payload and file formats themselves are in :mod:`rstore.rdb`).

**Out** (:func:`snapshot_stream`): nodes, PEL entries and consumer lists are read from the
transaction lazily, as the RDB writer consumes them, so saving a store of any size takes
constant memory.  The counts the writer needs up front come from the stored counters (which
:mod:`rstore.streams.check` verifies); the writer checks them again against what it writes.

**In** (:func:`import_stream`, :func:`restore_stream`): records arrive in RDB order -- nodes,
the stream state, then per group its state, its PEL and its consumers with their PEL IDs.
Nodes and NACKs are written to the transaction as they come; a NACK gets its owner when a
consumer's list names it.  Besides the checks Redis makes (every consumer entry in the group
PEL, every PEL entry owned), the stream state is checked against the nodes -- length, first ID,
last ID -- so that a damaged or crafted file can never leave counters that disagree with the
data.  The caller runs all of it in one transaction: any problem raises and nothing is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rstore.codec.node_validate import node_facts
from rstore.errors import CorruptDataError, CorruptRDBError, KeyExistsError
from rstore.ids import ID
from rstore.model import (
    ConsumerPending,
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
from rstore.storage.layout import TYPE_STREAM, ConsumerMeta, GroupMeta, StreamMeta
from rstore.storage.txn import Txn
from rstore.streams import keyspace
from rstore.streams.keyspace import StreamRef, discard_stream, new_unbound_stream
from rstore.streams.lag import estimate_entries_read

__all__ = ["import_stream", "restore_stream", "snapshot_stream", "stream_keys"]


# --------------------------------------------------------------------------- out


def stream_keys(txn: Txn) -> Iterator[tuple[bytes, StreamRef]]:
    """Every stream of the store with its metadata."""
    for _, name, rec in txn.iter_keys():
        if rec.type == TYPE_STREAM:
            yield name, StreamRef(rec.handle, txn.stream_get(rec.handle))


def snapshot_stream(txn: Txn, stream: StreamRef) -> StreamSnapshot:
    """The whole stream, read lazily from ``txn`` (which must stay open while it is used)."""
    return StreamSnapshot(
        node_count=stream.meta.node_count,
        nodes=(StreamNode(mid, node) for mid, node in txn.iter_nodes(stream.handle)),
        state=stream.meta.state(),
        groups=(_group(txn, g) for g in group_records.groups_of(txn, stream.handle)),
    )


def _group(txn: Txn, g: GroupMeta) -> GroupSnapshot:
    return GroupSnapshot(
        state=g.state(),
        pending=(PendingEntry(eid, t, n) for eid, (t, n, _) in group_records.pel_entries(txn, g)),
        consumers=(_consumer(txn, g, c) for c in group_records.consumers_of(txn, g)),
    )


def _consumer(txn: Txn, g: GroupMeta, c: ConsumerMeta) -> ConsumerSnapshot:
    ids: Iterator[ID] = group_records.consumer_pel_ids(txn, g, c.name)
    return ConsumerSnapshot(c.state(), ids)


# --------------------------------------------------------------------------- in


class _Importer:
    def __init__(self, txn: Txn, name: bytes) -> None:
        self.txn = txn
        self.name = name
        self.stream: StreamRef = new_unbound_stream(txn)
        self.live = 0
        self.first_live: ID | None = None
        self.last_entry: ID | None = None
        self.nodes = 0
        self.tail: ID = (0, 0)
        self.group: GroupMeta | None = None
        self.group_state: GroupState | None = None
        self.staging = 0  # temporary handle holding PEL entries not yet owned
        self.consumer: ConsumerMeta | None = None

    def fail(self, what: str) -> CorruptRDBError:
        return CorruptRDBError(what, None, self.name)

    # ------------------------------------------------------------------ records

    def node(self, rec: StreamNode) -> None:
        previous = self.last_entry
        if previous is not None and rec.master_id <= previous:
            raise self.fail(f"node {rec.master_id} starts at or before entry {previous}")
        try:
            facts = node_facts(rec.listpack, rec.master_id)
        except CorruptDataError as exc:
            raise self.fail(f"node {rec.master_id}: {exc}") from exc
        self.live += facts.live
        if self.first_live is None:
            self.first_live = facts.first_live
        self.last_entry = facts.last
        self.txn.node_put(self.stream.handle, rec.master_id, bytearray(rec.listpack))
        self.nodes += 1
        self.tail = rec.master_id

    def state(self, rec: StreamState) -> None:
        if rec.length != self.live:
            raise self.fail(f"stream length {rec.length} but its nodes hold {self.live} entries")
        if self.last_entry is not None and rec.last_id < self.last_entry:
            raise self.fail(f"last ID {rec.last_id} is before the last entry {self.last_entry}")
        first = self.first_live or (0, 0)
        if rec.first_id is not None and rec.first_id != first:
            raise self.fail(f"first ID {rec.first_id} but the first entry is {first}")
        entries_added = rec.entries_added if rec.entries_added is not None else rec.length
        if entries_added < rec.length:
            raise self.fail(f"entries-added {entries_added} is below the length {rec.length}")
        meta = StreamMeta(
            length=rec.length,
            last_id=rec.last_id,
            first_id=first,
            max_deleted_entry_id=rec.max_deleted_entry_id or (0, 0),
            entries_added=entries_added,
            node_count=self.nodes,
            tail_id=self.tail if self.nodes else (0, 0),
            group_count=0,
        )
        self.stream.meta = meta
        self.txn.stream_put(self.stream.handle, meta)

    def group_start(self, rec: GroupState) -> None:
        self.finish_group()
        meta = self.stream.meta
        entries_read = rec.entries_read
        if entries_read is None:  # RDB type 15: estimated, as Redis does when loading it
            entries_read = estimate_entries_read(meta, rec.last_id)
        group = GroupMeta(rec.name, self.txn.new_handle(), rec.last_id, entries_read, 0, 0)
        self.group, self.group_state = group, rec
        self.staging = self.txn.new_handle()
        meta.group_count += 1
        self.txn.stream_put(self.stream.handle, meta)

    def pending(self, rec: PendingEntry) -> None:
        self._group()
        # The owner is named later, by a consumer's list: stage the entry until then.
        group_records.stage_nack(
            self.txn, self.staging, rec.id, rec.delivery_time_ms, rec.delivery_count
        )

    def consumer_start(self, rec: ConsumerState) -> None:
        group = self._group()
        self.finish_consumer()
        active = rec.active_time_ms if rec.active_time_ms is not None else rec.seen_time_ms
        self.consumer = ConsumerMeta(rec.name, rec.seen_time_ms, active, 0)
        group.consumer_count += 1

    def consumer_pending(self, rec: ConsumerPending) -> None:
        group, consumer = self._group(), self.consumer
        if consumer is None:
            raise self.fail("a consumer PEL entry outside any consumer")
        staged = group_records.take_staged_nack(self.txn, self.staging, rec.id)
        if staged is None:  # not in the group PEL, or already named by another consumer
            raise self.fail(f"Consumer entry not found in group global PEL: {rec.id}")
        group_records.nack_put(self.txn, group, rec.id, (staged[0], staged[1], consumer.name), None)
        consumer.pel_count += 1
        group.pel_count += 1

    # ------------------------------------------------------------------ group ends

    def _group(self) -> GroupMeta:
        if self.group is None:
            raise self.fail("group data outside any group")
        return self.group

    def finish_consumer(self) -> None:
        if self.consumer is not None and self.group is not None:
            group_records.consumer_put(self.txn, self.group, self.consumer)
        self.consumer = None

    def finish_group(self) -> None:
        self.finish_consumer()
        group = self.group
        if group is None:
            return
        if group_records.staged_left(self.txn, self.staging):
            raise self.fail(f"Stream CG PEL entry without consumer in group {group.name!r}")
        group_records.group_put(self.txn, self.stream.handle, group)
        self.group = None


def import_stream(txn: Txn, name: bytes, records: Iterable[object]) -> StreamRef:
    """Build a stream from ``records`` under a fresh handle, not yet bound to a key.

    ``name`` is only used in error messages.  On any failure everything written is removed
    again before the error propagates, so even inside a larger transaction a refused import
    leaves no trace; bind the result with :func:`rstore.streams.keyspace.bind_stream`.
    """
    imp = _Importer(txn, name)
    try:
        seen_state = False
        for rec in records:
            if isinstance(rec, StreamNode):
                imp.node(rec)
            elif isinstance(rec, StreamState):
                imp.state(rec)
                seen_state = True
            elif isinstance(rec, GroupState):
                imp.group_start(rec)
            elif isinstance(rec, PendingEntry):
                imp.pending(rec)
            elif isinstance(rec, ConsumerState):
                imp.consumer_start(rec)
            elif isinstance(rec, ConsumerPending):
                imp.consumer_pending(rec)
            else:
                raise TypeError(f"not a stream record: {rec!r}")
        if not seen_state:
            raise imp.fail("stream value ends before its metadata")
        imp.finish_group()
    except BaseException:
        if imp.staging:
            group_records.staged_left(txn, imp.staging)
        discard_stream(txn, imp.stream.handle)
        raise
    return imp.stream


def restore_stream(txn: Txn, key: bytes, records: Iterable[object], *, replace: bool) -> bool:
    """Make ``key`` the stream built from ``records`` (RESTORE, and each stream of an RDB file):
    look the key up, import, delete the old stream if any, bind.  Whether a stream was
    replaced.  An existing key without ``replace`` raises :class:`KeyExistsError` before
    anything is read; a refused import leaves the old stream untouched."""
    existing = keyspace.lookup_stream(txn, key)
    if existing is not None and not replace:
        raise KeyExistsError(key)
    stream = import_stream(txn, key, records)
    if existing is not None:
        keyspace.delete_keys(txn, [key])
    keyspace.bind_stream(txn, key, stream)
    return existing is not None
