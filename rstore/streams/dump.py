"""A whole stream as RDB records, out of the store and back in: what DUMP, RESTORE and RDB files
need (the payload and file formats themselves are in :mod:`rstore.rdb`).

**Out** (:func:`snapshot_stream`): nodes, PEL entries and consumer lists are read from the
transaction lazily, as the RDB writer consumes them, so saving a store of any size takes
constant memory.  The counts the writer needs up front come from the stored counters (which
:mod:`rstore.streams.check` verifies); the writer checks them again against what it writes.

**In** (:func:`import_stream`, :func:`restore_stream`): records arrive in RDB order -- nodes,
the stream state, then per group its state, its PEL, its consumers with their PEL IDs and (RDB
14) its released entries, then (RDB 13) what idempotent production remembers --
one by one or in runs (:class:`~rstore.model.NodeRun`, :class:`~rstore.model.PendingRun`,
:class:`~rstore.model.ConsumerPendingRun`: what a restore's reader hands over, a read buffer
at a time, each run taken in one step and written with one call).  Nodes are written as they
come; a group's PEL entries wait in memory (up to :data:`STAGE_LIMIT`, then in staging
records) until a consumer's list names their owner, and are then written with it.
Besides the checks Redis makes (every consumer entry in the group PEL, every PEL entry owned),
the stream state is checked against the nodes -- length, first ID, last ID -- so that a
damaged or crafted file can never leave counters that disagree with the data.  The caller
runs all of it in one transaction: any problem raises and nothing is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from rstore.codec.node_validate import node_facts
from rstore.errors import CorruptDataError, CorruptRDBError, KeyExistsError
from rstore.ids import ID
from rstore.model import (
    ConsumerPending,
    ConsumerPendingRun,
    ConsumerSnapshot,
    ConsumerState,
    GroupSnapshot,
    GroupState,
    NackedEntries,
    NodeRun,
    PendingEntry,
    PendingRun,
    StreamIdempotency,
    StreamNode,
    StreamSnapshot,
    StreamState,
)
from rstore.storage.records import bulk_read, group_records, layout, sealed
from rstore.storage.records.layout import TYPE_STREAM, ConsumerMeta, GroupMeta, StreamMeta
from rstore.storage.records.txn import Txn
from rstore.streams import idempotency, keyspace
from rstore.streams.keyspace import StreamRef, discard_stream, new_unbound_stream
from rstore.streams.lag import estimate_entries_read
from rstore.streams.pending import pending_entry

__all__ = ["import_stream", "restore_stream", "snapshot_stream", "stream_keys"]


# --------------------------------------------------------------------------- out


def stream_keys(txn: Txn) -> Iterator[tuple[bytes, StreamRef]]:
    """Every stream of the store with its metadata."""
    for _, name, rec in txn.iter_keys():
        if rec.type == TYPE_STREAM:
            yield name, StreamRef(rec.handle, txn.stream_get(rec.handle))


def snapshot_stream(
    txn: Txn, stream: StreamRef, *, nack_zone: bool = False, idempotency_at: int | None = None
) -> StreamSnapshot:
    """The whole stream, read lazily from ``txn`` (which must stay open while it is used).
    Nodes and PEL records come as :mod:`rstore.storage.records.bulk_read` hands them over: model
    records when iterated, or sealed records for the RDB writer's C packer.  ``nack_zone``: the
    released entries stay without an owner (RDB 14), else each is given one (older versions);
    ``idempotency_at``: what idempotent production remembers at that time in ms is read too
    (RDB 13 and later; ``None``: it is not, as older versions have no place for it)."""
    return StreamSnapshot(
        node_count=stream.meta.node_count,
        nodes=bulk_read.nodes(txn, stream.handle),
        state=stream.meta.state(),
        groups=(_group(txn, g, nack_zone) for g in group_records.groups_of(txn, stream.handle)),
        idempotency=(
            None
            if idempotency_at is None
            else idempotency.snapshot(txn, stream.handle, idempotency_at)
        ),
    )


def _group(txn: Txn, g: GroupMeta, nack_zone: bool) -> GroupSnapshot:
    if g.pel_count and nack_zone:
        if group_records.released_count(txn, g):  # its index only: the PEL is read once, below
            return _with_nack_zone(txn, g)
    elif g.pel_count:
        released = list(group_records.released_entries(txn, g))
        if released:
            return _with_released(txn, g, released)
    return GroupSnapshot(
        state=g.state(),
        pending=bulk_read.pending(txn, g),
        consumers=(_consumer(txn, g, c) for c in group_records.consumers_of(txn, g)),
    )


#: The consumer that RDB files hold the released entries of no consumer still in the group by.
RELEASED_OWNER = b"rstore:released"


def _with_released(txn: Txn, g: GroupMeta, released: list[tuple[ID, int, bytes]]) -> GroupSnapshot:
    """A group with entries XNACK released, as RDB files before version 13 can hold it: no
    entry there is without an owner, so each released one is written pending to the consumer it
    was released from (or, when that one is gone, to :data:`RELEASED_OWNER`), with delivery
    time 0 -- the next XCLAIM or XAUTOCLAIM of any minimum idle time takes it, as it would
    here."""
    consumers = group_records.consumers_of(txn, g)
    names = {c.name for c in consumers}
    extra: dict[bytes, list[ID]] = {}
    for entry_id, _, last_owner in released:
        extra.setdefault(last_owner if last_owner in names else RELEASED_OWNER, []).append(entry_id)
    snapshots = []
    for c in consumers:
        ids = sorted([*bulk_read.owned_ids(txn, g, c.name), *extra.get(c.name, [])])
        snapshots.append(ConsumerSnapshot(replace(c.state(), pel_count=len(ids)), ids))
    orphans = extra.get(RELEASED_OWNER, []) if RELEASED_OWNER not in names else []
    if orphans:
        snapshots.append(
            ConsumerSnapshot(ConsumerState(RELEASED_OWNER, 0, 0, len(orphans)), orphans)
        )
    pending = [pending_entry(eid, nack) for eid, nack in group_records.pel_entries(txn, g)]
    state = replace(g.state(), consumer_count=len(snapshots))
    return GroupSnapshot(state=state, pending=pending, consumers=snapshots)


def _with_nack_zone(txn: Txn, g: GroupMeta) -> GroupSnapshot:
    """A group with entries XNACK released, as RDB 14 holds it: in the PEL with delivery time
    0 and in no consumer's list, then listed in the order they were released."""
    entries = list(group_records.pel_entries(txn, g))
    released = sorted((nack[0], eid) for eid, nack in entries if nack[2] is None)
    return GroupSnapshot(
        state=g.state(),
        pending=[pending_entry(eid, nack) for eid, nack in entries],
        consumers=(_consumer(txn, g, c) for c in group_records.consumers_of(txn, g)),
        nacked=[eid for _, eid in released],
    )


