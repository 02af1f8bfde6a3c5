"""XREADGROUP's two ways of serving a consumer: new entries (``>``) and its own history.

New entries: the entries after the group's last delivered ID are delivered in order; each
moves the group forward (``last_id``, ``entries_read``) and, unless NOACK, becomes a pending
entry (NACK) owned by the consumer with delivery count 1.  A NACK that already exists for
that ID (possible after XGROUP SETID moved the group back) moves to this consumer, reset.

History: the consumer's own pending entries after the given ID; each one still in the stream
is returned and its delivery count goes up; a deleted one is returned with fields ``None``.
Each comes with its delivery count as this read left it (raised, or unchanged for a deleted
entry), for callers that need it from the same transaction (``rstore.Consumer``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice

from rstore import messages
from rstore.ids import ID, MAX_ID, increment
from rstore.numbers import UINT64_MAX
from rstore.storage.records import group_records
from rstore.storage.records.layout import ConsumerMeta, GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.claim import IdleClaimed, claim_idle
from rstore.streams.groups import ensure_consumer
from rstore.streams.keyspace import StreamRef, lookup_stream
from rstore.streams.lag import counts_on, entries_read_after_delivery
from rstore.streams.limits import ReplyLimits, entry_size
from rstore.streams.lookup import EntryLookup
from rstore.streams.read import (
    STREAM_BYTES,
    CopiedRange,
    Entry,
    copy_range,
    range_pages,
    read_range,
    scan_nodes,
)

__all__ = [
    "HistoryEntry",
    "Served",
    "Target",
    "claimable",
    "copy_new",
    "find_target",
    "iter_history",
    "read_group",
    "read_history",
    "read_new",
]

# (entry ID, fields -- None when deleted from the stream --, delivery count after this read)
HistoryEntry = tuple[ID, list[bytes] | None, int]


@dataclass
class Target:
    """One key of an XREADGROUP call, looked up once: its stream and group, and what to read
    -- ``after`` is ``None`` for new entries (``>``), else the ID the history starts after."""

    key: bytes
    stream: StreamRef
    group: GroupMeta
    after: ID | None = None


def find_target(txn: Txn, key: bytes, group_name: bytes, found: dict[bytes, Target]) -> Target:
    """The stream and group of ``key`` (the same records for a key named twice in one call, so
    that what the first read changed the second sees); NOGROUP when either is missing."""
    known = found.get(key)
    if known is not None:
        return Target(key, known.stream, known.group)
    stream = lookup_stream(txn, key)
    group = None if stream is None else group_records.group_get(txn, stream.handle, group_name)
    if stream is None or group is None:
        raise messages.error(
            messages.NOGROUP_XREADGROUP,
            key=messages.sanitize(key),
            group=messages.sanitize(group_name),
        )
    found[key] = target = Target(key, stream, group)
    return target


Served = list[Entry] | list[HistoryEntry] | Iterator[HistoryEntry] | list[IdleClaimed]


def read_group(
    txn: Txn, targets: list[Target], consumer_name: bytes, count: int, *, noack: bool,
    now_ms: int, claim_ms: int | None = None, limits: ReplyLimits | None = None,
    copied: bool = False,
    lazy: bool = False,
) -> list[tuple[Target, Served | CopiedRange]]:  # fmt: skip
    """XREADGROUP over looked-up targets, in order: new entries (only the keys that had some)
    or the consumer's history (every key, even empty; with ``limits``, the keys before they
    were met).  With ``claim_ms`` (CLAIM), a ``>`` target first claims the group's entries
    idle that long, then reads new ones, all as :data:`IdleClaimed` (new ones idle 0, never
    delivered before).  With ``copied`` (and neither CLAIM nor limits), new entries come as
    a :class:`CopiedRange` (:func:`copy_new`).  With ``lazy`` (and no limits), a history
    comes as an iterator (:func:`iter_history`): use each whole, in order, inside ``txn``,
    and only when no target reads new entries (they would be delivered first)."""
    limits = limits or ReplyLimits()
    copied = copied and claim_ms is None and not limits
    out: list[tuple[Target, Served | CopiedRange]] = []
    for t in targets:
        if limits.full():
            break
        consumer = ensure_consumer(txn, t.stream, t.group, consumer_name, now_ms)
        if copied and t.after is None:
            got = copy_new(txn, t.stream, t.group, consumer, count, noack=noack, now_ms=now_ms)
            if got is not None:
                out.append((t, got))
            continue
        if t.after is not None and lazy and not limits:
            out.append((t, iter_history(txn, t.stream, t.group, consumer, t.after, count,
                                        now_ms=now_ms)))  # fmt: skip
            continue
        if t.after is not None:
            history = read_history(txn, t.stream, t.group, consumer, t.after, count,
                                   now_ms=now_ms, limits=limits)  # fmt: skip
            out.append((t, history))
            continue
        claimed: list[IdleClaimed] = []
        if claim_ms is not None:
            claimed = claim_idle(txn, t.stream, t.group, consumer, claim_ms,
                                 _wanted(count, limits), now_ms)  # fmt: skip
        left = count - len(claimed) if count else 0
        entries = [] if count and not left else read_new(
            txn, t.stream, t.group, consumer, left, noack=noack, now_ms=now_ms, limits=limits
        )  # fmt: skip
        if claim_ms is not None and (claimed or entries):
            out.append((t, claimed + [(eid, fields, 0, 0) for eid, fields in entries]))
        elif entries:
            out.append((t, entries))
    return out


def claimable(txn: Txn, group: GroupMeta, min_idle_ms: int, now_ms: int) -> bool:
    """Whether a pending entry of the group has been idle ``min_idle_ms`` (XREADGROUP CLAIM
    could take it, unless it was deleted from the stream)."""
    return any(now_ms - nack[0] >= min_idle_ms for _, nack in group_records.pel_entries(txn, group))


def _wanted(count: int, limits: ReplyLimits) -> Callable[[list[Entry]], int]:
    """How many of the candidate entries a stream's reply takes: COUNT, then the limits."""

    def wanted(candidates: list[Entry]) -> int:
        if count:
            candidates = candidates[:count]
        return limits.take([entry_size(eid, fields) for eid, fields in candidates])

    return wanted


