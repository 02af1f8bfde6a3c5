"""Claiming pending entries: XCLAIM, XAUTOCLAIM and XREADGROUP's CLAIM option.

Both move NACKs to the claiming consumer (creating it if needed, and marking it seen), set the
delivery time and bump the delivery count (unless JUSTID).  An entry deleted from the stream
cannot be claimed: its NACK is dropped -- silently by XCLAIM, reported by XAUTOCLAIM.

Each claimed entry comes back with its delivery count as this claim set it, so a caller that
needs the count (``rstore.Consumer``) has it from the same transaction as the claim; the
commands' replies leave it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

from rstore.ids import ID
from rstore.numbers import UINT64_MAX as U64
from rstore.storage.records import group_records
from rstore.storage.records.layout import ConsumerMeta, GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.groups import ensure_consumer
from rstore.streams.keyspace import StreamRef
from rstore.streams.lookup import EntryLookup
from rstore.streams.nack import FATAL_COUNT

__all__ = ["ClaimOptions", "IdleClaimed", "autoclaim", "claim", "claim_idle"]

AUTOCLAIM_ATTEMPTS_FACTOR = 10

# (entry ID, fields -- None with JUSTID --, delivery count after this claim)
Claimed = tuple[ID, list[bytes] | None, int]


@dataclass(frozen=True)
class ClaimOptions:
    """XCLAIM's options, parsed."""

    min_idle_ms: int = 0
    delivery_time_ms: int | None = None  # from IDLE (now - ms) or TIME; None = now
    retry_count: int | None = None
    force: bool = False
    justid: bool = False
    last_id: ID | None = None


class _Counts:
    """Pending-count changes of one claim call, applied once at the end."""

    def __init__(self, group: GroupMeta, consumer: ConsumerMeta) -> None:
        self.group = group
        self.consumer = consumer
        self.others: dict[bytes, int] = {}  # entries each other consumer lost

    def take_from(self, owner: bytes | None, *, new: bool = False) -> None:
        """A NACK moves from ``owner`` (``None``: a released entry, or with ``new`` a NACK
        that did not exist) to the claiming consumer."""
        if owner == self.consumer.name:
            return
        self.consumer.pel_count += 1
        if new:
            self.group.pel_count += 1
        elif owner is not None:
            self.others[owner] = self.others.get(owner, 0) + 1

    def drop(self, owner: bytes | None) -> None:
        """A NACK of ``owner`` (``None``: released) is removed from the PEL."""
        self.group.pel_count -= 1
        if owner == self.consumer.name:
            self.consumer.pel_count -= 1
        elif owner is not None:
            self.others[owner] = self.others.get(owner, 0) + 1

    def save(self, txn: Txn, stream: StreamRef) -> None:
        for name, delta in self.others.items():
            other = group_records.consumer_get(txn, self.group, name)
            if other is not None and delta:
                other.pel_count -= delta
                group_records.consumer_put(txn, self.group, other)
        group_records.consumer_put(txn, self.group, self.consumer)
        group_records.group_put(txn, stream.handle, self.group)


def claim(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer_name: bytes,
    ids: list[ID],
    opts: ClaimOptions,
    now_ms: int,
) -> list[Claimed]:
    """XCLAIM: claim ``ids`` (in argument order, repeats included) for ``consumer_name``."""
    if opts.last_id is not None and opts.last_id > group.last_id:
        group.last_id = opts.last_id
    delivery_time = opts.delivery_time_ms
    if delivery_time is None or delivery_time < 0 or delivery_time > now_ms:
        delivery_time = now_ms
    consumer = ensure_consumer(txn, stream, group, consumer_name, now_ms)
    counts = _Counts(group, consumer)
    lookup = EntryLookup(txn, stream)
    out: list[Claimed] = []
    for entry_id in ids:
        nack = group_records.nack_get(txn, group, entry_id)
        fields = lookup.get(entry_id)
        if fields is None:
            if nack is not None:
                group_records.nack_delete(txn, group, entry_id, nack[2])
                counts.drop(nack[2])
            continue
        owner: bytes | None
        new = nack is None
        if nack is None:
            if not opts.force:
                continue
            owner, delivery_count = None, 1
        else:
            owner, delivery_count = nack[2], nack[1]
            if opts.min_idle_ms and now_ms - nack[0] < opts.min_idle_ms:
                continue
        if opts.retry_count is not None:
            delivery_count = opts.retry_count
        elif not opts.justid:
            delivery_count = (delivery_count + 1) & U64  # uint64 in Redis
        group_records.nack_put(
            txn, group, entry_id, (delivery_time, delivery_count, consumer.name), owner,
            was_released=owner is None and not new,
        )  # fmt: skip
        counts.take_from(owner, new=new)
        consumer.active_time = now_ms
        out.append((entry_id, None if opts.justid else fields, delivery_count))
    counts.save(txn, stream)
    return out