def _consumer(txn: Txn, g: GroupMeta, c: ConsumerMeta) -> ConsumerSnapshot:
    return ConsumerSnapshot(c.state(), bulk_read.owned_ids(txn, g, c.name))


# --------------------------------------------------------------------------- in

#: Pending entries of one group held in memory while the importer waits for the consumers'
#: lists that name their owners: about 190 bytes each (a 16-byte key, a tuple of two ints and
#: their dict slot), so at most ~50 MB.  Past this many, the rest wait in LMDB staging records
#: (:func:`rstore.storage.records.group_records.stage_nacks`), slower but in constant memory.
STAGE_LIMIT = 1 << 18

_raw_id = layout.ID_PACK  # an ID as 16 raw bytes: big-endian, the order of IDs


def _id_of(raw: bytes) -> ID:
    return (int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big"))


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
        # The group's PEL entries not yet owned, by raw ID: in memory up to STAGE_LIMIT, the
        # rest under a temporary handle (0: none yet).
        self.staged: dict[bytes, tuple[int, int]] = {}
        self.staging = 0
        self.consumer: ConsumerMeta | None = None
        self.seen_state = False

    def fail(self, what: str) -> CorruptRDBError:
        return CorruptRDBError(what, None, self.name)

    # ------------------------------------------------------------------ records

    def node(self, rec: StreamNode) -> None:
        self.follows(rec.master_id)
        try:
            facts = node_facts(rec.listpack, rec.master_id)
        except CorruptDataError as exc:
            raise self.fail(f"node {rec.master_id}: {exc}") from exc
        self.add_node(rec.master_id, facts.live, facts.first_live, facts.last)
        self.txn.node_write(self.stream.handle, rec.master_id, rec.listpack)

    def node_run(self, run: NodeRun) -> None:
        """Nodes the reader checked in depth: their facts come with them."""
        for master_id, _, live, first_live, last in run.nodes:
            self.follows(master_id)
            self.add_node(master_id, live, first_live, last)
        sealed.nodes_write(self.txn, self.stream.handle, run.nodes)

    def follows(self, master_id: ID) -> None:
        previous = self.last_entry
        if previous is not None and master_id <= previous:
            raise self.fail(f"node {master_id} starts at or before entry {previous}")

    def add_node(self, master_id: ID, live: int, first_live: ID | None, last: ID) -> None:
        self.live += live
        if self.first_live is None:
            self.first_live = first_live
        self.last_entry = last
        self.nodes += 1
        self.tail = master_id

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
        self.seen_state = True

    def group_start(self, rec: GroupState) -> None:
        self.finish_group()
        meta = self.stream.meta
        entries_read = rec.entries_read
        if entries_read is None:  # RDB type 15: estimated, as Redis does when loading it
            entries_read = estimate_entries_read(meta, rec.last_id)
        group = GroupMeta(rec.name, self.txn.new_handle(), rec.last_id, entries_read, 0, 0)
        self.group, self.group_state = group, rec
        meta.group_count += 1
        self.txn.stream_put(self.stream.handle, meta)

    # The owner of a PEL entry is named later, by a consumer's list: stage it until then.

    def pending(self, rec: PendingEntry) -> None:
        self.stage({_raw_id(*rec.id): (rec.delivery_time_ms, rec.delivery_count)})

    def pending_run(self, run: PendingRun) -> None:
        self.stage(run.entries)

    def stage(self, entries: dict[bytes, tuple[int, int]]) -> None:
        self._group()
        staged = self.staged
        room = STAGE_LIMIT - len(staged)
        if len(entries) <= room:
            if staged:
                staged.update(entries)
            else:
                self.staged = entries
            return
        items = list(entries.items())
        staged.update(items[:room])
        if not self.staging:
            self.staging = self.txn.new_handle()
        group_records.stage_nacks(self.txn, self.staging, items[room:])

    def nacked(self, rec: NackedEntries) -> None:
        """The group's released entries (RDB 14), in release order: in its PEL, and named by
        no consumer's list."""
        group = self._group()
        self.finish_consumer()
        for place, entry_id in enumerate(rec.ids):
            raw = _raw_id(*entry_id)
            nack = self.staged.pop(raw, None)
            if nack is None and self.staging:
                nack = group_records.take_staged_nack(self.txn, self.staging, raw)
            if nack is None:
                raise self.fail(f"NACKed entry not found in group global PEL: {entry_id}")
            group_records.nack_release(self.txn, group, entry_id, place, nack[1], None, b"")
            group.pel_count += 1

    def idempotent(self, rec: StreamIdempotency) -> None:
        idempotency.load(self.txn, self.stream.handle, rec)

    def consumer_start(self, rec: ConsumerState) -> None:
        group = self._group()
        self.finish_consumer()
        active = rec.active_time_ms if rec.active_time_ms is not None else rec.seen_time_ms
        self.consumer = ConsumerMeta(rec.name, rec.seen_time_ms, active, 0)
        group.consumer_count += 1

    def consumer_pending(self, rec: ConsumerPending) -> None:
        self.owned([_raw_id(*rec.id)])

    def consumer_pending_run(self, run: ConsumerPendingRun) -> None:
        self.owned(run.ids)

    def owned(self, ids: list[bytes]) -> None:
        """The current consumer owns these entries (raw IDs): each leaves the staged ones."""
        group, consumer = self._group(), self.consumer
        if consumer is None:
            raise self.fail("a consumer PEL entry outside any consumer")
        take = self.staged.pop
        nacks = []
        for raw in ids:
            nack = take(raw, None)
            if nack is None and self.staging:
                nack = group_records.take_staged_nack(self.txn, self.staging, raw)
            if nack is None:  # not in the group PEL, or already named by another consumer
                raise self.fail(f"Consumer entry not found in group global PEL: {_id_of(raw)}")
            nacks.append((raw, nack[0], nack[1]))
        group_records.nacks_restore(self.txn, group, consumer.name, nacks)
        consumer.pel_count += len(nacks)
        group.pel_count += len(nacks)

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
        left = len(self.staged)
        self.staged = {}
        if self.staging:
            left += group_records.staged_left(self.txn, self.staging)
            self.staging = 0
        if left:
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
    steps: dict[type, Callable[[Any], None]] = {
        StreamNode: imp.node,
        NodeRun: imp.node_run,
        StreamState: imp.state,
        GroupState: imp.group_start,
        PendingEntry: imp.pending,
        PendingRun: imp.pending_run,
        ConsumerState: imp.consumer_start,
        ConsumerPending: imp.consumer_pending,
        ConsumerPendingRun: imp.consumer_pending_run,
        NackedEntries: imp.nacked,
        StreamIdempotency: imp.idempotent,
    }
    try:
        for rec in records:
            step = steps.get(type(rec))
            if step is None:
                raise TypeError(f"not a stream record: {rec!r}")
            step(rec)
        if not imp.seen_state:
            raise imp.fail("stream value ends before its metadata")
        imp.finish_group()
    except BaseException:
        if imp.staging:
            group_records.staged_left(txn, imp.staging)
        if imp.group is not None:  # not yet among the stream's groups: its records go here
            group_records.group_delete(txn, imp.stream.handle, imp.group)
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