def read_new(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer: ConsumerMeta,
    count: int,
    *,
    noack: bool,
    now_ms: int,
    limits: ReplyLimits | None = None,
) -> list[Entry]:
    """Deliver up to ``count`` (0 = all) entries after the group's last ID to ``consumer``
    (as many as ``limits`` leave room for)."""
    start = increment(group.last_id)
    if start is None or (limits and limits.full()):
        return []
    entries = read_range(txn, stream, start, MAX_ID, limits.count_for(count) if limits else count)
    if limits:
        del entries[limits.take([entry_size(eid, fields) for eid, fields in entries]) :]
    _deliver(txn, stream, group, consumer, [e[0] for e in entries], noack=noack, now_ms=now_ms)
    return entries


def copy_new(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer: ConsumerMeta,
    count: int,
    *,
    noack: bool,
    now_ms: int,
) -> CopiedRange | None:
    """:func:`read_new` without limits, its entries read from nodes copied out of the
    transaction (``None``: none): a big read (over :data:`STREAM_BYTES` of nodes) has only
    its IDs decoded here, a page at a time, and its entries read after the transaction --
    written as they are read by a network front."""
    start = increment(group.last_id)
    if start is None:
        return None
    nodes = copy_range(txn, stream, start, MAX_ID, count)
    if sum(len(node) for _, node in nodes) <= STREAM_BYTES:
        copied = CopiedRange(nodes, start, MAX_ID, count, scan_nodes(nodes, start, MAX_ID, count))
        ids = [e[0] for e in copied.decoded()]
    else:
        ids = [eid for page in range_pages(nodes, start, MAX_ID, count) for eid, _ in page]
        copied = CopiedRange(nodes, start, ids[-1] if ids else start, len(ids))
    _deliver(txn, stream, group, consumer, ids, noack=noack, now_ms=now_ms)
    return copied if ids else None


