"""Streams rebuilt from what a salvage could read of a damaged store, as the records a restore
imports (:func:`rstore.streams.dump.import_stream`), with what could not be read, per stream.

The ``nodes`` tree is read once, in key order, and handed out stream by stream (stream handles
prefix its keys); the small sub-databases come from the :class:`Catalog`; each group's pending
entries and index are read from their own key ranges.  For each stream:

* **Entries**: every node that passes its checksum and its structural check
  (:func:`rstore.codec.node_validate.node_facts`) and follows the node before it.  What is lost
  -- a page of the tree that cannot be read, a node whose checksum or structure fails -- is a
  :class:`LostRange`: from the bound the tree gives (the damaged page's lower key, the damaged
  node's master ID, or the entry after the last one read) up to the next node read.  Every
  entry the store held with an ID in that range is lost, and no other.
* **Counters** are recomputed from what was read: the length is the entries copied, the first
  ID the first of them.  The stream's metadata record, when it was read, gives the last ID,
  entries-added and max-deleted-entry-id; entries lost raise max-deleted-entry-id to the top of
  their range (they were removed, as far as the new store knows, so the groups' lag is computed
  as Redis computes it after deletions).  When the record is lost: the last ID is the highest
  of the last entry and the groups' last delivered IDs, entries-added the length, and each
  group's entries-read is estimated as a restore of an RDB file without them does.
* **Groups**, **consumers** and **pending entries** as their records say.  A pending entry
  whose consumer record is lost goes to the consumer it names (re-created, seen and active at
  its latest delivery); one whose own record is lost is rebuilt from the owner's index, when
  that survived (delivery count 1, delivered when its owner was last seen).

A stream whose name is lost (its key record) but whose other records were read is copied under
a made-up name, ``salvage:lost-name:<handle>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from rstore.codec.node_validate import node_facts
from rstore.errors import CorruptDataError
from rstore.ids import decrement, format_id, increment
from rstore.model import (
    ID,
    ConsumerPendingRun,
    ConsumerState,
    GroupState,
    NodeRun,
    PendingRun,
    StreamState,
)
from rstore.storage.checks.pagecheck import Problem
from rstore.storage.checks.salvage import SalvageSource
from rstore.storage.records import layout
from rstore.storage.records.layout import ConsumerMeta, GroupMeta
from rstore.streams.salvage_catalog import Catalog, handle_span, shown

__all__ = ["LostRange", "StreamRebuild", "StreamSalvage", "rebuild_streams"]

_ZERO: ID = (0, 0)
_RUN = 64  # nodes handed to the importer at a time
_PENDING_RUN = 4096
LOST_NAME = b"salvage:lost-name:%d"


@dataclass(frozen=True)
class LostRange:
    """Entries of a stream that could not be read: every entry with an ID from ``first`` up to,
    not including, ``before`` (``None``: to the stream's end) that the store held; ``cause``
    says where the damage is."""

    first: ID
    before: ID | None
    cause: str

    def describe(self) -> str:
        start = "the start" if self.first == _ZERO else format_id(self.first).decode()
        end = "the end" if self.before is None else format_id(self.before).decode()
        return f"entries from {start} up to {end} ({self.cause})"


@dataclass
class StreamSalvage:
    """What a salvage copied of one stream, and what it could not."""

    name: bytes  # its name in the new store
    original_name: bytes | None  # None: the name was lost (``name`` is made up)
    entries: int = 0
    stored_length: int | None = None  # the length its metadata recorded, when read
    nodes: int = 0
    groups: int = 0
    consumers: int = 0
    pending: int = 0
    lost_entries: list[LostRange] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # other losses, in words

    @property
    def complete(self) -> bool:
        return not self.lost_entries and not self.lost


class _Lost(NamedTuple):
    """Nodes lost after the last one read (if any) up to the next node read.  (The bounds the
    damaged place gives are not used: they come from LMDB's pages, which have no checksums;
    the entries read around the loss bound it exactly.)"""

    cause: str


_NodeEvent = tuple[ID, bytes] | _Lost


class _NodeFeed:
    """The ``nodes`` tree read once, in key order, handed out stream by stream."""

    def __init__(self, source: SalvageSource, cat: Catalog) -> None:
        self.items = source.records(layout.DB_NODES)
        self.cat = cat
        self.head = next(self.items, None)
        self.open: tuple[int, str] | None = None  # a lost range reaching later streams

    def next_handle(self) -> int | None:
        item = self.head
        if item is None:
            return None
        if isinstance(item, Problem):
            return handle_span(item)[0]
        return layout.unpack_u64(item[0][:8]) if len(item[0]) >= 8 else 0

    def take(self, handle: int) -> Iterator[_NodeEvent]:
        """The nodes of stream ``handle`` and the losses among them, in ID order."""
        if self.open is not None:
            last, cause = self.open
            if last >= handle:
                yield _Lost(cause)
            if last <= handle:
                self.open = None
        while self.head is not None:
            item = self.head
            if isinstance(item, Problem):
                first, last = handle_span(item)
                if first > handle:
                    return
                self.head = next(self.items, None)
                cause = self.cat.problem(item)
                if last < handle:
                    continue
                yield _Lost(cause)
                if last > handle:
                    self.open = (last, cause)
                    return
                continue
            key, value = item
            if len(key) >= 8 and layout.unpack_u64(key[:8]) > handle:
                return
            self.head = next(self.items, None)
            if len(key) != layout.NODE_KEY_SIZE:
                yield _Lost(self.cat.problem(Problem("nodes", None, "a malformed key", key=key)))
                continue
            yield layout.node_key_id(key), value


def _id_in(key: bytes | None, handle: int) -> ID | None:
    """The entry ID ending a ``pel`` key bound of group ``handle``, when it is one."""
    if key is None or len(key) != 24 or layout.unpack_u64(key[:8]) != handle:
        return None
    return layout.id_from_key_tail(key)


class StreamRebuild:
    """One stream: :meth:`records` gives what :func:`import_stream` takes and fills
    :attr:`report` as it goes (complete once they are all consumed)."""

    def __init__(
        self,
        source: SalvageSource,
        cat: Catalog,
        handle: int,
        name: bytes,
        original: bytes | None,
        events: Iterator[_NodeEvent],
    ) -> None:
        self.source = source
        self.cat = cat
        self.handle = handle
        self.events = events
        self.meta = cat.metas.get(handle)
        self.report = StreamSalvage(name, original)
        self.last_entry: ID | None = None
        if original is None:
            self.report.lost.append(f"its name is lost: copied as {shown(name)}")

    def drain(self) -> None:
        """Read past the nodes of this stream that were not consumed (an import refused)."""
        for _ in self.events:
            pass

    def records(self) -> Iterator[object]:
        yield from self._nodes()
        yield self._state()
        for group in self.cat.groups.get(self.handle, []):
            yield from _GroupRebuild(self, group).records()
        self.report.lost += self.cat.group_losses.of(self.handle)

    def _nodes(self) -> Iterator[NodeRun]:
        report = self.report
        lost: tuple[ID, str] | None = None
        run: list[tuple[ID, bytes, int, ID | None, ID]] = []
        for event in self.events:
            if isinstance(event, _Lost):
                lost = lost or (self._after_last(), event.cause)
                continue
            master, node = event
            try:
                facts = node_facts(node, master)
            except CorruptDataError as exc:
                cause = f"node {format_id(master).decode()} is malformed: {exc}"
                lost = lost or (self._after_last(), cause)
                continue
            if self.last_entry is not None and master <= self.last_entry:
                report.lost.append(
                    f"node {format_id(master).decode()} overlaps the node before it: not copied"
                )
                continue
            if lost is not None:
                report.lost_entries.append(LostRange(lost[0], master, lost[1]))
                lost = None
            run.append((master, node, facts.live, facts.first_live, facts.last))
            report.entries += facts.live
            report.nodes += 1
            self.last_entry = facts.last
            if len(run) >= _RUN:
                yield NodeRun(run)
                run = []
        if run:
            yield NodeRun(run)
        if lost is not None:
            report.lost_entries.append(LostRange(lost[0], None, lost[1]))

    def _after_last(self) -> ID:
        """The first ID after the last entry read (0-0 before the first)."""
        return _ZERO if self.last_entry is None else increment(self.last_entry) or _ZERO

    def _state(self) -> StreamState:
        meta, report = self.meta, self.report
        groups = self.cat.groups.get(self.handle, [])
        last = self.last_entry or _ZERO
        if meta is not None:
            report.stored_length = meta.length
            last_id, deleted = max(meta.last_id, last), meta.max_deleted_entry_id
            added: int | None = max(meta.entries_added, report.entries)
        else:
            report.lost.append(
                "its metadata is lost: the last ID, entries-added and the "
                "groups' entries-read are recomputed from what was read"
            )
            last_id, deleted, added = max([last, *(g.last_id for g in groups)]), _ZERO, None
        for lost in report.lost_entries:
            top = last_id if lost.before is None else decrement(lost.before) or _ZERO
            if lost.first <= min(top, last_id):
                deleted = max(deleted, min(top, last_id))
        return StreamState(report.entries, last_id, None, deleted, added, 0)


class _GroupRebuild:
    """One group of a stream being rebuilt: its state, pending entries and consumers."""

    def __init__(self, stream: StreamRebuild, group: GroupMeta) -> None:
        self.stream = stream
        self.group = group
        self.label = f"group {shown(group.name)}"
        self.prefix = layout.pack_u64(group.handle)
        self.end = layout.pack_u64(group.handle + 1)
        self.owners: dict[bytes, list[bytes]] = {}  # consumer -> raw IDs it owns
        self.latest: dict[bytes, int] = {}  # consumer -> its latest delivery time
        self.problems: list[Problem] = []  # parts of the group PEL that could not be read

    def records(self) -> Iterator[object]:
        g, report = self.group, self.stream.report
        entries_read = g.entries_read if self.stream.meta is not None else None
        yield GroupState(g.name, g.last_id, entries_read, 0, 0)
        yield from self._pending()
        rebuilt = self._from_index() if self.problems else {}
        count = len(rebuilt)  # the importer takes the entries out of the dict it is given
        if rebuilt:
            yield PendingRun(rebuilt)
        consumers = dict(self.stream.cat.consumers.get(g.handle, {}))
        for owner in self.owners.keys() - consumers.keys():
            when = self.latest.get(owner, 0)
            consumers[owner] = ConsumerMeta(owner, when, when)
            report.lost.append(
                f"{self.label}: consumer {shown(owner)} re-created from its "
                "pending entries (its record is lost)"
            )
        for name in sorted(consumers, key=layout.member_part):
            c = consumers[name]
            yield ConsumerState(name, c.seen_time, c.active_time, 0)
            ids = self.owners.get(name)
            if ids:
                yield ConsumerPendingRun(sorted(ids))
                report.pending += len(ids)
        report.groups += 1
        report.consumers += len(consumers)
        report.lost += [f"{self.label}: {w}" for w in self.stream.cat.consumer_losses.of(g.handle)]
        self._report_lost_pending(count)

    def _own(self, owner: bytes, raw: bytes, when: int) -> None:
        self.owners.setdefault(owner, []).append(raw)
        self.latest[owner] = max(self.latest.get(owner, when), when)

    def _pending(self) -> Iterator[PendingRun]:
        source = self.stream.source
        run: dict[bytes, tuple[int, int]] = {}
        for item in source.records(layout.DB_PEL, self.prefix, self.end):
            if isinstance(item, Problem):
                self.problems.append(item)
                continue
            key, value = item
            if len(key) != 24 or len(value) < layout.NACK_HEADER_SIZE:
                self.problems.append(
                    Problem("pel", None, "the record is malformed", key, None, key)
                )
                continue
            when, count, owner = layout.unpack_nack(value)
            raw = key[8:]
            run[raw] = (when, count)
            self._own(owner, raw, when)
            if len(run) >= _PENDING_RUN:
                yield PendingRun(run)
                run = {}
        if run:
            yield PendingRun(run)

    def _from_index(self) -> dict[bytes, tuple[int, int]]:
        """Pending entries whose record is lost, rebuilt from their owner's index: every entry
        of the index that is not among the records read (some could not be)."""
        cat, gh = self.stream.cat, self.group.handle
        by_part = {layout.member_part(n): c for n, c in cat.consumers.get(gh, {}).items()}
        read = {raw for ids in self.owners.values() for raw in ids}
        rebuilt: dict[bytes, tuple[int, int]] = {}
        for item in self.stream.source.records(layout.DB_CONSUMER_PEL, self.prefix, self.end):
            if isinstance(item, Problem) or len(item[0]) < 8 + 2 + 16:
                continue  # the index is rebuilt from the group PEL: nothing of it is needed
            if item[0][8:10] == layout.RELEASED_PART:
                continue  # the released entries (XNACK): salvaged as their last owner's
            key = item[0]
            raw, part = key[-16:], key[10:-16]
            if raw in read or raw in rebuilt:
                continue  # an entry whose record was read
            consumer = by_part.get(part)
            if consumer is None and len(part) > layout.MAX_INLINE_MEMBER:
                continue  # a long name known only by its hash: the owner cannot be named
            owner = part if consumer is None else consumer.name
            when = 0 if consumer is None else consumer.seen_time
            rebuilt[raw] = (when, 1)
            self._own(owner, raw, when)
        return rebuilt

    def _report_lost_pending(self, rebuilt: int) -> None:
        gh, lost = self.group.handle, self.stream.report.lost
        for p in self.problems:
            if p.key is not None and len(p.key) == 24:
                entry = format_id(layout.id_from_key_tail(p.key)).decode()
                what = f"pending entry {entry}: its record is lost"
            else:
                low, high = _id_in(p.low, gh), _id_in(p.high, gh)
                first = "the first" if low is None else format_id(low).decode()
                end = "the last" if high is None else format_id(high).decode()
                what = f"pending entries from {first} up to {end}: their records are lost"
            lost.append(f"{self.label}: {what} ({self.stream.cat.problem(p)})")
        if rebuilt:
            lost.append(
                f"{self.label}: {rebuilt} of these pending entries rebuilt from their consumers' "
                "indexes (delivery count 1, delivered when the consumer was last seen)"
            )


def rebuild_streams(source: SalvageSource, cat: Catalog) -> Iterator[StreamRebuild]:
    """Every stream of ``source`` whose records were read, in handle order.  Consume each one's
    :meth:`StreamRebuild.records` (or call its :meth:`~StreamRebuild.drain`) before the next."""
    handles = cat.handles()
    feed = _NodeFeed(source, cat)
    taken = set(cat.names.values())
    at = 0
    while True:
        known = handles[at] if at < len(handles) else None
        found = feed.next_handle()
        if known is None and found is None:
            return
        handle = min(h for h in (known, found) if h is not None)
        if handle == known:
            at += 1
        events = feed.take(handle)
        if known != handle:  # only nodes name it: unless one is read, nothing is known of it
            head = list(_until_node(events))
            if not head or isinstance(head[-1], _Lost):
                continue
            events = _chain(head, events)
        original = cat.names.get(handle)
        name = original if original is not None else _made_up(handle, taken)
        rebuild = StreamRebuild(source, cat, handle, name, original, events)
        yield rebuild
        rebuild.drain()


def _until_node(events: Iterator[_NodeEvent]) -> Iterator[_NodeEvent]:
    for event in events:
        yield event
        if not isinstance(event, _Lost):
            return


def _chain(head: list[_NodeEvent], rest: Iterator[_NodeEvent]) -> Iterator[_NodeEvent]:
    yield from head
    yield from rest


def _made_up(handle: int, taken: set[bytes]) -> bytes:
    name, n = LOST_NAME % handle, 1
    while name in taken:
        n += 1
        name = LOST_NAME % handle + b"-%d" % n
    taken.add(name)
    return name