def autoclaim(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer_name: bytes,
    min_idle_ms: int,
    start: ID,
    count: int,
    *,
    justid: bool,
    now_ms: int,
) -> tuple[ID, list[Claimed], list[ID]]:
    """XAUTOCLAIM: scan the PEL from ``start`` (at most 10 x ``count`` entries) and claim idle
    entries; returns ``(next cursor, claimed, deleted IDs)``; the cursor is 0-0 at the end."""
    consumer = ensure_consumer(txn, stream, group, consumer_name, now_ms)
    counts = _Counts(group, consumer)
    attempts = count * AUTOCLAIM_ATTEMPTS_FACTOR
    window = list(islice(group_records.pel_entries(txn, group, start), attempts + 1))
    lookup = EntryLookup(txn, stream)
    claimed: list[Claimed] = []
    deleted: list[ID] = []
    examined = 0
    remaining = count
    while attempts and remaining and examined < len(window):
        attempts -= 1
        entry_id, (delivery_time, delivery_count, owner) = window[examined]
        examined += 1
        fields = lookup.get(entry_id)
        if fields is None:
            group_records.nack_delete(txn, group, entry_id, owner)
            counts.drop(owner)
            deleted.append(entry_id)
            remaining -= 1
            continue
        if min_idle_ms and now_ms - delivery_time < min_idle_ms:
            continue
        new_count = delivery_count if justid else (delivery_count + 1) & U64
        group_records.nack_put(
            txn, group, entry_id, (now_ms, new_count, consumer.name), owner,
            was_released=owner is None,
        )  # fmt: skip
        counts.take_from(owner)
        consumer.active_time = now_ms
        claimed.append((entry_id, None if justid else fields, new_count))
        remaining -= 1
    counts.save(txn, stream)
    cursor = window[examined][0] if examined < len(window) else (0, 0)
    return cursor, claimed, deleted


# (entry ID, fields, ms idle before this claim, deliveries before it) -- XREADGROUP CLAIM's
# reply gives both "before" figures; a new entry read in the same call has 0 and 0
IdleClaimed = tuple[ID, list[bytes], int, int]


def claim_idle(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    consumer: ConsumerMeta,
    min_idle_ms: int,
    wanted: Callable[[list[tuple[ID, list[bytes]]]], int],
    now_ms: int,
) -> list[IdleClaimed]:
    """XREADGROUP ... CLAIM (Redis 8.4): the group's pending entries idle for ``min_idle_ms``
    or more, of any consumer, the longest-idle first (ties in ID order), claimed for
    ``consumer`` as XCLAIM would; ``wanted(candidates)`` says how many of them the reply takes
    (COUNT, MAXCOUNT, MAXSIZE).  Entries XNACK released come first, in the order they were
    released (their delivery times are below zero), whatever ``min_idle_ms``.  Entries deleted
    from the stream are skipped and stay pending."""
    candidates = sorted(
        (nack[0], entry_id, nack)
        for entry_id, nack in group_records.pel_entries(txn, group)
        if now_ms - nack[0] >= min_idle_ms
    )
    lookup = EntryLookup(txn, stream)
    found = []
    for _, entry_id, nack in candidates:
        fields = lookup.get(entry_id)
        if fields is not None:
            found.append((entry_id, fields, nack))
    found = found[: wanted([(entry_id, fields) for entry_id, fields, _ in found])]
    counts = _Counts(group, consumer)
    out: list[IdleClaimed] = []
    for entry_id, fields, (delivery_time, delivery_count, owner) in found:
        # Redis 8.4+ stops the count at LLONG_MAX (where XNACK FATAL puts it)
        deliveries = delivery_count if delivery_count >= FATAL_COUNT else delivery_count + 1
        group_records.nack_put(
            txn, group, entry_id, (now_ms, deliveries, consumer.name), owner,
            was_released=owner is None,
        )  # fmt: skip
        counts.take_from(owner)
        idle = now_ms if owner is None else max(now_ms - delivery_time, 0)  # released: time 0
        out.append((entry_id, fields, idle, delivery_count))
    if out:
        consumer.active_time = now_ms
    counts.save(txn, stream)
    return out