def _deliver(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer: ConsumerMeta,
    ids: list[ID],
    *,
    noack: bool,
    now_ms: int,
) -> None:
    """The entries ``ids`` (ascending, after the group's last ID) delivered to ``consumer``:
    the group moved past them, each a NACK of the consumer unless ``noack``."""
    if not ids:
        return
    meta = stream.meta
    if counts_on(meta, group.entries_read, group.last_id):
        # no deletion after the group's position, hence none after any delivered entry:
        # each delivery counts one (what entries_read_after_delivery gives entry by entry)
        group.entries_read += len(ids)
    else:
        last_id = group.last_id
        for entry_id in ids:
            group.entries_read = entries_read_after_delivery(
                meta, group.entries_read, last_id, entry_id
            )
            last_id = entry_id
    group.last_id = ids[-1]
    others: dict[bytes | None, int] = {}  # NACKs taken from other consumers (None: released)
    if not noack:
        # A NACK at or after the first delivered ID exists only if the group was moved back
        # (XGROUP SETID) or XCLAIM FORCE created one ahead; usually one look settles it.
        last_pending = group_records.last_pel_id(txn, group) if group.pel_count else None
        may_exist = last_pending is not None and last_pending >= ids[0]
        new, others = group_records.nacks_deliver(
            txn, group, ids, consumer.name, now_ms, may_exist=may_exist
        )
        group.pel_count += new
        consumer.pel_count += new + sum(others.values())
        consumer.active_time = now_ms
    _release(txn, group, others)
    group_records.consumer_put(txn, group, consumer)
    group_records.group_put(txn, stream.handle, group)


def _release(txn: Txn, group: GroupMeta, taken: dict[bytes | None, int]) -> None:
    """Lower the pending counts of consumers whose NACKs moved elsewhere."""
    for name, n in taken.items():
        if name is None:  # released entries: no consumer counted them
            continue
        other = group_records.consumer_get(txn, group, name)
        if other is not None:
            other.pel_count -= n
            group_records.consumer_put(txn, group, other)


def read_history(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer: ConsumerMeta,
    after: ID,
    count: int,
    *,
    now_ms: int,
    limits: ReplyLimits | None = None,
) -> list[HistoryEntry]:
    """The consumer's pending entries with ID > ``after`` (at most ``count``; 0 = all; as many
    as ``limits`` leave room for)."""
    if not limits:
        return list(iter_history(txn, stream, group, consumer, after, count, now_ms=now_ms))
    start = increment(after)
    if start is None:
        return []
    ids = group_records.consumer_pel_ids(txn, group, consumer.name, start)
    count = limits.count_for(count)
    wanted = list(islice(ids, count) if count else ids)
    lookup = EntryLookup(txn, stream)
    found = [(entry_id, lookup.get(entry_id)) for entry_id in wanted]
    del found[limits.take([entry_size(eid, fields) for eid, fields in found]) :]
    return [_redelivered(txn, group, consumer, eid, fields, now_ms) for eid, fields in found]


#: how many of a consumer's pending IDs a history read takes from its index at a time
HISTORY_CHUNK = 1024


def iter_history(
    txn: Txn, stream: StreamRef, group: GroupMeta, consumer: ConsumerMeta, after: ID,
    count: int, *, now_ms: int,
) -> Iterator[HistoryEntry]:  # fmt: skip
    """:func:`read_history` without limits, an entry at a time: a history of any length in
    bounded memory.  Use it whole, inside ``txn``; each entry is recorded as delivered again
    before it is yielded."""
    start = increment(after)
    if start is None:
        return
    ids = group_records.consumer_pel_ids(txn, group, consumer.name, start)
    if count:
        ids = islice(ids, count)
    lookup = EntryLookup(txn, stream)
    # a chunk of IDs is read before its NACKs are written, not one ID between two writes
    while chunk := list(islice(ids, HISTORY_CHUNK)):
        for entry_id in chunk:
            yield _redelivered(txn, group, consumer, entry_id, lookup.get(entry_id), now_ms)


def _redelivered(
    txn: Txn, group: GroupMeta, consumer: ConsumerMeta, entry_id: ID,
    fields: list[bytes] | None, now_ms: int,
) -> HistoryEntry:  # fmt: skip
    """A history entry, its delivery recorded: a live one's count goes up, its time is now."""
    nack = group_records.owned_nack(txn, group, entry_id, consumer.name)
    deliveries = nack[1]
    if fields is not None:
        deliveries = (deliveries + 1) & UINT64_MAX  # a uint64 counter in Redis
        group_records.nack_put(txn, group, entry_id, (now_ms, deliveries, nack[2]), nack[2])
    return entry_id, fields, deliveries
